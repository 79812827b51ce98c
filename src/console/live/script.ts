/** Where the live pages' script is served (a file, not inline: the console's CSP allows no inline code). */
export const LIVE_SCRIPT_PATH = '/console/assets/live.js';

/**
 * The live pages' script: one EventSource to the URL the page names (`data-live-src` on main);
 * `state` sets text (`data-live`) and rebuilds tables (`data-live-rows`), `log` appends to or
 * replaces the log, `end` closes the stream and says why. Text only (textContent, createElement):
 * nothing from the stream is parsed as HTML.
 */
export const LIVE_SCRIPT = `'use strict';
(function () {
  var main = document.querySelector('[data-live-src]');
  if (!main || !window.EventSource) return;
  var conn = document.querySelector('[data-live-connection]');
  function say(text) { if (conn) conn.textContent = text; }
  function setText(text) {
    Object.keys(text).forEach(function (k) {
      document.querySelectorAll('[data-live="' + k + '"]').forEach(function (el) { el.textContent = text[k]; });
    });
  }
  function setRows(tables) {
    Object.keys(tables).forEach(function (k) {
      var body = document.querySelector('[data-live-rows="' + k + '"]');
      if (!body) return;
      var cols = Number(body.getAttribute('data-cols') || '1');
      var rows = tables[k];
      var fresh = document.createDocumentFragment();
      if (rows.length === 0) {
        var tr0 = document.createElement('tr');
        var td0 = document.createElement('td');
        td0.colSpan = cols;
        td0.textContent = body.getAttribute('data-empty') || 'None.';
        tr0.appendChild(td0);
        fresh.appendChild(tr0);
      }
      rows.forEach(function (row) {
        var tr = document.createElement('tr');
        tr.setAttribute('data-id', row.id);
        row.cells.forEach(function (cell, i) {
          var td = document.createElement('td');
          var label = body.getAttribute('data-label-' + i);
          if (label) td.setAttribute('data-label', label);
          if (i === 0 && row.href) {
            var a = document.createElement('a');
            a.href = row.href;
            a.textContent = cell;
            td.appendChild(a);
          } else td.textContent = cell;
          tr.appendChild(td);
        });
        fresh.appendChild(tr);
      });
      body.replaceChildren(fresh);
    });
  }
  var log = document.querySelector('[data-live-log]');
  function onLog(change) {
    if (!log) return;
    var atEnd = log.scrollTop + log.clientHeight >= log.scrollHeight - 8;
    if (typeof change.reset === 'string') log.textContent = change.reset;
    else log.textContent += change.append;
    // A long build keeps appending: the page keeps the last part, as the server's first answer does.
    if (log.textContent.length > 200000) log.textContent = log.textContent.slice(-100000);
    if (atEnd) log.scrollTop = log.scrollHeight;
  }
  var reasons = { finished: 'Finished: nothing more will change.', 'signed-out': 'Your session ended: sign in again to keep watching.', gone: 'This is no longer available to you.', shutdown: 'The server is restarting: reload the page in a moment.' };
  var es = new EventSource(main.getAttribute('data-live-src'));
  es.addEventListener('open', function () { say('Live: updates as they happen.'); });
  es.addEventListener('state', function (e) { var s = JSON.parse(e.data); setText(s.text); setRows(s.tables); });
  es.addEventListener('log', function (e) { onLog(JSON.parse(e.data)); });
  es.addEventListener('end', function (e) { es.close(); say(reasons[JSON.parse(e.data).reason] || 'Stopped.'); });
  es.addEventListener('error', function () { if (es.readyState !== 2) say('Connection lost; reconnecting...'); });
})();
`;
