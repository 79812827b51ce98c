import { createHmac, hash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { isPermission, ROLE_MAY_HOLD, type Role } from '../auth/permissions.js';
import { hashSecret, mintSecret } from '../auth/token.js';
import { permissionsOfScope, SCOPES } from '../auth/oauth/scopes.js';
import { OAUTH_ROUTES } from '../auth/oauth/routes.js';
import type { LoadedOAuth, OAuthServer } from '../auth/oauth/server.js';
import { BerthError } from '../errors.js';
import { consoleChange } from './console-audit.js';
import type { Db } from '../store/db.js';
import type { LimitSpec, RateLimits } from '../limits/rate-limits.js';
import { consentPage, messagePage, preselected } from './consent-page.js';
import { loginPath, type CurrentPerson } from './person.js';
import { originRefused } from './session.js';

export interface OAuthRouteOptions {
  db: Db;
  oauth: OAuthServer;
  currentPerson: CurrentPerson;
  /**
   * Charges the request's source address to the general rate limit (registration, tokens and
   * consent posts cost like any API request, so they cannot be hammered); throws when over.
   */
  chargeAddress: (req: FastifyRequest) => Promise<void>;
  /** The instance's rate limits, for registrations per source address. */
  limits: RateLimits;
  /** BERTH_OAUTH_REGISTRATIONS_PER_HOUR; 0: no limit of its own. */
  registrationsPerHour: number;
}

/** Paths answered by oidc-provider itself (its Koa app), the RFC 8414 metadata included. */
const PROVIDER_PATHS = [
  '/.well-known/oauth-authorization-server',
  '/.well-known/openid-configuration',
  OAUTH_ROUTES.authorization,
  `${OAUTH_ROUTES.authorization}/:uid`,
  OAUTH_ROUTES.token,
  OAUTH_ROUTES.registration,
  `${OAUTH_ROUTES.registration}/:id`,
  OAUTH_ROUTES.revocation,
  OAUTH_ROUTES.jwks,
];

const sameSecret = (a: string, b: string): boolean => timingSafeEqual(hash('sha256', a, 'buffer'), hash('sha256', b, 'buffer'));

/** The consent form's CSRF token: bound to this authorization request and this person. */
const csrfFor = (key: string, uid: string, userId: number): string => createHmac('sha256', key).update(`consent|${uid}|${userId}`).digest('base64url');

// No form-action: the form's answer redirects to the client, whose redirect URI may be a custom
// scheme (an IDE's), and browsers apply form-action to that redirect too.
const html = (reply: FastifyReply, status: number, body: string) =>
  reply
    .code(status)
    .headers({
      'content-type': 'text/html; charset=utf-8',
      'cache-control': 'no-store',
      'x-frame-options': 'DENY',
      'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'",
    })
    .send(body);

/**
 * The authorization server's routes: the protected resource's metadata (RFC 9728), oidc-provider's
 * endpoints handed the raw request (it parses its own bodies), and the consent page.
 */
export function registerOAuthRoutes(app: FastifyInstance, opts: OAuthRouteOptions): void {
  const { db, oauth, currentPerson, chargeAddress, limits } = opts;
  // Anyone may register a client: per address, registrations are few (an application registers
  // once per berth), so the store cannot be filled with them (each is kept up to 24 h unused).
  const registrations: LimitSpec | null = opts.registrationsPerHour > 0 ? { bucket: 'oauth-register', limit: opts.registrationsPerHour, windowMs: 3_600_000 } : null;

  // RFC 9728, at the path-suffixed URL for /mcp (the MCP spec's first choice) and at the root.
  const resourceMetadata = async (_req: FastifyRequest, reply: FastifyReply) =>
    reply.header('cache-control', 'public, max-age=300').send({
      resource: oauth.resource,
      authorization_servers: [oauth.issuer],
      scopes_supported: [...SCOPES],
      bearer_methods_supported: ['header'],
      resource_name: 'berth MCP server',
    });
  app.get('/.well-known/oauth-protected-resource', resourceMetadata);
  app.get('/.well-known/oauth-protected-resource/mcp', resourceMetadata);

  app.register(async (scope) => {
    // oidc-provider reads the body itself: nothing here consumes it.
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', (_req, _payload, done) => done(null, undefined));
    let handle: ReturnType<LoadedOAuth['provider']['callback']> | undefined;
    const toProvider = async (req: FastifyRequest, reply: FastifyReply) => {
      if (req.method === 'POST') await chargeAddress(req);
      if (registrations && req.method === 'POST' && req.url.split('?')[0] === OAUTH_ROUTES.registration) {
        const d = await limits.charge(registrations, req.ip);
        if (!d.allowed) {
          // OAuth's error shape (RFC 7591 §3.2.2), as the client's registration code reads it.
          return reply
            .code(429)
            .headers({ 'retry-after': String(Math.max(1, Math.ceil((d.resetAt - Date.now()) / 1000))), 'cache-control': 'no-store' })
            .send({ error: 'temporarily_unavailable', error_description: `Too many client registrations from this address (${d.limit} an hour); try again later.` });
        }
      }
      // RFC 8414's metadata is the same document as OpenID discovery; oidc-provider serves the latter.
      if (req.raw.url?.startsWith('/.well-known/oauth-authorization-server')) req.raw.url = req.raw.url.replace('/.well-known/oauth-authorization-server', '/.well-known/openid-configuration');
      handle ??= (await oauth.load()).provider.callback();
      reply.hijack();
      await handle(req.raw, reply.raw);
    };
    for (const url of PROVIDER_PATHS) scope.route({ method: ['GET', 'POST', 'OPTIONS', 'DELETE', 'PUT'], url, handler: toProvider });
  });

  app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: 16 * 1024 }, (_req, body, done) => done(null, new URLSearchParams(body as string)));
    scope.addContentTypeParser('*', (_req, _payload, done) => done(null, undefined));

    scope.get<{ Params: { uid: string } }>('/oauth/consent/:uid', async (req, reply) => consent(req, reply, null));
    scope.post<{ Params: { uid: string } }>('/oauth/consent/:uid', async (req, reply) => {
      await chargeAddress(req);
      // Another site's form (Origin names it, or "null"): refused before anything is read, as the
      // console's checkCsrf refuses; no Origin (older browsers, same-origin navigations) passes.
      if (originRefused(req, new URL(oauth.issuer).origin)) return html(reply, 403, messagePage('Refused', "This answer did not come from berth's own page."));
      return consent(req, reply, req.body instanceof URLSearchParams ? req.body : new URLSearchParams());
    });
  });

  async function consent(req: FastifyRequest<{ Params: { uid: string } }>, reply: FastifyReply, form: URLSearchParams | null) {
    const { provider, errors: oidcErrors } = await oauth.load();
    let details: Awaited<ReturnType<typeof provider.interactionDetails>>;
    try {
      details = await provider.interactionDetails(req.raw, reply.raw);
    } catch (err) {
      if (err instanceof oidcErrors.SessionNotFound) return html(reply, 400, messagePage('This request has expired', 'Start connecting again from your application.'));
      throw err;
    }
    if (details.uid !== req.params.uid) return html(reply, 400, messagePage('This request has expired', 'Start connecting again from your application.'));
    const path = `/oauth/consent/${details.uid}`;
    const person = await currentPerson(req);
    if (!person) {
      if (form) return html(reply, 403, messagePage('Signed out', 'Sign in and answer the request again.'));
      return reply.code(303).header('location', loginPath(path)).send();
    }
    const csrf = csrfFor(oauth.csrfKey, details.uid, person.userId);
    const clientId = String(details.params.client_id);
    const client = await provider.Client.find(clientId);
    if (!client) return html(reply, 400, messagePage('Unknown application', 'This application is not registered with berth.'));
    const teams = (await db
      .selectFrom('team_members as m')
      .innerJoin('teams as t', 't.id', 'm.team_id')
      .select(['t.id', 't.name', 'm.role'])
      .where('m.user_id', '=', person.userId)
      .orderBy('t.id')
      .execute()) as { id: number; name: string; role: Role }[];
    if (!teams.length) return html(reply, 403, messagePage('No team', 'You are not a member of any team, so there is nothing to allow.'));

    const requested = permissionsOfScope(String(details.params.scope ?? ''));
    const view = {
      action: path,
      csrf,
      clientName: client.clientName ?? clientId,
      clientId,
      redirectHost: hostOf(String(details.params.redirect_uri ?? '')),
      teams,
      ticked: preselected(requested, teams[0]!.role),
      permissions: SCOPES,
    };
    if (!form) return html(reply, 200, consentPage(view));

    if (!sameSecret(form.get('csrf') ?? '', csrf)) return html(reply, 403, messagePage('This form has expired', 'Reload the page and answer again.'));
    if (form.get('decision') !== 'approve') {
      const to = await provider.interactionResult(req.raw, reply.raw, { error: 'access_denied', error_description: 'The person declined the request.' }, { mergeWithLastSubmission: false });
      return reply.code(303).header('location', to).send();
    }
    const team = teams.find((t) => String(t.id) === form.get('team'));
    if (!team) return html(reply, 422, consentPage({ ...view, error: 'Choose one of your teams.' }));
    // Never more than the person's role in that team allows (root only for owners and admins).
    const chosen = SCOPES.filter((p) => form.getAll('permission').includes(p) && isPermission(p) && ROLE_MAY_HOLD[team.role].has(p));
    if (!chosen.length) return html(reply, 422, consentPage({ ...view, team: team.id, error: 'Choose at least one permission your role in this team allows.' }));
    // Root is given only on a second, explicit answer: the page asks again with it still ticked.
    if (chosen.includes('root') && form.get('confirm_root') !== 'yes') return html(reply, 200, consentPage({ ...view, team: team.id, ticked: chosen, confirmRoot: true }));

    const grant = new provider.Grant({ accountId: String(person.userId), clientId });
    grant.addResourceScope(oauth.resource, chosen.join(' '));
    // What was asked and not given is declined (an answered request, not a missing one); berth's
    // permissions are never granted as OpenID scopes: tokens carry the resource scope alone.
    const declined = requested.filter((p) => !chosen.includes(p));
    if (declined.length) grant.rejectResourceScope(oauth.resource, declined.join(' '));
    if (requested.length) grant.rejectOIDCScope(requested.join(' '));
    if (
      String(details.params.scope ?? '')
        .split(' ')
        .includes('openid')
    )
      grant.addOIDCScope('openid');
    const grantId = await grant.save();
    const now = new Date();
    const approved = await consoleChange(
      { db, logger: req.log },
      req,
      person.userId,
      async (trx): Promise<number | null> => {
        // The membership may have changed since the page was shown.
        const m = await trx.selectFrom('team_members').select('role').where('team_id', '=', team.id).where('user_id', '=', person.userId).executeTakeFirst();
        if (!m || !chosen.every((p) => ROLE_MAY_HOLD[m.role as Role].has(p))) return null;
        const row = await trx
          .insertInto('api_tokens')
          .values({
            name: (client.clientName ?? clientId).slice(0, 255),
            user_id: person.userId,
            team_id: team.id,
            // A secret nobody holds: this row is never an API token, only the approval's record.
            token_hash: hashSecret(mintSecret()),
            permissions: JSON.stringify(chosen),
            expires_at: new Date(now.getTime() + oauth.grantTtlS * 1000).toISOString(),
            last_used_at: null,
            created_at: now.toISOString(),
            oauth_grant_id: grantId,
            oauth_client_id: clientId,
          })
          .returning('id')
          .executeTakeFirstOrThrow();
        return row.id;
      },
      // The console's door: the person approves a client; the row's id and the client are named.
      {
        operation: 'approve_oauth_client',
        args: { client_id: clientId, team_id: team.id, permissions: chosen },
        status: 201,
        team: team.id,
        facts: (id) => ({ teamId: team.id, targets: id === null ? [] : [`token:${id}`, `oauth_client:${clientId}`] }),
        refused: (id) => (id === null ? new BerthError('conflict') : undefined),
      },
    );
    if (approved === null) return html(reply, 409, messagePage('Your role changed', 'Reload the page and answer again.'));
    const to = await provider.interactionResult(req.raw, reply.raw, { login: { accountId: String(person.userId) }, consent: { grantId } }, { mergeWithLastSubmission: false });
    return reply.code(303).header('location', to).send();
  }
}

function hostOf(uri: string): string {
  try {
    return new URL(uri).host || uri;
  } catch {
    return uri;
  }
}
