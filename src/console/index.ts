import type { FastifyInstance, FastifyPluginAsync } from 'fastify';
import { BerthError, toWire, unexpected } from '../errors.js';
import { ASSETS } from './assets.js';
import type { ConsoleDeps } from './context.js';
import { html } from './html.js';
import { securityHeaders, sendPage } from './layout.js';
import { appPages } from './pages/apps.js';
import { livePages } from './pages/live.js';
import { approvalPages } from './pages/approvals.js';
import { passkeyPages } from './pages/passkeys.js';
import { signInPages } from './pages/sign-in.js';
import { teamPages } from './pages/teams.js';
import { auditPages } from './pages/audit.js';
import { tokenPages } from './pages/tokens.js';

export type { ConsoleDeps } from './context.js';
export { Sessions, type Person } from './session.js';

/** Form bodies as the browser sends them; repeated names (checkboxes) become arrays. */
function parseForm(body: string): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = Object.create(null) as Record<string, string | string[]>;
  for (const [k, v] of new URLSearchParams(body)) {
    const prior = out[k];
    out[k] = prior === undefined ? v : Array.isArray(prior) ? [...prior, v] : [prior, v];
  }
  return out;
}

/**
 * The web console for people, at `/`: server-rendered pages, forms with CSRF tokens, a strict
 * CSP. Mounted as its own Fastify context so its form parser and HTML error pages stay here.
 */
export const consolePlugin: FastifyPluginAsync<ConsoleDeps> = async (app: FastifyInstance, deps: ConsoleDeps) => {
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: 64 * 1024 }, (_req, body, done) => done(null, parseForm(body as string)));

  app.setErrorHandler(async (err: Error, req, reply) => {
    const e = err instanceof BerthError ? err : unexpected(err);
    if (e.kind === 'internal') req.log.error({ reqId: req.id, err }, 'unhandled console error');
    const wire = toWire(e);
    // The pages' scripts post JSON and read JSON; forms and links get a page.
    if ((req.headers['content-type'] ?? '').startsWith('application/json')) return securityHeaders(reply).code(wire.status).headers(wire.headers).send(wire.body);
    const person = await deps.sessions.currentPerson(req).catch(() => null);
    const csrf = person?.csrf;
    const details = Object.values(e.details.errors ?? {}).flat();
    reply.headers(wire.headers);
    return sendPage(
      reply,
      { title: wire.status === 404 ? 'Not found' : wire.status === 429 ? 'Too many attempts' : 'Something went wrong', person, csrf, status: wire.status },
      html`<p class="alert" role="alert">${e.message}</p>${details.length ? html`<ul>${details.map((d) => html`<li>${d}</li>`)}</ul>` : ''}
<p><a href="${person ? '/tokens' : '/login'}">Back</a></p>`,
    );
  });

  for (const [path, asset] of Object.entries(ASSETS)) {
    app.get(path, async (_req, reply) => securityHeaders(reply).header('cache-control', 'public, max-age=3600').type(asset.type).send(asset.body()));
  }
  app.get('/favicon.ico', async (_req, reply) => reply.redirect(Object.keys(ASSETS).find((p) => p.endsWith('.svg'))!, 301));

  signInPages(app, deps);
  passkeyPages(app, deps);
  tokenPages(app, deps);
  appPages(app, deps);
  teamPages(app, deps);
  livePages(app, deps);
  if (deps.core) approvalPages(app, { ...deps, core: deps.core });
  auditPages(app, deps);
};
