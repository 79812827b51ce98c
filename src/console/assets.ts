import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

/**
 * The console's static files. Stylesheet and script are berth's own source (here, so the shipped
 * bundle carries them; no build step); the WebAuthn browser helper is @simplewebauthn/browser's
 * own bundle, served from node_modules. Pages load them by path: the CSP allows no inline code.
 */
export const ASSET_PATHS = {
  css: '/console/assets/console.css',
  js: '/console/assets/console.js',
  webauthn: '/console/assets/webauthn.js',
  icon: '/console/assets/icon.svg',
} as const;

const CSS = `
:root { --fg: #1b1f24; --muted: #4a5360; --bg: #ffffff; --panel: #f4f6f8; --line: #c9d1d9; --accent: #0b57d0; --accent-fg: #ffffff; --danger: #b3261e; --ok: #1e6b34; --focus: #f59e0b; }
* { box-sizing: border-box; }
html { font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg); background: var(--bg); }
body { margin: 0; }
a { color: var(--accent); }
:focus-visible { outline: 3px solid var(--focus); outline-offset: 2px; }
.sr { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
.skip { position: absolute; left: -999px; top: 0; background: var(--bg); padding: .5rem; }
.skip:focus { left: .5rem; }
.top { display: flex; flex-wrap: wrap; align-items: center; gap: .5rem 1.25rem; padding: .75rem 1rem; border-bottom: 1px solid var(--line); background: var(--panel); }
.brand { font-weight: 700; font-size: 1.2rem; text-decoration: none; color: var(--fg); }
nav ul { display: flex; flex-wrap: wrap; gap: .25rem 1rem; list-style: none; margin: 0; padding: 0; }
nav a[aria-current="page"] { font-weight: 700; text-decoration-thickness: 3px; }
.signout { margin-left: auto; display: flex; align-items: center; gap: .5rem; }
.who { color: var(--muted); font-size: .9rem; overflow-wrap: anywhere; }
main { max-width: 60rem; margin: 0 auto; padding: 1rem; }
h1 { font-size: 1.6rem; margin: .5rem 0 1rem; }
h2 { font-size: 1.2rem; margin: 1.5rem 0 .5rem; }
form.stack { display: grid; gap: .75rem; max-width: 32rem; }
label { font-weight: 600; display: block; }
fieldset { border: 1px solid var(--line); border-radius: 6px; padding: .5rem .75rem; }
fieldset label { font-weight: 400; display: inline-flex; align-items: center; gap: .35rem; margin-right: 1rem; }
legend { font-weight: 600; }
input[type="text"], input[type="email"], select { width: 100%; padding: .55rem .6rem; font: inherit; border: 1px solid #6b7785; border-radius: 6px; background: var(--bg); color: var(--fg); }
input[type="checkbox"] { width: 1.15rem; height: 1.15rem; }
button, .button { display: inline-block; font: inherit; padding: .5rem .9rem; border-radius: 6px; border: 1px solid var(--accent); background: var(--accent); color: var(--accent-fg); cursor: pointer; text-decoration: none; }
button.secondary { background: var(--bg); color: var(--accent); }
button.danger { background: var(--danger); border-color: var(--danger); }
.hint { color: var(--muted); font-size: .9rem; margin: .25rem 0 0; }
.error { color: var(--danger); font-weight: 600; }
.notice { border-left: 4px solid var(--ok); background: var(--panel); padding: .75rem 1rem; }
.alert { border-left: 4px solid var(--danger); background: var(--panel); padding: .75rem 1rem; }
.secret { display: block; font-family: ui-monospace, monospace; background: var(--panel); border: 1px solid var(--line); padding: .75rem; overflow-wrap: anywhere; user-select: all; }
.table-wrap { overflow-x: auto; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: .5rem; border-bottom: 1px solid var(--line); vertical-align: top; }
td form { display: inline-flex; gap: .35rem; align-items: center; margin: 0; }
td select { width: auto; }
.facts { display: grid; grid-template-columns: repeat(auto-fill, minmax(12rem, 1fr)); gap: .5rem 1rem; margin: 0 0 1rem; }
.facts dt { color: var(--muted); font-size: .9rem; }
.facts dd { margin: 0; font-weight: 600; overflow-wrap: anywhere; }
.audit { table-layout: fixed; }
.audit th:nth-child(1) { width: 7.5rem; }
.audit th:nth-child(3) { width: 30%; }
.audit th:nth-child(4) { width: 9rem; }
.audit td { overflow-wrap: anywhere; }
.audit tr:first-child td { border-bottom: 0; padding-bottom: .15rem; }
.audit tr.more td { padding-top: 0; }
.audit .who-how, .audit .targets { color: var(--muted); font-size: .9rem; }
.audit .targets { margin: .25rem 0; }
.audit summary { cursor: pointer; }
.args { max-height: 24rem; overflow: auto; margin: .25rem 0 0; padding: .5rem; background: var(--panel); border: 1px solid var(--line); border-radius: 6px; white-space: pre-wrap; overflow-wrap: anywhere; font: .8rem/1.4 ui-monospace, monospace; }
.log { max-height: 28rem; overflow: auto; background: #0d1117; color: #e6edf3; padding: .75rem; border-radius: 6px; white-space: pre-wrap; overflow-wrap: anywhere; font: .85rem/1.4 ui-monospace, monospace; }
@media (max-width: 40rem) {
  .signout { margin-left: 0; width: 100%; justify-content: space-between; }
  thead { display: none; }
  table, tbody, tr, td { display: block; width: 100%; }
  tr { border-bottom: 1px solid var(--line); padding: .5rem 0; }
  td { border: 0; padding: .2rem 0; }
  td[data-label]::before { content: attr(data-label) ": "; font-weight: 600; }
}
`;

const JS = `'use strict';
(function () {
  var meta = document.querySelector('meta[name="csrf-token"]');
  var csrf = meta ? meta.getAttribute('content') : '';
  function post(url, body) {
    return fetch(url, { method: 'POST', credentials: 'same-origin', headers: { 'content-type': 'application/json', 'x-csrf-token': csrf }, body: JSON.stringify(body || {}) })
      .then(function (r) { return r.json().catch(function () { return {}; }).then(function (j) { if (!r.ok) throw new Error(j.message || ('HTTP ' + r.status)); return j; }); });
  }
  function say(id, text) { var el = document.getElementById(id); if (el) el.textContent = text; }
  function reason(e) { return e && e.name === 'NotAllowedError' ? 'it was cancelled or timed out.' : (e && e.message) || 'unknown error.'; }
  var register = document.getElementById('passkey-register');
  if (register) register.addEventListener('click', function () {
    var nameField = document.getElementById('passkey-name');
    register.disabled = true;
    say('passkey-status', 'Waiting for your authenticator...');
    post('/passkeys/register/options')
      .then(function (options) { return SimpleWebAuthnBrowser.startRegistration({ optionsJSON: options }); })
      .then(function (response) { return post('/passkeys/register/verify', { response: response, name: nameField ? nameField.value : '' }); })
      .then(function () { window.location.assign(register.getAttribute('data-next') || '/passkeys'); })
      .catch(function (e) { register.disabled = false; say('passkey-status', 'The passkey was not added: ' + reason(e)); });
  });
  var signin = document.getElementById('passkey-login');
  if (signin) signin.addEventListener('click', function () {
    signin.disabled = true;
    say('passkey-status', 'Waiting for your authenticator...');
    post('/login/passkey/options')
      .then(function (options) { return SimpleWebAuthnBrowser.startAuthentication({ optionsJSON: options }); })
      .then(function (response) { return post('/login/passkey/verify', { response: response, next: signin.getAttribute('data-next') || '' }); })
      .then(function (r) { window.location.assign(r.redirect || '/'); })
      .catch(function (e) { signin.disabled = false; say('passkey-status', 'Not signed in: ' + reason(e)); });
  });
  // Approving a held call with a passkey: the check is made for this approval and its arguments hash, then the form goes.
  var approve = document.getElementById('approval-approve');
  if (approve && approve.getAttribute('data-passkey')) approve.addEventListener('submit', function (ev) {
    if (approve.elements.webauthn.value) return;
    ev.preventDefault();
    var button = approve.querySelector('button');
    button.disabled = true;
    say('approval-passkey-status', 'Confirm with your passkey...');
    post(approve.getAttribute('data-passkey'), { args_hash: approve.elements.args_hash.value })
      .then(function (options) { return SimpleWebAuthnBrowser.startAuthentication({ optionsJSON: options }); })
      .then(function (response) { approve.elements.webauthn.value = JSON.stringify(response); approve.submit(); })
      .catch(function (e) { button.disabled = false; say('approval-passkey-status', 'Not approved: ' + reason(e)); });
  });
})();
`;

const ICON = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><rect width="16" height="16" rx="3" fill="#0b57d0"/><path d="M3 11h10l-2 3H5z" fill="#fff"/></svg>`;

let webauthnBundle: string | undefined;
function webauthnScript(): string {
  // Resolved from this module (in the bundle too): the package ships its own browser build.
  // Its exports map hides dist/, so the file is found beside the resolved entry (script/index.js).
  const entry = createRequire(import.meta.url).resolve('@simplewebauthn/browser');
  webauthnBundle ??= fs.readFileSync(path.join(path.dirname(entry), '..', 'dist', 'bundle', 'index.umd.min.js'), 'utf8');
  return webauthnBundle;
}

export interface Asset {
  type: string;
  body: () => string;
}

export const ASSETS: Record<string, Asset> = {
  [ASSET_PATHS.css]: { type: 'text/css; charset=utf-8', body: () => CSS },
  [ASSET_PATHS.js]: { type: 'text/javascript; charset=utf-8', body: () => JS },
  [ASSET_PATHS.webauthn]: { type: 'text/javascript; charset=utf-8', body: webauthnScript },
  [ASSET_PATHS.icon]: { type: 'image/svg+xml', body: () => ICON },
};
