import type { Permission, Role } from '../auth/permissions.js';
import { ROLE_MAY_HOLD } from '../auth/permissions.js';

const esc = (s: string): string => s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

export interface ConsentView {
  action: string;
  csrf: string;
  clientName: string;
  clientId: string;
  redirectHost: string;
  teams: { id: number; name: string; role: Role }[];
  /** Preselected: what the client asked for (read when it named nothing). */
  requested: Permission[];
  permissions: readonly Permission[];
  error?: string;
}

const WHAT: Record<Permission, string> = {
  read: 'see servers, projects and resources (secrets hidden)',
  'read:sensitive': 'see secrets too (environment values, keys, logs)',
  write: 'create, change and delete resources',
  deploy: 'deploy, start, stop and restart',
  root: 'everything, including team and instance settings (owners and admins only)',
};

const PERMISSION_TEXT = (p: Permission): string => WHAT[p];

/**
 * The consent page: server-rendered, no script, labelled controls with stable ids (the console's
 * browser tests drive it by them). Permissions a person may not hold in any of their teams are
 * shown disabled; the server caps the choice by the role in the chosen team again on submit.
 */
export function consentPage(v: ConsentView): string {
  const mayInSome = (p: Permission) => v.teams.some((t) => ROLE_MAY_HOLD[t.role].has(p));
  const teams = v.teams.map((t, i) => `<option value="${t.id}"${i === 0 ? ' selected' : ''}>${esc(t.name)} (${t.role})</option>`).join('');
  const perms = v.permissions
    .map((p) => {
      const allowed = mayInSome(p);
      const checked = allowed && v.requested.includes(p) ? ' checked' : '';
      const id = `perm-${p.replace(':', '-')}`;
      return `<li><input type="checkbox" id="${id}" name="permission" value="${p}"${checked}${allowed ? '' : ' disabled'}> <label for="${id}"><strong>${p}</strong>: ${esc(PERMISSION_TEXT(p))}</label></li>`;
    })
    .join('');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Allow ${esc(v.clientName)} · berth</title>
<style>
body{font:16px/1.5 system-ui,sans-serif;margin:0 auto;max-width:36rem;padding:1rem;color:#111;background:#fff}
fieldset{border:1px solid #888;border-radius:6px;margin:1rem 0;padding:.5rem 1rem}
ul{list-style:none;padding:0}li{margin:.4rem 0}
button{font:inherit;padding:.5rem 1.2rem;margin-right:.5rem;border-radius:6px;border:1px solid #222;cursor:pointer}
#approve{background:#0b5394;color:#fff}#deny{background:#fff;color:#111}
.error{color:#a00000;font-weight:bold}code{word-break:break-all}
</style>
</head>
<body>
<main>
<h1>Allow <span id="client-name">${esc(v.clientName)}</span> to use berth?</h1>
<p>After you answer, your browser goes back to <strong id="redirect-host">${esc(v.redirectHost)}</strong>.</p>
<p>Client id: <code id="client-id">${esc(v.clientId)}</code></p>
${v.error ? `<p class="error" role="alert" id="consent-error">${esc(v.error)}</p>` : ''}
<form method="post" action="${esc(v.action)}">
<input type="hidden" name="csrf" value="${esc(v.csrf)}">
<fieldset>
<legend>Team</legend>
<label for="team">Act in team</label>
<select id="team" name="team">${teams}</select>
</fieldset>
<fieldset>
<legend>Permissions</legend>
<ul>${perms}</ul>
</fieldset>
<button type="submit" id="approve" name="decision" value="approve">Allow</button>
<button type="submit" id="deny" name="decision" value="deny">Deny</button>
</form>
</main>
</body>
</html>`;
}

/** A short page for what cannot go on (expired request, not a member, …). */
export function messagePage(title: string, text: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>${esc(title)} · berth</title></head><body><main><h1>${esc(title)}</h1><p>${esc(text)}</p></main></body></html>`;
}
