import type { FastifyInstance } from 'fastify';
import { deletePasskey, finishRegistration, listPasskeys, registrationOptions } from '../../auth/passkeys.js';
import { BerthError } from '../../errors.js';
import { ASSET_PATHS } from '../assets.js';
import { consoleChange, rootTeam } from '../console-audit.js';
import { field, formOf, personOr401, personOrRedirect, relyingParty, safeNext, type ConsoleDeps } from '../context.js';
import { html } from '../html.js';
import { sendPage } from '../layout.js';
import { CSRF_FIELD, CSRF_HEADER } from '../session.js';

/** A person's passkeys: add one (offered right after a link sign-in), list, remove. */
export function passkeyPages(app: FastifyInstance, deps: ConsoleDeps): void {
  const { sessions, db } = deps;

  app.get('/passkeys', async (req, reply) => {
    const person = await personOrRedirect(deps, req, reply);
    if (!person) return reply;
    const q = req.query as Record<string, unknown>;
    const setup = q.setup === '1';
    const next = safeNext(q.next);
    const keys = await listPasskeys(db, person.userId);
    return sendPage(
      reply,
      { title: 'Passkeys', person, csrf: person.csrf, current: 'passkeys', scripts: [ASSET_PATHS.webauthn, ASSET_PATHS.js] },
      html`${setup ? html`<p class="notice" role="status">You are signed in. Add a passkey to sign in next time without a link.</p>` : ''}
<section aria-labelledby="add">
<h2 id="add">Add a passkey</h2>
<div class="stack">
  <div>
    <label for="passkey-name">Name</label>
    <input type="text" id="passkey-name" maxlength="100" value="Passkey" aria-describedby="passkey-name-hint">
    <p class="hint" id="passkey-name-hint">To tell your devices apart, e.g. "work laptop".</p>
  </div>
  <div><button type="button" id="passkey-register" data-next="${setup ? next || '/tokens' : '/passkeys'}">Add a passkey</button>
  ${setup ? html` <a href="${next || '/tokens'}">Not now</a>` : ''}</div>
  <p id="passkey-status" role="status" aria-live="polite"></p>
</div>
</section>
<section aria-labelledby="yours">
<h2 id="yours">Your passkeys</h2>
${
  keys.length === 0
    ? html`<p>None yet.</p>`
    : html`<div class="table-wrap"><table>
<thead><tr><th scope="col">Name</th><th scope="col">Added</th><th scope="col">Last used</th><th scope="col"><span class="sr">Actions</span></th></tr></thead>
<tbody>${keys.map(
        (k) => html`<tr>
<td data-label="Name">${k.name}</td><td data-label="Added">${k.created_at.slice(0, 10)}</td><td data-label="Last used">${k.last_used_at?.slice(0, 16).replace('T', ' ') ?? 'never'}</td>
<td><form method="post" action="/passkeys/${encodeURIComponent(k.id)}/delete"><input type="hidden" name="${CSRF_FIELD}" value="${person.csrf}"><button type="submit" class="danger" aria-label="Remove passkey ${k.name}">Remove</button></form></td>
</tr>`,
      )}</tbody></table></div>`
}
</section>`,
    );
  });

  app.post('/passkeys/register/options', async (req, reply) => {
    const person = await personOr401(deps, req);
    await sessions.checkCsrf(req, req.headers[CSRF_HEADER]);
    const { options, pending } = await registrationOptions(db, relyingParty(deps, req), { id: person.userId, email: person.email, name: person.name });
    sessions.setCookie(req, reply, 'webauthn', pending.handle, 300);
    return reply.send(options);
  });

  app.post('/passkeys/register/verify', async (req, reply) => {
    const person = await personOr401(deps, req);
    await sessions.checkCsrf(req, req.headers[CSRF_HEADER]);
    const body = (req.body ?? {}) as { response?: unknown; name?: unknown };
    const handle = sessions.readCookie(req, 'webauthn');
    sessions.clearCookie(req, reply, 'webauthn');
    const name = typeof body.name === 'string' ? body.name : '';
    const key = await consoleChange(deps, req, person.userId, (trx) => finishRegistration(trx, relyingParty(deps, req), person.userId, handle, body.response as never, name), {
      // The name only: the credential and its public key are passkey material, never in an entry.
      operation: 'create_passkey',
      args: { name },
      status: 201,
      facts: async (_, trx) => ({ teamId: await rootTeam(trx), targets: [`user:${person.userId}`] }),
      refused: (k) => (k ? undefined : new BerthError('bad_request')),
    });
    if (!key) return reply.code(400).send({ message: 'The passkey could not be verified; try again.' });
    return reply.send(key);
  });

  app.post('/passkeys/:id/delete', async (req, reply) => {
    const person = await personOrRedirect(deps, req, reply);
    if (!person) return reply;
    await sessions.checkCsrf(req, field(formOf(req), CSRF_FIELD));
    const id = (req.params as { id: string }).id;
    await consoleChange(
      deps,
      req,
      person.userId,
      async (trx) => {
        // Its name tells the person's passkeys apart in the entry; the credential id stays out.
        const key = await trx.selectFrom('passkeys').select('name').where('user_id', '=', person.userId).where('credential_id', '=', id).executeTakeFirst();
        if (!key || !(await deletePasskey(trx, person.userId, id))) throw new BerthError('not_found');
        return key;
      },
      { operation: 'delete_passkey', args: {}, facts: async (key, trx) => ({ teamId: await rootTeam(trx), targets: [`user:${person.userId}`, `passkey:${key.name}`] }) },
    );
    return reply.redirect('/passkeys', 303);
  });
}
