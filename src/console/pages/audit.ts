import type { FastifyInstance } from 'fastify';
import { listAudit, type AuditEntryView } from '../../core/audit/query.js';
import { CUT_MARKER } from '../../core/audit/arguments.js';
import { auditOperations } from '../../core/operations/audit.js';
import { issuesToErrors } from '../../core/validation.js';
import { validationError } from '../../errors.js';
import type { Db } from '../../store/db.js';
import type { AuditDoor } from '../../store/schema-audit.js';
import { personOrRedirect, type ConsoleDeps } from '../context.js';
import { html, type Html } from '../html.js';
import { sendPage } from '../layout.js';
import { membershipsOf } from './tokens.js';

/** The filters are list_audit_entries' own input, checked by its declaration. */
const filterSchema = auditOperations[0]!.input;
/** Date and time on two lines: the column stays narrow. */
const when = (iso: string) => html`${iso.slice(0, 10)}<br>${iso.slice(11, 19)} UTC`;

const DOORS: Record<AuditDoor, string> = {
  rest: 'REST API',
  'mcp-http': 'MCP over HTTP',
  'mcp-stdio': 'MCP over stdio',
  console: 'console',
  cli: 'admin CLI',
  job: 'scheduled run',
};

/** The names of the tokens (and OAuth approvals, named after their app) an page's entries name: this team's only. */
async function tokenNames(db: Db, teamId: number, entries: AuditEntryView[]): Promise<Map<number, string>> {
  const ids = [...new Set(entries.map((e) => e.token_id).filter((id): id is number => id !== null))];
  if (!ids.length) return new Map();
  const rows = await db.selectFrom('api_tokens').select(['id', 'name']).where('team_id', '=', teamId).where('id', 'in', ids).execute();
  return new Map(rows.map((r) => [r.id, r.name]));
}

/**
 * Who made the call, through which door, with what, from where. A person in the console or at
 * the CLI holds no token, so none is named; the CLI runs on the host itself; a scheduled run is
 * attributed to whoever set the schedule (docs/decisions/audit-and-approvals.md, "Audit log: the job door").
 */
function who(e: AuditEntryView, names: Map<number, string>): Html {
  const person = e.user_email ?? (e.user_id !== null ? `user #${e.user_id}` : e.door === 'cli' ? 'the operator' : 'nobody known');
  const name = e.token_id !== null ? names.get(e.token_id) : undefined;
  const credential = e.oauth_client_id
    ? html` · OAuth app ${name ? html`“${name}” ` : ''}<span class="ident">(client ${e.oauth_client_id})</span>`
    : e.token_id !== null
      ? html` · token ${name ? html`“${name}” ` : ''}#${e.token_id}`
      : '';
  const from = e.source_ip ?? (e.door === 'cli' ? 'this host' : e.door === 'job' ? 'berth itself' : 'an unknown address');
  return html`<span class="who-person">${person}</span><br>
<span class="who-how">${DOORS[e.door] ?? e.door}${credential} · from ${from}</span>`;
}

/** Targets and arguments, folded: an entry's arguments may be up to 16 KB (a cut one says so). */
function details(e: AuditEntryView): Html {
  const cut = e.arguments?.[CUT_MARKER] as { original_bytes?: number } | undefined;
  const n = e.arguments === null ? 0 : Object.keys(e.arguments).length;
  const label = e.arguments === null ? 'not read (refused first)' : cut ? `cut from ${cut.original_bytes?.toLocaleString('en')} bytes sent` : `${n} ${n === 1 ? 'field' : 'fields'}`;
  const targets = e.targets.length ? `, ${e.targets.length} ${e.targets.length === 1 ? 'target' : 'targets'}` : '';
  return html`<details><summary>Arguments: ${label}${targets}</summary>
${e.targets.length ? html`<p class="targets">Targets: ${e.targets.join(', ')}</p>` : ''}${e.started_uuid ? html`<p class="targets">Started ${e.started_uuid}</p>` : ''}
<pre class="args">${e.arguments === null ? '(not read)' : JSON.stringify(e.arguments, null, 2)}</pre></details>`;
}

/**
 * The audit log of a team the person belongs to (any role: reading it is the read permission),
 * as GET /api/v1/audit shows it to that team's tokens. A team they are not in is the same as
 * none: they get their own first team. Every cell wraps and the arguments fold, so the page fits
 * a narrow window whatever the entries hold.
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
    const names = await tokenNames(deps.db, team.teamId, r.items);
    const next = r.page * r.per_page < r.total ? new URLSearchParams({ ...raw, team: String(team.teamId), page: String(r.page + 1) }).toString() : null;
    return page(html`<form class="stack" method="get" action="/audit" role="search">
  <div><label for="audit-team">Team</label>
  <select id="audit-team" name="team">${teams.map((t) => html`<option value="${t.teamId}"${t.teamId === team.teamId ? html` selected` : ''}>${t.teamName}</option>`)}</select></div>
  <div><label for="audit-operation">Operation</label><input type="text" id="audit-operation" name="operation" value="${q.operation ?? ''}" placeholder="e.g. delete_application"></div>
  <div><label for="audit-result">Result</label><input type="text" id="audit-result" name="result" value="${q.result ?? ''}" placeholder="ok, error, forbidden…"></div>
  <div><label for="audit-resource">Resource uuid</label><input type="text" id="audit-resource" name="resource" value="${q.resource ?? ''}"></div>
  <button type="submit">Show</button>
</form>
<p>${r.total} ${r.total === 1 ? 'entry' : 'entries'} for ${team.teamName}, newest first. Secrets in arguments are shown as [redacted]; long arguments are cut when stored.</p>
${
  r.items.length
    ? html`<table class="audit">
<thead><tr><th scope="col">When</th><th scope="col">Who</th><th scope="col">Operation</th><th scope="col">Result</th></tr></thead>
${r.items.map(
  // One tbody per entry: its facts, then its targets and arguments folded across the whole width.
  (e) => html`<tbody data-uuid="${e.uuid}"><tr>
<td data-label="When">${when(e.at)}</td>
<td data-label="Who">${who(e, names)}</td>
<td data-label="Operation">${e.operation}</td>
<td data-label="Result">${e.result} (${e.status})<br><span class="who-how">${e.duration_ms} ms</span></td>
</tr><tr class="more"><td colspan="4" data-label="Details">${details(e)}</td></tr></tbody>`,
)}</table>`
    : html`<p>No entries.</p>`
}
${next ? html`<p><a href="/audit?${next}">Older entries</a></p>` : ''}`);
  });
}
