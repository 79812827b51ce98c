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
  /** The team selected (the first one when absent). */
  team?: number;
  /** Ticked: on first view what preselected() allows; after a submit, what the person chose. */
  ticked: Permission[];
  permissions: readonly Permission[];
  /** root was submitted unconfirmed: the page asks again, with root still ticked. */
  confirmRoot?: boolean;
  error?: string;
}

/** Never ticked for the person, whatever the client asks: one hurried "Allow" must not give these. */
const NEVER_PRESELECTED: ReadonlySet<Permission> = new Set(['root', 'read:sensitive']);

/**
 * What the consent page ticks at first: what the client asked for, but never root or
 * read:sensitive, and only what the person's role in the preselected team allows; read when
 * nothing of that is left (a client that asked nothing, or only for those).
 */
export function preselected(requested: readonly Permission[], role: Role): Permission[] {
  const safe = requested.filter((p) => !NEVER_PRESELECTED.has(p) && ROLE_MAY_HOLD[role].has(p));
  return safe.length ? safe : ['read'];
}

const WHAT: Record<Permission, string> = {
  read: 'see servers, projects and resources (secrets hidden)',
  'read:sensitive': 'see secrets too (environment values, keys, logs)',
  write: 'create, change and delete resources',
  deploy: 'deploy, start, stop and restart',
  root: 'everything, including team and instance settings (owners and admins only)',
};

const PERMISSION_TEXT = (p: Permission): string => WHAT[p];

// Next to root, always (no script: the warning is there before anyone ticks it).
const ROOT_WARNING =
  'Root lets the application do anything you can: create tokens, change members and team and instance settings, delete everything. Tick it only for an application you would trust with your own account.';

/**
 * The consent page: server-rendered, no script, labelled controls with stable ids (the console's
 * browser tests drive it by them). Permissions a person may not hold in any of their teams are
 * shown disabled; the server caps the choice by the role in the chosen team again on submit, and
 * asks once more when root is among it (confirmRoot).
 */
export function consentPage(v: ConsentView): string {
  const mayInSome = (p: Permission) => v.teams.some((t) => ROLE_MAY_HOLD[t.role].has(p));
  const selected = v.team ?? v.teams[0]?.id;
  const teams = v.teams.map((t) => `<option value="${t.id}"${t.id === selected ? ' selected' : ''}>${esc(t.name)} (${t.role})</option>`).join('');
  const perms = v.permissions
    .map((p) => {
      const allowed = mayInSome(p);
      const checked = allowed && v.ticked.includes(p) ? ' checked' : '';
      const id = `perm-${p.replace(':', '-')}`;
      const warning = p === 'root' && allowed ? `<p class="warn" id="root-warning">${esc(ROOT_WARNING)}</p>` : '';
      return `<li><input type="checkbox" id="${id}" name="permission" value="${p}"${checked}${allowed ? '' : ' disabled'}${warning ? ' aria-describedby="root-warning"' : ''}> <label for="${id}"><strong>${p}</strong>: ${esc(PERMISSION_TEXT(p))}</label>${warning}</li>`;
    })
    .join('');
  const confirm = v.confirmRoot
    ? `<p class="error" role="alert" id="root-confirm">You chose <strong>root</strong>: ${esc(v.clientName)} could then do anything you can in this team. Untick root to give less, or press "Allow with root" to confirm.</p>`
    : '';
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
.warn{margin:.2rem 0 0 1.6rem;padding:.3rem .6rem;border-left:4px solid #a00000;background:#fff4f4;color:#5c0000;font-size:.9rem}
.hint{margin:.2rem 0;color:#444;font-size:.9rem}
</style>
</head>
<body>
<main>
<h1>Allow <span id="client-name">${esc(v.clientName)}</span> to use berth?</h1>
<p>After you answer, your browser goes back to <strong id="redirect-host">${esc(v.redirectHost)}</strong>.</p>
<p>Client id: <code id="client-id">${esc(v.clientId)}</code></p>
${v.error ? `<p class="error" role="alert" id="consent-error">${esc(v.error)}</p>` : ''}${confirm}
<form method="post" action="${esc(v.action)}">
<input type="hidden" name="csrf" value="${esc(v.csrf)}">${v.confirmRoot ? '\n<input type="hidden" name="confirm_root" value="yes">' : ''}
<fieldset>
<legend>Team</legend>
<label for="team">Act in team</label>
<select id="team" name="team">${teams}</select>
</fieldset>
<fieldset>
<legend>Permissions</legend>
<p class="hint">root and read:sensitive are never ticked for you, whatever the application asks.</p>
<ul>${perms}</ul>
</fieldset>
<button type="submit" id="approve" name="decision" value="approve">${v.confirmRoot ? 'Allow with root' : 'Allow'}</button>
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
