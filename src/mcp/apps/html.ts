import { BRIDGE_SCRIPT, VIEW_STYLES } from './bridge-script.js';
import type { ViewName } from './views.js';

/**
 * Each view's own script: which object a tool result names, and how it is drawn (with the
 * bridge's el(), never markup from data). Plain browser script, inlined.
 */
const RENDER: Record<ViewName, string> = {
  board: String.raw`
berth.start(function () {
  return { args: { view: 'board' }, render: function (d) {
    var el = berth.el, rows = (d.items || []).map(function (r) {
      var last = r.last_deployment;
      return el('tr', { 'data-uuid': r.uuid }, [
        el('td', null, [el('strong', null, [r.name]), el('div', { class: 'muted' }, [r.kind])]),
        el('td', null, [berth.badge(r.status || 'unknown')]),
        el('td', null, [String(r.restart_count == null ? 0 : r.restart_count)]),
        el('td', null, [last ? el('span', null, [berth.badge(last.status), ' ', last.kind, el('div', { class: 'muted wide' }, [berth.when(last.created_at)])]) : el('span', { class: 'muted' }, ['none'])])
      ]);
    });
    berth.show(el('section', null, [
      el('h1', null, ['Resources']),
      rows.length ? el('table', null, [el('thead', null, [el('tr', null, [el('th', null, ['Name']), el('th', null, ['Status']), el('th', null, ['Restarts']), el('th', null, ['Last deployment'])])]), el('tbody', null, rows)])
        : el('p', { class: 'muted' }, ['No applications, databases or services yet.']),
      d.truncated ? el('p', { class: 'muted' }, ['Only the first 100 are shown.']) : null
    ]));
  } };
});`,
  deployment: String.raw`
berth.start(function (s) {
  var uuid = s.deployment_uuid || (s.deployments && s.deployments[0] && s.deployments[0].deployment_uuid) || s.uuid;
  if (!uuid) return null;
  return { args: { view: 'deployment', uuid: uuid }, render: function (d) {
    var el = berth.el, log = el('pre', { 'data-log': '' }, [typeof d.logs === 'string' ? (d.logs || '(no output yet)') : 'The log needs a token with read:sensitive.']);
    berth.show(el('section', null, [
      el('h1', null, ['Deployment of ', d.resource_name || '']),
      el('dl', null, [
        el('dt', null, ['Status']), el('dd', null, [berth.badge(d.status)]),
        el('dt', null, ['Kind']), el('dd', null, [d.kind]),
        el('dt', null, ['Server']), el('dd', null, [d.server_name]),
        el('dt', null, ['Started']), el('dd', null, [berth.when(d.started_at || d.created_at)]),
        el('dt', null, ['Finished']), el('dd', null, [berth.when(d.finished_at)])
      ]),
      log,
      d.logs_truncated ? el('p', { class: 'muted' }, ['Only the tail of the log is shown.']) : null
    ]));
    log.scrollTop = log.scrollHeight;
  } };
});`,
  migration: String.raw`
berth.start(function (s) {
  var uuid = s.migration_uuid || s.uuid;
  if (!uuid) return null;
  return { args: { view: 'migration', uuid: uuid }, render: function (d) {
    var el = berth.el, p = d.progress || {}, total = p.bytes_total || 0, done = p.bytes || 0;
    var bar = total ? el('progress', { max: String(total), value: String(Math.min(done, total)) }) : el('progress', d.status === 'finished' ? { max: '1', value: '1' } : null);
    berth.show(el('section', null, [
      el('h1', null, ['Migration']),
      el('dl', null, [
        el('dt', null, ['Status']), el('dd', { 'data-status': '' }, [berth.badge(d.status)]),
        el('dt', null, ['Phase']), el('dd', { 'data-phase': '' }, [(p.phase || '—') + (p.round ? ', round ' + p.round : '')]),
        el('dt', null, ['Copied']), el('dd', { 'data-bytes': '' }, [berth.bytes(done) + (total ? ' of ' + berth.bytes(total) : '')]),
        el('dt', null, ['Volumes']), el('dd', null, [(p.volumes_done || 0) + ' of ' + (p.volumes_total || 0) + ' verified']),
        el('dt', null, ['Pause']), el('dd', { 'data-pause': '' }, [typeof d.downtime_ms === 'number' ? (d.downtime_ms / 1000).toFixed(2) + ' s' : 'not yet']),
        el('dt', null, ['Resource']), el('dd', null, [d.resource_uuid])
      ]),
      bar,
      d.error ? el('p', { class: 'problem' }, [d.error]) : null
    ]));
  } };
});`,
  approval: String.raw`
berth.start(function (s) {
  if (!s.uuid) return null;
  return { args: { view: 'approval', uuid: s.uuid }, render: function (d) {
    var el = berth.el, pending = d.status === 'pending';
    var button = el('a', { class: 'button', href: d.approve_url, target: '_blank', rel: 'noopener noreferrer', 'data-approve': '' }, [pending ? 'Decide in the console' : 'Open in the console']);
    button.addEventListener('click', function (e) { e.preventDefault(); berth.openLink(d.approve_url); });
    var who = d.requested_by || {};
    berth.show(el('section', { class: 'card' }, [
      el('h1', null, [pending ? 'Waiting for a person: ' : 'Held call: ', d.operation]),
      el('dl', null, [
        el('dt', null, ['Status']), el('dd', { 'data-status': '' }, [berth.badge(d.status)]),
        el('dt', null, ['Target']), el('dd', null, [d.target || '—']),
        el('dt', null, ['Asked by']), el('dd', null, ['user ' + who.user_id + ', token ' + who.token_id + (who.oauth_client_id ? ', client ' + who.oauth_client_id : '')]),
        el('dt', null, ['Asked']), el('dd', null, [berth.when(d.created_at)]),
        el('dt', null, [pending ? 'Expires' : 'Decided']), el('dd', null, [berth.when(pending ? d.expires_at : d.decided_at)])
      ]),
      el('pre', null, [JSON.stringify(d.arguments || {}, null, 2)]),
      el('p', { class: 'muted' }, [pending ? 'Only a signed-in person decides, in the console; nothing is approved from this chat.' : 'Decided in the console.']),
      button
    ]));
  } };
});`,
};

/** Strings inside an inline <script> must not close it. */
const scriptSafe = (js: string) => js.replace(/<\/(script)/gi, '<\\/$1');

const cache = new Map<ViewName, string>();

/** One view as a self-contained HTML document: its styles and scripts inlined, nothing fetched. */
export function viewHtml(name: ViewName, title: string): string {
  let html = cache.get(name);
  if (!html) {
    html = `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><title>${title}</title><style>${VIEW_STYLES}</style></head><body><main id="root" aria-live="polite"><p class="muted">Loading…</p></main><script>${scriptSafe(BRIDGE_SCRIPT + RENDER[name])}</script></body></html>`;
    cache.set(name, html);
  }
  return html;
}
