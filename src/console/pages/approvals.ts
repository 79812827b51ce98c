import type { FastifyInstance, FastifyRequest } from 'fastify';
import { approvalView, APPROVER_ROLES, personCaller, type ApprovalView } from '../../core/approvals.js';
import type { Core } from '../../core/gate.js';
import { approvalOperations } from '../../core/operations/approvals.js';
import { BerthError } from '../../errors.js';
import { field, formOf, personOrRedirect, type ConsoleDeps } from '../context.js';
import { html } from '../html.js';
import { sendPage } from '../layout.js';
import { CSRF_FIELD, type Person } from '../session.js';

const byName = new Map(approvalOperations.map((o) => [o.name, o]));
const when = (iso: string | null) => (iso ? `${iso.slice(0, 19).replace('T', ' ')} UTC` : '');

/**
 * The approvals queue: calls by agents that wait for a person, in every team the person belongs
 * to. Owners and admins approve or deny; the decision runs the approvals operation through the
 * core as this person (never as a token), so the one claim in the store decides it once.
 */
export function approvalPages(app: FastifyInstance, deps: ConsoleDeps & { core: Core }): void {
  const { db, sessions, core } = deps;

  /** The approval of that uuid in one of the person's teams, with their role there; else 404. */
  async function mine(person: Person, uuid: string) {
    const row = await db
      .selectFrom('approvals as a')
      .innerJoin('team_members as m', (j) => j.onRef('m.team_id', '=', 'a.team_id').on('m.user_id', '=', person.userId))
      .innerJoin('teams as t', 't.id', 'a.team_id')
      .selectAll('a')
      .select(['m.role', 't.name as team_name'])
      .where('a.uuid', '=', uuid)
      .executeTakeFirst();
    if (!row) throw new BerthError('not_found');
    return { view: approvalView(core.deps.config, row), role: row.role, teamId: row.team_id, teamName: row.team_name };
  }

  const uuidOf = (req: FastifyRequest) => {
    const uuid = (req.params as { uuid: string }).uuid;
    if (!/^[a-z0-9]{1,64}$/.test(uuid)) throw new BerthError('not_found');
    return uuid;
  };

  app.get('/approvals', async (req, reply) => {
    const person = await personOrRedirect(deps, req, reply);
    if (!person) return reply;
    const rows = await db
      .selectFrom('approvals as a')
      .innerJoin('team_members as m', (j) => j.onRef('m.team_id', '=', 'a.team_id').on('m.user_id', '=', person.userId))
      .innerJoin('teams as t', 't.id', 'a.team_id')
      .selectAll('a')
      .select('t.name as team_name')
      .orderBy('a.id', 'desc')
      .limit(100)
      .execute();
    const views = rows.map((r) => ({ ...approvalView(core.deps.config, r), team: r.team_name }));
    const pending = views.filter((v) => v.status === 'pending');
    const rest = views.filter((v) => v.status !== 'pending');
    const table = (list: typeof views, caption: string) =>
      html`<div class="table-wrap"><table><caption>${caption}</caption>
<thead><tr><th scope="col">Operation</th><th scope="col">Target</th><th scope="col">Team</th><th scope="col">Status</th><th scope="col">Asked</th></tr></thead>
<tbody>${list.map(
        (v) => html`<tr><td data-label="Operation"><a href="/approvals/${v.uuid}">${v.operation}</a></td><td data-label="Target">${v.target ?? ''}</td>
<td data-label="Team">${v.team}</td><td data-label="Status">${v.status}</td><td data-label="Asked">${when(v.created_at)}</td></tr>`,
      )}</tbody></table></div>`;
    return sendPage(
      reply,
      { title: 'Approvals', person, csrf: person.csrf, current: 'approvals' },
      html`<p>Calls by agents that the team's approval policy holds for a person. An approved call runs once, as the token that asked.</p>
${pending.length ? table(pending, 'Waiting') : html`<p class="notice" role="status">Nothing waits for approval.</p>`}
${rest.length ? table(rest, 'Decided') : ''}`,
    );
  });

  app.get('/approvals/:uuid', async (req, reply) => {
    const person = await personOrRedirect(deps, req, reply);
    if (!person) return reply;
    const { view, role, teamName } = await mine(person, uuidOf(req));
    const mayDecide = view.status === 'pending' && APPROVER_ROLES.has(role);
    return sendPage(reply, { title: `Approval: ${view.operation}`, person, csrf: person.csrf, current: 'approvals' }, detail(view, teamName, person, mayDecide, role));
  });

  for (const what of ['approve', 'deny'] as const) {
    app.post(`/approvals/:uuid/${what}`, async (req, reply) => {
      const person = await personOrRedirect(deps, req, reply);
      if (!person) return reply;
      await sessions.checkCsrf(req, field(formOf(req), CSRF_FIELD));
      const uuid = uuidOf(req);
      const { teamId } = await mine(person, uuid);
      const caller = await personCaller(db, teamId, person.userId, 'console', req.ip);
      await core.run(byName.get(`${what}_approval`)!, caller, { uuid });
      return reply.redirect(`/approvals/${uuid}`, 303);
    });
  }
}

function detail(v: ApprovalView, teamName: string, person: Person, mayDecide: boolean, role: string) {
  return html`<dl class="facts">
<dt>Status</dt><dd id="approval-status">${v.status}</dd>
<dt>Operation</dt><dd><code>${v.operation}</code> <span class="hint">(held by rule ${v.rule})</span></dd>
<dt>Target</dt><dd>${v.target ?? '(none)'}</dd>
<dt>Team</dt><dd>${teamName}</dd>
<dt>Asked by</dt><dd>user ${String(v.requested_by.user_id)}, token ${String(v.requested_by.token_id)}${v.requested_by.oauth_client_id ? `, OAuth client ${v.requested_by.oauth_client_id}` : ''}</dd>
<dt>Asked</dt><dd>${when(v.created_at)}</dd>
<dt>Expires</dt><dd>${when(v.expires_at)}</dd>
${v.decided_at ? html`<dt>Decided</dt><dd>${when(v.decided_at)} via ${v.decided_via ?? ''} by user ${String(v.decided_by_user_id ?? '')}</dd>` : ''}
</dl>
<h2>Arguments</h2>
<pre id="approval-arguments">${JSON.stringify(v.arguments, null, 2)}</pre>
${v.error ? html`<p class="alert" role="alert">It did not run to the end: ${v.error.message}</p>` : ''}
${v.status === 'succeeded' ? html`<h2>Result</h2><pre>${JSON.stringify(v.result, null, 2)}</pre>` : ''}
${
  mayDecide
    ? html`<div class="actions">
<form method="post" action="/approvals/${v.uuid}/approve"><input type="hidden" name="${CSRF_FIELD}" value="${person.csrf}"><button type="submit">Approve and run</button></form>
<form method="post" action="/approvals/${v.uuid}/deny"><input type="hidden" name="${CSRF_FIELD}" value="${person.csrf}"><button type="submit" class="danger">Deny</button></form>
</div>`
    : v.status === 'pending'
      ? html`<p class="hint">As ${role} you cannot decide it; a team owner or admin can.</p>`
      : ''
}
<p><a href="/approvals">All approvals</a></p>`;
}
