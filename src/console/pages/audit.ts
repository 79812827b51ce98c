import type { FastifyInstance } from 'fastify';
import { listAudit } from '../../core/audit/query.js';
import { auditOperations } from '../../core/operations/audit.js';
import { issuesToErrors } from '../../core/validation.js';
import { validationError } from '../../errors.js';
import { personOrRedirect, type ConsoleDeps } from '../context.js';
import { html } from '../html.js';
import { sendPage } from '../layout.js';
import { membershipsOf } from './tokens.js';

/** The filters are list_audit_entries' own input, checked by its declaration. */
const filterSchema = auditOperations[0]!.input;
const when = (iso: string) => iso.slice(0, 19).replace('T', ' ') + ' UTC';

/**
 * The audit log of a team the person belongs to (any role: reading it is the read permission),
 * as GET /api/v1/audit shows it to that team's tokens. A team they are not in is the same as
 * none: they get their own first team.
 */
export function auditPages(app: FastifyInstance, deps: ConsoleDeps): void {
  app.get('/audit', async (req, reply) => {
    const person = await personOrRedirect(deps, req, reply);
    if (!person) return reply;
    const q = { ...(req.query as Record<string, string>) };
    const teams = await membershipsOf(deps.db, person.userId);
    const team = teams.find((t) => String(t.teamId) === q.team) ?? teams[0];
    const page = (body: ReturnType<typeof html>) => sendPage(reply, { title: 'Audit log', person, csrf: person.csrf, current: 'audit' }, body);
    if (!team) return page(html`<p>You are not a member of any team.</p>`);
    const raw = Object.fromEntries(Object.entries({ operation: q.operation, result: q.result, resource: q.resource, page: q.page }).filter(([, v]) => v));
    const parsed = filterSchema.safeParse({ ...raw, per_page: 50 });
    if (!parsed.success) throw validationError(issuesToErrors(parsed.error.issues));
    const { page: p, per_page, ...filter } = parsed.data;
    const r = await listAudit(deps.db, team.teamId, filter, { page: p, per_page });
    const next = r.page * r.per_page < r.total ? new URLSearchParams({ ...raw, team: String(team.teamId), page: String(r.page + 1) }).toString() : null;
    return page(html`<form class="stack" method="get" action="/audit" role="search">
  <div><label for="audit-team">Team</label>
  <select id="audit-team" name="team">${teams.map((t) => html`<option value="${t.teamId}"${t.teamId === team.teamId ? html` selected` : ''}>${t.teamName}</option>`)}</select></div>
  <div><label for="audit-operation">Operation</label><input type="text" id="audit-operation" name="operation" value="${q.operation ?? ''}" placeholder="e.g. delete_application"></div>
  <div><label for="audit-result">Result</label><input type="text" id="audit-result" name="result" value="${q.result ?? ''}" placeholder="ok, error, forbidden…"></div>
  <div><label for="audit-resource">Resource uuid</label><input type="text" id="audit-resource" name="resource" value="${q.resource ?? ''}"></div>
  <button type="submit">Show</button>
</form>
<p>${r.total} ${r.total === 1 ? 'entry' : 'entries'} for ${team.teamName}, newest first. Secrets in arguments are shown as [redacted].</p>
${
  r.items.length
    ? html`<table>
<thead><tr><th scope="col">When</th><th scope="col">Who</th><th scope="col">Door</th><th scope="col">Operation</th><th scope="col">Targets</th><th scope="col">Arguments</th><th scope="col">Result</th><th scope="col">Duration</th></tr></thead>
<tbody>${r.items.map(
        (e) => html`<tr>
<td data-label="When">${when(e.at)}</td>
<td data-label="Who">${e.user_email ?? `user ${e.user_id}`}${e.oauth_client_id ? ` (OAuth client ${e.oauth_client_id})` : ` (token #${e.token_id})`} from ${e.source_ip ?? '?'}</td>
<td data-label="Door">${e.door}</td>
<td data-label="Operation">${e.operation}</td>
<td data-label="Targets">${e.targets.join(', ')}${e.started_uuid ? ` → started ${e.started_uuid}` : ''}</td>
<td data-label="Arguments"><code>${e.arguments === null ? '(not read)' : JSON.stringify(e.arguments)}</code></td>
<td data-label="Result">${e.result} (${e.status})</td>
<td data-label="Duration">${e.duration_ms} ms</td>
</tr>`,
      )}</tbody></table>`
    : html`<p>No entries.</p>`
}
${next ? html`<p><a href="/audit?${next}">Older entries</a></p>` : ''}`);
  });
}
