import type { FastifyInstance } from 'fastify';
import { BerthError } from '../../errors.js';
import { consoleChange } from '../console-audit.js';
import { field, formOf, personOrRedirect, type ConsoleDeps } from '../context.js';
import { html } from '../html.js';
import { sendPage } from '../layout.js';
import { CSRF_FIELD } from '../session.js';

/** Connected apps: the OAuth grants a person gave (deps.apps, filled by the authorization server); revoke. */
export function appPages(app: FastifyInstance, deps: ConsoleDeps): void {
  app.get('/apps', async (req, reply) => {
    const person = await personOrRedirect(deps, req, reply);
    if (!person) return reply;
    const grants = await deps.apps.list(deps.db, person.userId);
    const revoked = (req.query as Record<string, unknown>).revoked === '1';
    return sendPage(
      reply,
      { title: 'Connected apps', person, csrf: person.csrf, current: 'apps' },
      html`${revoked ? html`<p class="notice" role="status">Access revoked: the app is refused from its next request.</p>` : ''}
<p>Apps and agents you let act for you through berth's sign-in (OAuth). Revoking one stops it at its next request.</p>
${
  grants.length === 0
    ? html`<p>No connected apps.</p>`
    : html`<div class="table-wrap"><table>
<thead><tr><th scope="col">App</th><th scope="col">Client id</th><th scope="col">Team</th><th scope="col">Approved by</th><th scope="col">Permissions</th><th scope="col">Last used</th><th scope="col"><span class="sr">Actions</span></th></tr></thead>
<tbody>${grants.map(
        (g) => html`<tr>
<td data-label="App">${g.clientName}</td><td data-label="Client id"><code>${g.clientId}</code></td><td data-label="Team">${g.teamName}</td><td data-label="Approved by">${g.approvedBy}</td>
<td data-label="Permissions">${g.permissions.join(', ')}</td><td data-label="Last used">${g.lastUsedAt?.slice(0, 16).replace('T', ' ') ?? 'never'}</td>
<td><form method="post" action="/apps/${encodeURIComponent(g.id)}/revoke"><input type="hidden" name="${CSRF_FIELD}" value="${person.csrf}"><button type="submit" class="danger" aria-label="Revoke ${g.clientName}">Revoke</button></form></td>
</tr>`,
      )}</tbody></table></div>`
}`,
    );
  });

  app.post('/apps/:id/revoke', async (req, reply) => {
    const person = await personOrRedirect(deps, req, reply);
    if (!person) return reply;
    await deps.sessions.checkCsrf(req, field(formOf(req), CSRF_FIELD));
    const id = (req.params as { id: string }).id;
    const grantId = /^[1-9][0-9]{0,15}$/.test(id) ? Number(id) : null;
    await consoleChange(
      deps,
      req,
      person.userId,
      async (trx) => {
        // Read before it goes: the entry belongs to the approval's team and names its client.
        const row = grantId === null ? undefined : await trx.selectFrom('api_tokens').select(['team_id', 'oauth_client_id']).where('id', '=', grantId).executeTakeFirst();
        if (!row || !(await deps.apps.revoke(trx, person.userId, id))) throw new BerthError('not_found');
        return row;
      },
      // An app's approval is a token row: revoking it is revoke_token from every door (the CLI's too).
      {
        operation: 'revoke_token',
        args: { id: grantId ?? id },
        facts: (row) => ({ teamId: row.team_id, targets: [`token:${grantId}`, `oauth_client:${row.oauth_client_id}`] }),
      },
    );
    return reply.redirect('/apps?revoked=1', 303);
  });
}
