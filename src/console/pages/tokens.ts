import type { FastifyInstance, FastifyReply } from 'fastify';
import { EXPIRATIONS, type Expiration } from '../../auth/token.js';
import { PERMISSIONS, ROLE_MAY_HOLD, type Role } from '../../auth/permissions.js';
import * as admin from '../../core/admin.js';
import { BerthError, validationError, type ValidationErrors } from '../../errors.js';
import type { Db } from '../../store/db.js';
import { consoleChange } from '../console-audit.js';
import { field, fields, formOf, personOrRedirect, type ConsoleDeps } from '../context.js';
import { html, type Html } from '../html.js';
import { sendPage } from '../layout.js';
import { CSRF_FIELD, type Person } from '../session.js';

export const EXPIRY_LABELS: Record<Expiration, string> = { '7d': '7 days', '30d': '30 days', '60d': '60 days', '90d': '90 days', '1y': '1 year', never: 'No expiration' };

const PERMISSION_HINTS: Record<string, string> = {
  read: 'view resources',
  'read:sensitive': 'also passwords, keys, environment variables, logs',
  write: 'create, update, delete',
  deploy: 'deployments and deploy webhooks',
  root: 'everything (owners and admins only)',
};

export interface Membership {
  teamId: number;
  teamName: string;
  role: Role;
}

/** The teams a person belongs to, with their role in each. */
export async function membershipsOf(db: Db, userId: number): Promise<Membership[]> {
  const rows = await db.selectFrom('team_members as m').innerJoin('teams as t', 't.id', 'm.team_id').select(['t.id', 't.name', 'm.role']).where('m.user_id', '=', userId).orderBy('t.name').execute();
  return rows.map((r) => ({ teamId: r.id, teamName: r.name, role: r.role }));
}

async function myTokens(db: Db, userId: number) {
  const rows = await db
    .selectFrom('api_tokens as k')
    .innerJoin('teams as t', 't.id', 'k.team_id')
    .select(['k.id', 'k.name', 't.name as team', 'k.permissions', 'k.expires_at', 'k.last_used_at', 'k.created_at'])
    .where('k.user_id', '=', userId)
    // An OAuth client's approval is listed (and revoked, with its grant) under Connected apps.
    .where('k.oauth_grant_id', 'is', null)
    .orderBy('k.id')
    .execute();
  return rows.map((r) => ({ ...r, permissions: JSON.parse(r.permissions) as string[] }));
}

const day = (iso: string | null) => (iso ? iso.slice(0, 16).replace('T', ' ') + ' UTC' : null);

interface FormState {
  team?: string;
  name?: string;
  expires?: string;
  permissions?: string[];
  errors?: ValidationErrors;
}

function errorsFor(errors: ValidationErrors | undefined, name: string): Html | string {
  const list = errors?.[name];
  return list?.length ? html`<p class="error" id="${name}-error">${list.join(' ')}</p>` : '';
}

function createForm(person: Person, teams: Membership[], state: FormState): Html {
  const perms = new Set(state.permissions ?? ['read']);
  const expires = state.expires ?? '30d';
  const e = state.errors;
  return html`<form class="stack" method="post" action="/tokens" novalidate>
  <input type="hidden" name="${CSRF_FIELD}" value="${person.csrf}">
  ${e ? html`<p class="alert" role="alert">The token was not created: see below.</p>` : ''}
  <div>
    <label for="token-team">Team</label>
    <select id="token-team" name="team"${e?.team ? html` aria-invalid="true" aria-describedby="team-error"` : ''}>
      ${teams.map((t) => html`<option value="${t.teamId}"${String(t.teamId) === state.team ? html` selected` : ''}>${t.teamName} (${t.role})</option>`)}
    </select>
    ${errorsFor(e, 'team')}
  </div>
  <div>
    <label for="token-name">Name</label>
    <input type="text" id="token-name" name="name" maxlength="255" required value="${state.name ?? ''}"${e?.name ? html` aria-invalid="true" aria-describedby="name-error"` : ''}>
    ${errorsFor(e, 'name')}
  </div>
  <div>
    <label for="token-expires">Expires after</label>
    <select id="token-expires" name="expires">
      ${(Object.keys(EXPIRATIONS) as Expiration[]).map((k) => html`<option value="${k}"${k === expires ? html` selected` : ''}>${EXPIRY_LABELS[k]}</option>`)}
    </select>
    ${errorsFor(e, 'expires')}
  </div>
  <fieldset${e?.permissions ? html` aria-describedby="permissions-error"` : ''}>
    <legend>Permissions</legend>
    ${PERMISSIONS.map((p) => html`<label><input type="checkbox" name="permissions" value="${p}" id="perm-${p.replace(':', '-')}"${perms.has(p) ? html` checked` : ''}> ${p} <span class="hint">(${PERMISSION_HINTS[p]})</span></label>`)}
    ${errorsFor(e, 'permissions')}
  </fieldset>
  <div><button type="submit">Create token</button></div>
</form>`;
}

async function tokensPage(deps: ConsoleDeps, reply: FastifyReply, person: Person, state: FormState = {}, notice?: string) {
  const teams = await membershipsOf(deps.db, person.userId);
  const tokens = await myTokens(deps.db, person.userId);
  return sendPage(
    reply,
    { title: 'API tokens', person, csrf: person.csrf, current: 'tokens', status: state.errors ? 422 : 200 },
    html`${notice ? html`<p class="notice" role="status">${notice}</p>` : ''}
<p>Tokens let an agent or a script act for you in one team: <code>Authorization: Bearer &lt;token&gt;</code> on the API and on <code>/mcp</code>.</p>
<section aria-labelledby="yours">
<h2 id="yours">Your tokens</h2>
${
  tokens.length === 0
    ? html`<p>None yet.</p>`
    : html`<div class="table-wrap"><table>
<thead><tr><th scope="col">Name</th><th scope="col">Team</th><th scope="col">Permissions</th><th scope="col">Expires</th><th scope="col">Last used</th><th scope="col"><span class="sr">Actions</span></th></tr></thead>
<tbody>${tokens.map(
        (t) => html`<tr>
<td data-label="Name">${t.name} <span class="hint">#${t.id}</span></td><td data-label="Team">${t.team}</td><td data-label="Permissions">${t.permissions.join(', ')}</td>
<td data-label="Expires">${day(t.expires_at) ?? 'never'}</td><td data-label="Last used">${day(t.last_used_at) ?? 'never'}</td>
<td><form method="post" action="/tokens/${t.id}/revoke"><input type="hidden" name="${CSRF_FIELD}" value="${person.csrf}"><button type="submit" class="danger" aria-label="Revoke token ${t.name}">Revoke</button></form></td>
</tr>`,
      )}</tbody></table></div>`
}
</section>
<section aria-labelledby="create">
<h2 id="create">Create a token</h2>
${teams.length ? createForm(person, teams, state) : html`<p>You are not a member of any team.</p>`}
</section>`,
  );
}

/** My tokens: list (never their values), create (value shown once), revoke. */
export function tokenPages(app: FastifyInstance, deps: ConsoleDeps): void {
  const { sessions } = deps;

  app.get('/tokens', async (req, reply) => {
    const person = await personOrRedirect(deps, req, reply);
    if (!person) return reply;
    const revoked = (req.query as Record<string, unknown>).revoked;
    return tokensPage(deps, reply, person, {}, typeof revoked === 'string' && /^\d+$/.test(revoked) ? `Token #${revoked} was revoked; it no longer works.` : undefined);
  });

  app.post('/tokens', async (req, reply) => {
    const person = await personOrRedirect(deps, req, reply);
    if (!person) return reply;
    const f = formOf(req);
    await sessions.checkCsrf(req, field(f, CSRF_FIELD));
    const state: FormState = { team: field(f, 'team'), name: field(f, 'name'), expires: field(f, 'expires'), permissions: fields(f, 'permissions') };
    const teamId = /^[1-9][0-9]{0,15}$/.test(state.team ?? '') ? Number(state.team) : undefined;
    let created: { issued: admin.IssuedToken; team: Membership };
    try {
      created = await consoleChange(
        deps,
        req,
        person.userId,
        async (trx) => {
          const team = (await membershipsOf(trx, person.userId)).find((t) => t.teamId === teamId);
          // Only the person's own teams: another team's id is the same "choose one" (nothing about it leaks).
          if (!team) throw validationError({ team: ['Choose one of your teams.'] });
          const over = (state.permissions ?? []).filter((p) => !ROLE_MAY_HOLD[team.role].has(p as never));
          if (over.length) throw validationError({ permissions: [`As ${team.role} of ${team.teamName} you cannot grant ${over.join(', ')}.`] });
          // The same rules as `berth token create` (role caps checked again in its transaction).
          const issued = await admin.createToken(trx, {
            email: person.email,
            team: String(team.teamId),
            name: state.name ?? '',
            permissions: (state.permissions ?? []) as never,
            expires: (state.expires ?? '') as never,
          });
          return { issued, team };
        },
        // The value minted is output, shown once and never stored in the entry.
        {
          operation: 'create_token',
          args: { team_id: teamId ?? state.team, name: state.name, permissions: state.permissions, expires: state.expires },
          status: 201,
          team: teamId,
          facts: ({ issued, team }) => ({ teamId: team.teamId, targets: [`token:${issued.id}`] }),
        },
      );
    } catch (err) {
      if (err instanceof BerthError && err.kind === 'validation') return tokensPage(deps, reply, person, { ...state, errors: err.details.errors });
      throw err;
    }
    const { issued, team } = created;
    return sendPage(
      reply,
      { title: 'Token created', person, csrf: person.csrf, current: 'tokens' },
      html`<p class="notice" role="status">Token <strong>${state.name}</strong> for ${team.teamName} (expires ${day(issued.expires_at) ?? 'never'}).</p>
<p><label for="token-value">Copy it now: it is shown only this once and cannot be recovered.</label></p>
<output id="token-value" class="secret">${issued.token}</output>
<p><a href="/tokens">Done</a></p>`,
    );
  });

  app.post('/tokens/:id/revoke', async (req, reply) => {
    const person = await personOrRedirect(deps, req, reply);
    if (!person) return reply;
    await sessions.checkCsrf(req, field(formOf(req), CSRF_FIELD));
    const id = Number((req.params as { id: string }).id);
    if (!Number.isSafeInteger(id) || id <= 0) throw new BerthError('not_found');
    await consoleChange(
      deps,
      req,
      person.userId,
      async (trx) => {
        // Only the person's own token; anyone else's is the same 404 as a missing one. Read before
        // it goes: the entry belongs to the token's team.
        const held = await trx.selectFrom('api_tokens').select('team_id').where('id', '=', id).where('user_id', '=', person.userId).where('oauth_grant_id', 'is', null).executeTakeFirst();
        if (!held) throw new BerthError('not_found');
        await trx.deleteFrom('api_tokens').where('id', '=', id).execute();
        return held;
      },
      { operation: 'revoke_token', args: { id }, facts: (held) => ({ teamId: held.team_id, targets: [`token:${id}`] }) },
    );
    return reply.redirect(`/tokens?revoked=${id}`, 303);
  });
}
