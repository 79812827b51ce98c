import type { FastifyInstance } from 'fastify';
import { ROLES, type Role } from '../../auth/permissions.js';
import * as admin from '../../core/admin.js';
import { BerthError } from '../../errors.js';
import { consoleChange } from '../console-audit.js';
import { field, formOf, personOrRedirect, type ConsoleDeps } from '../context.js';
import { html } from '../html.js';
import { sendPage } from '../layout.js';
import { CSRF_FIELD } from '../session.js';
import { membershipsOf } from './tokens.js';

const positiveId = (v: string): number => {
  const n = Number(v);
  if (!/^[1-9][0-9]{0,15}$/.test(v) || !Number.isSafeInteger(n)) throw new BerthError('not_found');
  return n;
};

/** Teams a person belongs to; members of those they own or administer (role changes, removal). */
export function teamPages(app: FastifyInstance, deps: ConsoleDeps): void {
  const { sessions, db } = deps;

  app.get('/teams', async (req, reply) => {
    const person = await personOrRedirect(deps, req, reply);
    if (!person) return reply;
    const teams = await membershipsOf(db, person.userId);
    return sendPage(
      reply,
      { title: 'Teams', person, csrf: person.csrf, current: 'teams' },
      teams.length === 0
        ? html`<p>You are not a member of any team.</p>`
        : html`<div class="table-wrap"><table>
<thead><tr><th scope="col">Team</th><th scope="col">Your role</th><th scope="col"><span class="sr">Actions</span></th></tr></thead>
<tbody>${teams.map(
            (t) => html`<tr><td data-label="Team">${t.teamName}</td><td data-label="Your role">${t.role}</td>
<td>${t.role === 'member' ? '' : html`<a href="/teams/${t.teamId}/members">Members of ${t.teamName}</a>`}</td></tr>`,
          )}</tbody></table></div>`,
    );
  });

  app.get('/teams/:id/members', async (req, reply) => {
    const person = await personOrRedirect(deps, req, reply);
    if (!person) return reply;
    const teamId = positiveId((req.params as { id: string }).id);
    const mine = (await membershipsOf(db, person.userId)).find((t) => t.teamId === teamId);
    // Not a member: the same 404 as a team that does not exist.
    if (!mine) throw new BerthError('not_found');
    if (mine.role === 'member') throw new BerthError('role_not_allowed');
    const members = await db
      .selectFrom('team_members as m')
      .innerJoin('users as u', 'u.id', 'm.user_id')
      .select(['u.id', 'u.email', 'u.name', 'm.role'])
      .where('m.team_id', '=', teamId)
      .orderBy('u.email')
      .execute();
    const q = req.query as Record<string, unknown>;
    const notice =
      q.changed === '1' ? 'Role changed. It applies to their tokens from their next request.' : q.removed === '1' ? 'Member removed; their tokens for this team stopped working.' : undefined;
    return sendPage(
      reply,
      { title: `Members of ${mine.teamName}`, person, csrf: person.csrf, current: 'teams' },
      html`${notice ? html`<p class="notice" role="status">${notice}</p>` : ''}
<p>You are ${mine.role === 'owner' ? 'an owner' : 'an admin'} of this team.${mine.role === 'admin' ? ' Admins manage admins and members; owners are changed by owners.' : ''} A team always keeps at least one owner.</p>
<div class="table-wrap"><table>
<thead><tr><th scope="col">Member</th><th scope="col">Role</th><th scope="col"><span class="sr">Actions</span></th></tr></thead>
<tbody>${members.map((m) => {
        const manageable = admin.mayManage(mine.role, m.role);
        const choices = ROLES.filter((r) => admin.mayManage(mine.role, m.role, r));
        return html`<tr>
<td data-label="Member">${m.name} <span class="hint">${m.email}</span></td>
<td data-label="Role">${
          manageable
            ? html`<form method="post" action="/teams/${teamId}/members/${m.id}/role">
<input type="hidden" name="${CSRF_FIELD}" value="${person.csrf}">
<label class="sr" for="role-${m.id}">Role of ${m.email}</label>
<select id="role-${m.id}" name="role">${choices.map((r: Role) => html`<option value="${r}"${r === m.role ? html` selected` : ''}>${r}</option>`)}</select>
<button type="submit" class="secondary">Change</button></form>`
            : m.role
        }</td>
<td>${
          manageable
            ? html`<form method="post" action="/teams/${teamId}/members/${m.id}/remove"><input type="hidden" name="${CSRF_FIELD}" value="${person.csrf}"><button type="submit" class="danger" aria-label="Remove ${m.email}">Remove</button></form>`
            : ''
        }</td>
</tr>`;
      })}</tbody></table></div>
<p class="hint">New members are added with <code>berth team add-member</code>.</p>`,
    );
  });

  app.post('/teams/:id/members/:userId/role', async (req, reply) => {
    const person = await personOrRedirect(deps, req, reply);
    if (!person) return reply;
    const f = formOf(req);
    await sessions.checkCsrf(req, field(f, CSRF_FIELD));
    const p = req.params as { id: string; userId: string };
    const teamId = positiveId(p.id);
    const userId = positiveId(p.userId);
    const role = field(f, 'role');
    await consoleChange(deps, req, person.userId, (trx) => admin.changeRoleAs(trx, { teamId, actorId: person.userId, userId, role }), {
      operation: 'update_team_member',
      args: { team_id: teamId, user_id: userId, role },
      team: teamId,
      facts: () => ({ teamId, targets: [`team:${teamId}`, `user:${userId}`] }),
    });
    return reply.redirect(`/teams/${teamId}/members?changed=1`, 303);
  });

  app.post('/teams/:id/members/:userId/remove', async (req, reply) => {
    const person = await personOrRedirect(deps, req, reply);
    if (!person) return reply;
    await sessions.checkCsrf(req, field(formOf(req), CSRF_FIELD));
    const p = req.params as { id: string; userId: string };
    const teamId = positiveId(p.id);
    const userId = positiveId(p.userId);
    await consoleChange(deps, req, person.userId, (trx) => admin.removeMemberAs(trx, { teamId, actorId: person.userId, userId }), {
      operation: 'remove_team_member',
      args: { team_id: teamId, user_id: userId },
      team: teamId,
      // The tokens revoked with the membership are named, as a revocation's entry names its token.
      facts: (revoked) => ({ teamId, targets: [`team:${teamId}`, `user:${userId}`, ...revoked.map((id) => `token:${id}`)] }),
    });
    // Removing oneself ends one's access to the page.
    return reply.redirect(Number(p.userId) === person.userId ? '/teams' : `/teams/${teamId}/members?removed=1`, 303);
  });
}
