import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { BerthError } from '../../errors.js';
import { personOr401, personOrRedirect, type ConsoleDeps } from '../context.js';
import { html, type Html } from '../html.js';
import { securityHeaders, sendPage } from '../layout.js';
import { LIVE_SCRIPT, LIVE_SCRIPT_PATH } from '../live/script.js';
import { LIVE_TIMING, liveStreams } from '../live/stream.js';
import { truncateLog } from '../../core/operations/deployments.js';
import { deploymentView, LOG_CHARS, migrationLiveView, resourcesView, resourceView, teamIdsOf, type LiveView } from '../live/views.js';
import type { Person } from '../session.js';

const text = (v: LiveView, key: string): Html => html`<span data-live="${key}">${v.text[key] ?? ''}</span>`;

/** A table whose body the stream rebuilds; cells as text, the first a link when the row has one. */
function table(v: LiveView, key: string, caption: string, headers: string[], empty: string): Html {
  const rows = v.tables[key] ?? [];
  return html`<div class="table-wrap"><table>
<caption class="sr">${caption}</caption>
<thead><tr>${headers.map((h) => html`<th scope="col">${h}</th>`)}</tr></thead>
<tbody data-live-rows="${key}" data-cols="${headers.length}" data-empty="${empty}"${headers.map((h, i) => html` data-label-${i}="${h}"`)}>${
    rows.length === 0
      ? html`<tr><td colspan="${headers.length}">${empty}</td></tr>`
      : rows.map((r) => html`<tr data-id="${r.id}">${r.cells.map((c, i) => html`<td data-label="${headers[i] ?? ''}">${i === 0 && r.href ? html`<a href="${r.href}">${c}</a>` : c}</td>`)}</tr>`)
  }</tbody></table></div>`;
}

/** The resource a deployment or migration belongs to (it does not change while the page is open). */
const resourceLink = (v: LiveView): Html => {
  const r = v.tables.resource?.[0];
  return r ? html`<p>Resource: <a href="${r.href ?? ''}">${r.cells[0] ?? ''}</a></p>` : html``;
};

const facts = (v: LiveView, items: [string, string][]): Html => html`<dl class="facts">${items.map(([label, key]) => html`<div><dt>${label}</dt><dd>${text(v, key)}</dd></div>`)}</dl>`;

/** The stream's address and where the page says whether it is live. */
const liveBox = (src: string): Html => html`<div data-live-src="${src}"><p class="hint" role="status" data-live-connection>Updates need JavaScript; reload to refresh.</p></div>`;

const uuidOf = (req: FastifyRequest): string => {
  const uuid = (req.params as { uuid: string }).uuid;
  // Malformed is answered like missing.
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(uuid)) throw new BerthError('not_found');
  return uuid;
};

type Reader = (deps: ConsoleDeps, teamIds: number[], uuid: string) => Promise<LiveView | null>;

/**
 * Live views of what runs: resources with the status the engine reports, a deployment with its
 * log, a migration with its phase, bytes and downtime. Each page has an event stream beside it
 * (`…/events`); both read the same view, limited to the person's teams, and another team's uuid
 * gets the same 404 as one that does not exist.
 */
export function livePages(app: FastifyInstance, deps: ConsoleDeps): void {
  const streams = liveStreams(deps, () => LIVE_TIMING);
  // Open streams would hold the server's close: end them first.
  app.addHook('preClose', async () => streams.closeAll());

  app.get(LIVE_SCRIPT_PATH, async (_req, reply) => securityHeaders(reply).header('cache-control', 'public, max-age=3600').type('text/javascript; charset=utf-8').send(LIVE_SCRIPT));

  /** The page at `path` and its stream at `path/events`. */
  function live(path: string, read: Reader, render: (v: LiveView, src: string, person: Person) => Html, current?: 'resources') {
    app.get(path, async (req, reply) => {
      const person = await personOrRedirect(deps, req, reply);
      if (!person) return reply;
      const v = await read(deps, await teamIdsOf(deps.db, person.userId), path.includes(':uuid') ? uuidOf(req) : '');
      if (!v) throw new BerthError('not_found');
      const src = `${req.url.split('?')[0]}/events`;
      return sendPage(reply, { title: v.title, person, csrf: person.csrf, scripts: [LIVE_SCRIPT_PATH], ...(current ? { current } : {}) }, render(v, src, person));
    });
    app.get(`${path}/events`, async (req: FastifyRequest, reply: FastifyReply) => {
      const person = await personOr401(deps, req);
      const uuid = path.includes(':uuid') ? uuidOf(req) : '';
      const first = await read(deps, await teamIdsOf(deps.db, person.userId), uuid);
      if (!first) throw new BerthError('not_found');
      // Membership is read again on every poll: someone removed from the team stops seeing it.
      streams.open(req, reply, person, first, async () => read(deps, await teamIdsOf(deps.db, person.userId), uuid));
      return reply;
    });
  }

  live(
    '/resources',
    (d, teams) => resourcesView(d.db, teams),
    (v, src) => html`${liveBox(src)}
<p>Applications, databases and services of your teams (<span data-live="count">${v.text.count ?? '0'}</span>), with the status their server's engine reports.</p>
${table(v, 'resources', 'Resources', ['Name', 'Type', 'Team', 'Project / environment', 'Server', 'Status', 'Observed'], 'No resources yet.')}`,
    'resources',
  );

  live(
    '/resources/:uuid',
    (d, teams, uuid) => resourceView(d.db, teams, uuid),
    (v, src) => html`${liveBox(src)}
${facts(v, [
  ['Status', 'status'],
  ['Type', 'kind'],
  ['Observed', 'observed_at'],
  ['Restarts', 'restart_count'],
  ['Last exit code', 'last_exit_code'],
])}
<h2>Containers</h2>
${table(v, 'containers', 'Containers', ['Container', 'State', 'Health', 'Restarts', 'Exit code'], 'Not observed on an engine yet.')}
<h2>Deployments</h2>
${table(v, 'deployments', 'Recent deployments', ['Deployment', 'Kind', 'Status', 'Queued', 'Finished'], 'No deployments yet.')}
<h2>Migrations</h2>
${table(v, 'migrations', 'Recent migrations', ['Migration', 'Status', 'Phase', 'Started', 'Finished'], 'No migrations.')}
<p><a href="/resources">All resources</a></p>`,
  );

  live(
    '/deployments/:uuid',
    (d, teams, uuid) => deploymentView(d.db, teams, uuid),
    (v, src) => html`${liveBox(src)}
${resourceLink(v)}
${facts(v, [
  ['Status', 'status'],
  ['Kind', 'kind'],
  ['Server', 'server'],
  ['Queued', 'created_at'],
  ['Started', 'started_at'],
  ['Finished', 'finished_at'],
])}
<h2 id="log-title">Log</h2>
<pre class="log" tabindex="0" aria-labelledby="log-title" data-live-log>${truncateLog(v.log ?? '', false, LOG_CHARS).text}</pre>`,
  );

  live(
    '/migrations/:uuid',
    (d, teams, uuid) => migrationLiveView(d.db, teams, uuid),
    (v, src) => html`${liveBox(src)}
${resourceLink(v)}
${facts(v, [
  ['Status', 'status'],
  ['Phase', 'phase'],
  ['Round', 'round'],
  ['Volumes verified', 'volumes'],
  ['Bytes copied', 'bytes'],
  ['Size at last snapshot', 'bytes_total'],
  ['Downtime', 'downtime'],
  ['Moves volume data', 'moves_data'],
  ['Started', 'created_at'],
  ['Finished', 'finished_at'],
])}
<p class="error" data-live="error">${v.text.error ?? ''}</p>`,
  );
}
