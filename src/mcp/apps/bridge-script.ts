/**
 * The view side of the MCP Apps bridge, as plain browser script inlined into every view: JSON-RPC
 * over postMessage with the host (ui/initialize, tool results, tools/call, ui/open-link, size
 * and theme). Written by hand rather than bundling the extension's App class: that class brings
 * the MCP SDK and zod along (over 500 KB), and a view must stay small and self-contained.
 * Everything shown goes through el() and textContent: no markup is ever built from data.
 */
export const BRIDGE_SCRIPT = String.raw`
var berth = (function () {
  var nextId = 1, pending = {}, onResult = null, stopped = false;
  function post(m) { m.jsonrpc = '2.0'; window.parent.postMessage(m, '*'); }
  function request(method, params) {
    return new Promise(function (resolve, reject) {
      var id = nextId++;
      pending[id] = { resolve: resolve, reject: reject };
      post({ id: id, method: method, params: params || {} });
    });
  }
  function theme(ctx) {
    if (ctx && (ctx.theme === 'dark' || ctx.theme === 'light')) document.documentElement.setAttribute('data-theme', ctx.theme);
  }
  window.addEventListener('message', function (e) {
    if (e.source !== window.parent) return;
    var m = e.data;
    if (!m || m.jsonrpc !== '2.0') return;
    if (m.method === undefined) {
      var p = pending[m.id];
      if (!p) return;
      delete pending[m.id];
      if (m.error) p.reject(new Error(m.error.message || 'error')); else p.resolve(m.result);
      return;
    }
    if (m.id !== undefined) {
      if (m.method === 'ui/resource-teardown') stopped = true;
      post({ id: m.id, result: {} });
      return;
    }
    if (m.method === 'ui/notifications/tool-result' && onResult) onResult(m.params || {});
    if (m.method === 'ui/notifications/host-context-changed') theme(m.params);
  });
  function el(tag, attrs, kids) {
    var n = document.createElement(tag);
    if (attrs) for (var k in attrs) if (attrs[k] !== undefined && attrs[k] !== null) n.setAttribute(k, String(attrs[k]));
    (kids || []).forEach(function (c) { if (c !== null && c !== undefined) n.appendChild(typeof c === 'object' ? c : document.createTextNode(String(c))); });
    return n;
  }
  function when(s) {
    if (!s) return '—';
    var d = new Date(s);
    return isNaN(d.getTime()) ? String(s) : d.toLocaleString();
  }
  function bytes(n) {
    if (typeof n !== 'number') return '—';
    var u = ['B', 'KB', 'MB', 'GB', 'TB'], i = 0;
    while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
    return (i ? n.toFixed(1) : String(n)) + ' ' + u[i];
  }
  function badge(s) { return el('span', { class: 'badge s-' + String(s).replace(/[^a-z_]/g, '') }, [s]); }
  function show(node) {
    var root = document.getElementById('root');
    root.replaceChildren(node);
    root.setAttribute('data-rendered', String(Date.now()));
  }
  function problem(msg) { show(el('p', { class: 'problem' }, [msg])); }
  /** Follows one object: the first read at once, then each change (the tool waits for one). */
  function follow(args, render) {
    var since;
    function round() {
      if (stopped) return;
      var a = { view: args.view };
      if (args.uuid) a.uuid = args.uuid;
      if (since) a.since = since;
      request('tools/call', { name: 'follow_view', arguments: a }).then(function (r) {
        if (r && r.isError) {
          var t = r.content && r.content[0] && r.content[0].text;
          try { t = JSON.parse(t).message; } catch (e) {}
          problem(t || 'berth refused.');
          return;
        }
        var s = r && r.structuredContent;
        if (s && s.version !== since) { since = s.version; render(s.data); }
        setTimeout(round, 50);
      }, function () { setTimeout(round, 2000); });
    }
    round();
  }
  function start(target) {
    onResult = function (result) {
      var t = target(result.structuredContent || {});
      if (t) follow(t.args, t.render); else problem('Nothing to show for this result.');
    };
    request('ui/initialize', { appInfo: { name: 'berth-view', version: '1' }, appCapabilities: {}, protocolVersion: '2026-01-26' }).then(function (r) {
      theme(r && r.hostContext);
      post({ method: 'ui/notifications/initialized', params: {} });
    });
    if (window.ResizeObserver) new ResizeObserver(function () {
      post({ method: 'ui/notifications/size-changed', params: { width: document.documentElement.scrollWidth, height: document.documentElement.scrollHeight } });
    }).observe(document.documentElement);
  }
  return { el: el, when: when, bytes: bytes, badge: badge, show: show, start: start, openLink: function (url) { return request('ui/open-link', { url: url }); } };
})();
`;

export const VIEW_STYLES = `
:root{color-scheme:light dark;--bg:#fff;--fg:#1d2126;--muted:#5d6671;--line:#d9dde2;--card:#f6f7f9;--ok:#1f7a3a;--bad:#b3261e;--warn:#8a5a00;--accent:#2357c6}
@media (prefers-color-scheme:dark){:root:not([data-theme=light]){--bg:#15181c;--fg:#e6e9ec;--muted:#9aa4ae;--line:#2d333a;--card:#1d2126;--ok:#5cc981;--bad:#ff8a80;--warn:#f0c05a;--accent:#8fb2ff}}
:root[data-theme=dark]{--bg:#15181c;--fg:#e6e9ec;--muted:#9aa4ae;--line:#2d333a;--card:#1d2126;--ok:#5cc981;--bad:#ff8a80;--warn:#f0c05a;--accent:#8fb2ff}
*{box-sizing:border-box}body{margin:0;padding:12px;background:var(--bg);color:var(--fg);font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;overflow-wrap:anywhere}
h1{font-size:16px;margin:0 0 8px}.muted{color:var(--muted)}.problem{color:var(--bad)}
table{width:100%;border-collapse:collapse}th,td{text-align:left;padding:6px 4px;border-bottom:1px solid var(--line);vertical-align:top}th{font-size:12px;color:var(--muted);font-weight:600;white-space:nowrap}
.badge{white-space:nowrap;display:inline-block;padding:1px 8px;border-radius:10px;font-size:12px;background:var(--card);border:1px solid var(--line)}
.s-running,.s-finished,.s-succeeded{color:var(--ok)}.s-failed,.s-exited,.s-denied,.s-expired,.s-cancelled,.s-unreachable{color:var(--bad)}.s-in_progress,.s-queued,.s-pending,.s-restarting,.s-starting{color:var(--warn)}
dl{display:grid;grid-template-columns:max-content 1fr;gap:4px 12px;margin:8px 0}dt{color:var(--muted)}dd{margin:0}
pre{background:var(--card);border:1px solid var(--line);border-radius:6px;padding:8px;max-height:320px;overflow:auto;white-space:pre-wrap;font:12px/1.4 ui-monospace,monospace;margin:8px 0}
progress{width:100%;height:12px}.card{border:1px solid var(--line);border-radius:8px;padding:12px;background:var(--card)}
a.button,button{display:inline-block;padding:6px 14px;border-radius:6px;border:0;background:var(--accent);color:var(--bg);font-weight:600;text-decoration:none;cursor:pointer}
@media (max-width:520px){.wide{display:none}}
`;
