import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { consumeLoginLink, issueLoginLink, linkUrl, LOGIN_LINK_TTL_MS, loginLinkLive, userByEmail } from '../../auth/login-links.js';
import { authenticationOptions, finishAuthentication } from '../../auth/passkeys.js';
import { consoleChange, rootTeam } from '../console-audit.js';
import { ASSET_PATHS } from '../assets.js';
import { baseUrl, charge, field, formOf, LINKS_PER_EMAIL, relyingParty, safeNext, SIGN_IN_PER_ADDRESS, type ConsoleDeps } from '../context.js';
import { html } from '../html.js';
import { sendPage } from '../layout.js';
import { CSRF_FIELD, CSRF_HEADER } from '../session.js';

/** How long the sign-in page remembers where the person was going (an OAuth request's is 10 min). */
const NEXT_COOKIE_S = 600;

/** Sign-in: a one-time link (by mail or from `berth login-link`), then passkeys; sign-out. */
export function signInPages(app: FastifyInstance, deps: ConsoleDeps): void {
  const { sessions, db } = deps;

  /**
   * Where to go once signed in: the form's `next`, else the one the sign-in page remembered. A
   * link from `berth login-link` carries none, yet the person came from somewhere (a consent
   * page) in this browser and should land back there.
   */
  const nextAfterSignIn = (req: FastifyRequest, reply: FastifyReply, given: unknown): string => {
    const remembered = sessions.readCookie(req, 'next');
    if (remembered !== undefined) sessions.clearCookie(req, reply, 'next');
    return safeNext(given) || safeNext(remembered);
  };

  app.get('/', async (req, reply) => reply.redirect((await sessions.currentPerson(req)) ? '/tokens' : '/login', 303));

  app.get('/login', async (req, reply) => {
    const next = safeNext((req.query as Record<string, unknown>).next);
    if (await sessions.currentPerson(req)) return reply.redirect(next || '/tokens', 303);
    if (next) sessions.setCookie(req, reply, 'next', next, NEXT_COOKIE_S);
    const csrf = await sessions.csrfToken(req, reply);
    return sendPage(
      reply,
      { title: 'Sign in', csrf, scripts: [ASSET_PATHS.webauthn, ASSET_PATHS.js] },
      html`<section aria-labelledby="with-passkey">
<h2 id="with-passkey">With a passkey</h2>
<p><button type="button" id="passkey-login" data-next="${next}">Sign in with a passkey</button></p>
<p id="passkey-status" role="status" aria-live="polite"></p>
</section>
<section aria-labelledby="with-link">
<h2 id="with-link">With a link by e-mail</h2>
<form class="stack" method="post" action="/login">
  <input type="hidden" name="${CSRF_FIELD}" value="${csrf}">
  <input type="hidden" name="next" value="${next}">
  <div>
    <label for="email">E-mail address</label>
    <input type="email" id="email" name="email" autocomplete="username" required maxlength="254">
  </div>
  <div><button type="submit">Send me a sign-in link</button></div>
</form>
<p class="hint">berth has no passwords. An administrator can also make you a link with <code>berth login-link --email you@example.com</code>.</p>
</section>`,
    );
  });

  app.post('/login', async (req, reply) => {
    const f = formOf(req);
    await sessions.checkCsrf(req, field(f, CSRF_FIELD));
    await charge(deps, SIGN_IN_PER_ADDRESS, req.ip);
    const email = field(f, 'email').trim().toLowerCase().slice(0, 254);
    await charge(deps, LINKS_PER_EMAIL, email);
    // The answer is the same page whether or not the address has an account; the mail goes out
    // after the answer, so its time does not tell either.
    const base = deps.mailer ? baseUrl(deps, req) : null;
    if (deps.mailer && base === null) deps.logger.warn({ host: req.host }, 'sign-in link not mailed: the request named a host that is not BERTH_PUBLIC_URL nor allowed (MCP_ALLOWED_HOSTS)');
    if (deps.mailer && base !== null) {
      const mailer = deps.mailer;
      const next = safeNext(field(f, 'next'));
      void (async () => {
        if (!(await userByEmail(db, email))) return;
        // Nobody is signed in: the entry names the person the link is for (as `berth login-link`'s does).
        const link = await consoleChange(deps, req, null, (trx) => issueLoginLink(trx, email), {
          operation: 'issue_login_link',
          args: { email },
          status: 201,
          facts: async (l, trx) => ({ teamId: await rootTeam(trx), userId: l.userId, targets: [`user:${l.userId}`] }),
        });
        const url = linkUrl(base, link.token) + (next ? `&next=${encodeURIComponent(next)}` : '');
        await mailer.send({
          to: link.email,
          subject: 'Your berth sign-in link',
          text: `Open this link to sign in to berth (it works once, for ${LOGIN_LINK_TTL_MS / 60_000} minutes):\n\n${url}\n\nIf you did not ask for it, ignore this message.`,
        });
      })().catch((err: Error) => deps.logger.warn({ error: err.message }, 'could not send a sign-in link'));
    }
    const csrf = await sessions.csrfToken(req, reply);
    return sendPage(
      reply,
      { title: 'Check your e-mail', csrf },
      html`<p class="notice" role="status">If <strong>${email}</strong> belongs to a berth account, a sign-in link is on its way. It works once, for ${LOGIN_LINK_TTL_MS / 60_000} minutes.</p>
${
  !deps.mailer
    ? html`<p class="alert">This berth has no mail server configured (SMTP_URL), so no mail is sent: ask an administrator to run <code>berth login-link --email you@example.com</code>.</p>`
    : base === null
      ? html`<p class="alert">This berth mails sign-in links only for its configured address (BERTH_PUBLIC_URL or MCP_ALLOWED_HOSTS), not the one you used, so no mail is sent: use that address, or ask an administrator to run <code>berth login-link --email you@example.com</code>.</p>`
      : ''
}
<p><a href="/login">Back to sign-in</a></p>`,
    );
  });

  const invalidLink = (reply: Parameters<typeof sendPage>[0], csrf: string) =>
    sendPage(
      reply,
      { title: 'This link does not work', csrf, status: 400 },
      html`<p class="alert" role="alert">This sign-in link was already used, has expired, or is not a link berth made. Ask for a new one.</p>
<p><a href="/login">Back to sign-in</a></p>`,
    );

  // Opening the link only asks: mail scanners that fetch links must not use it up.
  app.get('/login/link', async (req, reply) => {
    const q = req.query as Record<string, unknown>;
    const token = typeof q.token === 'string' ? q.token : '';
    const csrf = await sessions.csrfToken(req, reply);
    if (!token || !(await loginLinkLive(db, token))) return invalidLink(reply, csrf);
    return sendPage(
      reply,
      { title: 'Sign in to berth', csrf },
      html`<form class="stack" method="post" action="/login/link">
  <input type="hidden" name="${CSRF_FIELD}" value="${csrf}">
  <input type="hidden" name="token" value="${token}">
  <input type="hidden" name="next" value="${safeNext(q.next)}">
  <p>This link signs you in once. Continue?</p>
  <div><button type="submit" id="use-link">Sign in</button></div>
</form>`,
    );
  });

  app.post('/login/link', async (req, reply) => {
    const f = formOf(req);
    await sessions.checkCsrf(req, field(f, CSRF_FIELD));
    await charge(deps, SIGN_IN_PER_ADDRESS, req.ip);
    const userId = await consumeLoginLink(db, field(f, 'token'));
    if (userId === null) return invalidLink(reply, await sessions.csrfToken(req, reply));
    await sessions.start(req, reply, userId);
    const next = nextAfterSignIn(req, reply, field(f, 'next'));
    const hasPasskey = await db.selectFrom('passkeys').select('credential_id').where('user_id', '=', userId).limit(1).executeTakeFirst();
    // First sign-in by link: offer a passkey, then go on.
    return reply.redirect(hasPasskey ? next || '/tokens' : `/passkeys?setup=1${next ? `&next=${encodeURIComponent(next)}` : ''}`, 303);
  });

  app.post('/login/passkey/options', async (req, reply) => {
    await sessions.checkCsrf(req, req.headers[CSRF_HEADER]);
    await charge(deps, SIGN_IN_PER_ADDRESS, req.ip);
    const { options, pending } = await authenticationOptions(db, relyingParty(deps, req));
    sessions.setCookie(req, reply, 'webauthn', pending.handle, 300);
    return reply.send(options);
  });

  app.post('/login/passkey/verify', async (req, reply) => {
    await sessions.checkCsrf(req, req.headers[CSRF_HEADER]);
    await charge(deps, SIGN_IN_PER_ADDRESS, req.ip);
    const body = (req.body ?? {}) as { response?: unknown; next?: unknown };
    const handle = sessions.readCookie(req, 'webauthn');
    sessions.clearCookie(req, reply, 'webauthn');
    const userId = await finishAuthentication(db, relyingParty(deps, req), handle, body.response as never);
    if (userId === null) return reply.code(400).send({ message: 'This passkey did not sign you in.' });
    await sessions.start(req, reply, userId);
    return reply.send({ redirect: nextAfterSignIn(req, reply, body.next) || '/tokens' });
  });

  app.post('/logout', async (req, reply) => {
    await sessions.checkCsrf(req, field(formOf(req), CSRF_FIELD));
    await sessions.end(req, reply);
    return reply.redirect('/login', 303);
  });
}
