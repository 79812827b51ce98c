import type { FastifyInstance, FastifyRequest } from 'fastify';
import { approvalCheckOptions, finishApprovalCheck, hasPasskey } from '../../auth/passkeys.js';
import { approvalView, APPROVER_ROLES, personCaller, type ApprovalView } from '../../core/approvals.js';
import type { Core } from '../../core/gate.js';
import { approvalOperations } from '../../core/operations/approvals.js';
import { BerthError, validationError } from '../../errors.js';
import { shortArgsHash } from '../../store/approval-args-hash.js';
import { ASSET_PATHS } from '../assets.js';
import { field, formOf, personOr401, personOrRedirect, relyingParty, type ConsoleDeps } from '../context.js';
import { html } from '../html.js';
import { sendPage } from '../layout.js';
import { CSRF_FIELD, CSRF_HEADER, type Person } from '../session.js';

const byName = new Map(approvalOperations.map((o) => [o.name, o]));
const when = (iso: string | null) => (iso ? `${iso.slice(0, 19).replace('T', ' ')} UTC` : '');

/** The arguments hash an approve posts (the one its page showed); 422 when it is not one. */
const postedHash = (value: string) => {
  if (!/^[0-9a-f]{64}$/.test(value)) throw validationError({ args_hash: ['Approve from the approval\u2019s page: the form carries the hash of the arguments it shows.'] });
  return value;
};

/**
 * The approvals queue: calls by agents that wait for a person, in every team the person belongs
 * to. Owners and admins approve or deny; the decision runs the approvals operation through the
 * core as this person (never as a token), so the one claim in the store decides it once. An
 * approve carries the arguments hash the page showed (refused when the held call's differs) and,
 * when the person has a passkey, a check with it made for this approval and hash (issue 39): a
 * session alone (a stolen cookie, a page an agent drives) does not approve for them.
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
    const passkey = mayDecide && (await hasPasskey(db, person.userId));
    return sendPage(
      reply,
      { title: `Approval: ${view.operation}`, person, csrf: person.csrf, current: 'approvals', ...(passkey ? { scripts: [ASSET_PATHS.webauthn, ASSET_PATHS.js] } : {}) },
      detail(view, teamName, person, mayDecide, role, passkey),
    );
  });

  // The passkey check's options, for the page's script: bound to this approval and the hash it shows.
  app.post('/approvals/:uuid/approve/options', async (req, reply) => {
    const person = await personOr401(deps, req);
    await sessions.checkCsrf(req, req.headers[CSRF_HEADER]);
    const uuid = uuidOf(req);
    await mine(person, uuid);
    const argsHash = postedHash(String((req.body as { args_hash?: unknown } | null)?.args_hash ?? ''));
    const { options, pending } = await approvalCheckOptions(db, relyingParty(deps, req), person.userId, { uuid, argsHash });
    sessions.setCookie(req, reply, 'webauthn', pending.handle, 300);
    return reply.send(options);
  });

  app.post('/approvals/:uuid/approve', async (req, reply) => {
    const person = await personOrRedirect(deps, req, reply);
    if (!person) return reply;
    const form = formOf(req);
    await sessions.checkCsrf(req, field(form, CSRF_FIELD));
    const uuid = uuidOf(req);
    const { teamId } = await mine(person, uuid);
    const argsHash = postedHash(field(form, 'args_hash'));
    if (await hasPasskey(db, person.userId)) {
      const handle = sessions.readCookie(req, 'webauthn');
      sessions.clearCookie(req, reply, 'webauthn');
      let response: unknown;
      try {
        response = JSON.parse(field(form, 'webauthn'));
      } catch {
        response = null;
      }
      if (!(await finishApprovalCheck(db, relyingParty(deps, req), person.userId, handle, response as never, { uuid, argsHash }))) {
        throw new BerthError('approval_not_allowed', {
          message:
            'You have a passkey, so approving takes a check with it, made on this approval\u2019s page for this approval; this one did not verify. Nothing ran: open the approval and approve again.',
        });
      }
    }
    const caller = await personCaller(db, teamId, person.userId, 'console', req.ip);
    await core.run(byName.get('approve_approval')!, caller, { uuid, args_hash: argsHash });
    return reply.redirect(`/approvals/${uuid}`, 303);
  });

  app.post('/approvals/:uuid/deny', async (req, reply) => {
    const person = await personOrRedirect(deps, req, reply);
    if (!person) return reply;
    await sessions.checkCsrf(req, field(formOf(req), CSRF_FIELD));
    const uuid = uuidOf(req);
    const { teamId } = await mine(person, uuid);
    const caller = await personCaller(db, teamId, person.userId, 'console', req.ip);
    await core.run(byName.get('deny_approval')!, caller, { uuid });
    return reply.redirect(`/approvals/${uuid}`, 303);
  });
}

function detail(v: ApprovalView, teamName: string, person: Person, mayDecide: boolean, role: string, passkey: boolean) {
  return html`<dl class="facts">
<dt>Status</dt><dd id="approval-status">${v.status}</dd>
<dt>Operation</dt><dd><code>${v.operation}</code> <span class="hint">(held by rule ${v.rule})</span></dd>
<dt>Target</dt><dd>${v.target ?? '(none)'}</dd>
<dt>Team</dt><dd>${teamName}</dd>
<dt>Asked by</dt><dd>user ${String(v.requested_by.user_id)}, token ${String(v.requested_by.token_id)}${v.requested_by.oauth_client_id ? `, OAuth client ${v.requested_by.oauth_client_id}` : ''}</dd>
<dt>Asked</dt><dd>${when(v.created_at)}</dd>
<dt>Expires</dt><dd>${when(v.expires_at)}</dd>
<dt>Arguments hash</dt><dd><code id="approval-args-hash" title="SHA-256 of the exact arguments it runs with: ${v.args_hash ?? 'none'}">${v.args_hash ? shortArgsHash(v.args_hash) : '(none: it cannot run)'}</code></dd>
${v.decided_at ? html`<dt>Decided</dt><dd>${when(v.decided_at)} via ${v.decided_via ?? ''} by user ${String(v.decided_by_user_id ?? '')}</dd>` : ''}
</dl>
<h2>Arguments</h2>
<pre id="approval-arguments">${JSON.stringify(v.arguments, null, 2)}</pre>
${v.error ? html`<p class="alert" role="alert">It did not run to the end: ${v.error.message}</p>` : ''}
${v.status === 'succeeded' ? html`<h2>Result</h2><pre>${JSON.stringify(v.result, null, 2)}</pre>` : ''}
${
  mayDecide
    ? html`<div class="actions">
<form method="post" action="/approvals/${v.uuid}/approve" id="approval-approve"${passkey ? html` data-passkey="/approvals/${v.uuid}/approve/options"` : ''}><input type="hidden" name="${CSRF_FIELD}" value="${person.csrf}"><input type="hidden" name="args_hash" value="${v.args_hash ?? ''}">${passkey ? html`<input type="hidden" name="webauthn" value="">` : ''}<button type="submit">Approve and run</button></form>
<form method="post" action="/approvals/${v.uuid}/deny"><input type="hidden" name="${CSRF_FIELD}" value="${person.csrf}"><button type="submit" class="danger">Deny</button></form>
</div>
${passkey ? html`<p class="hint">Approving asks for your passkey.</p><p id="approval-passkey-status" role="status" aria-live="polite"></p>` : ''}`
    : v.status === 'pending'
      ? html`<p class="hint">As ${role} you cannot decide it; a team owner or admin can.</p>`
      : ''
}
<p><a href="/approvals">All approvals</a></p>`;
}
