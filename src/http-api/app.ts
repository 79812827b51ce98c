import { STATUS_CODES } from 'node:http';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import type { Config } from '../config/config.js';
import { BerthError, toWire, unexpected, validationError, type WireError } from '../errors.js';
import type { Core } from '../core/gate.js';
import { HEALTH_LIMIT, rateHeaders, rateLimited } from '../limits/rate-limits.js';
import { movedToPostPaths, routesOf, type Operation } from '../core/operation.js';
import { accessOf } from '../http-common/access.js';
import { buildOpenApi } from './openapi.js';
import { BadBody } from '../http-common/body.js';
import { compileRoutes, type RouteEntry } from './routes.js';
import { storeReachable } from '../store/db.js';
import { inputProblem } from '../core/input-guard.js';
import { BERTH_VERSION } from '../core/operations/platform.js';
import { PUBLIC_ROUTES } from './public-routes.js';
import { guardPath, MAX_SEGMENT, pathProblems } from './path-guard.js';
import { jsonArrayStream, STREAM_FROM } from './json-stream.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The operation a route serves, for the checks an early refusal still runs first. */
    op?: Operation;
  }
}

export interface HttpAppOptions {
  core: Core;
  operations: readonly Operation[];
  config: Config;
  logger: Logger;
  /** Routes another door adds to this app afterwards (src/http-server.ts mounts /mcp): they answer 405 and are charged like the API's. */
  mounted?: readonly { method: string; path: string }[];
}

function send(reply: FastifyReply, wire: WireError): FastifyReply {
  return reply.code(wire.status).headers(wire.headers).send(wire.body);
}

/** Fastify's own failures (bad JSON, wrong content type, ...) in the contract's terms. */
function fromFastifyError(err: Error & { code?: string; statusCode?: number }): BerthError {
  if (err instanceof BerthError) return err;
  switch (err.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return validationError({ body: ['The body is not valid JSON.'] });
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return validationError({ body: ['Send the body as application/json.'] });
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return validationError({ body: ['The body does not match its Content-Length.'] });
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return validationError({ body: ['The body is too large.'] });
    // Only if guardPath missed a case: a 422 that names the path and never echoes it.
    case 'FST_ERR_BAD_URL':
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return validationError({ path: ['The path cannot be read.'] });
  }
  if (err instanceof SyntaxError) return validationError({ body: ['The body is not valid JSON.'] });
  return unexpected(err);
}

/** A body with its REST names (Operation.http.bodyNames) turned into input names; both given is a 422. */
function renameBody(body: Record<string, unknown>, names: Readonly<Record<string, string>> | undefined): Record<string, unknown> {
  if (!names) return body;
  const out = { ...body };
  for (const [rest, input] of Object.entries(names)) {
    if (!Object.hasOwn(out, rest)) continue;
    if (Object.hasOwn(out, input)) throw validationError({ [rest]: [`Give ${rest} or ${input}, not both.`] });
    out[input] = out[rest];
    delete out[rest];
  }
  return out;
}

/** The request as an operation's input: path, body and the query fields the route takes. */
function inputOf(req: FastifyRequest, op: Operation): Record<string, unknown> {
  const unreadable = pathProblems(req.raw, req.routeOptions.url ?? '');
  if (unreadable) throw validationError(unreadable);
  const body = req.body;
  if (body instanceof BadBody) throw validationError({ body: [body.reason] });
  // null is JSON but not an object: "no fields" is an empty body or {}.
  if (body !== undefined && (body === null || typeof body !== 'object' || Array.isArray(body))) {
    throw validationError({ body: ['Expected a JSON object.'] });
  }
  const params = (req.params ?? {}) as Record<string, string>;
  const fromBody = renameBody((body ?? {}) as Record<string, unknown>, op.http.bodyNames);
  const query = req.query as Record<string, unknown>;
  for (const part of [fromBody, query]) {
    const problem = inputProblem(part);
    if (problem) throw validationError({ [problem.field]: [problem.message] });
  }
  // HEAD is a GET without its body (Fastify serves it with the GET route).
  // The POST Coolify also answers on a read (http.alsoPost) takes its fields from the query as the GET does.
  if (req.method !== 'GET' && req.method !== 'HEAD' && req.method !== 'DELETE' && !(op.http.alsoPost && op.http.method === 'GET')) refuseStrayQuery(op, query, fromBody);
  // The router already parsed the path's parameters; no need to re-read the template per request.
  const clash = Object.keys(params).filter((n) => Object.hasOwn(fromBody, n));
  if (clash.length) throw validationError(Object.fromEntries(clash.map((n) => [n, ['This field is taken from the path and cannot be set in the body.']])));
  return { ...query, ...fromBody, ...params };
}

/**
 * A write (POST, PATCH, PUT) takes from its query only the fields its declaration names
 * (http.query, Coolify's `POST /deploy?uuid=`): any other query field is a 422, never silently
 * input, and a field may not come from both.
 */
function refuseStrayQuery(op: Operation, query: Record<string, unknown>, body: Record<string, unknown>): void {
  const errors: Record<string, string[]> = {};
  for (const name of Object.keys(query)) {
    if (op.http.query?.includes(name)) {
      if (Object.hasOwn(body, name)) errors[name] = ['Give this field in the query string or the body, not both.'];
    } else
      errors[name] = [
        op.http.path.includes(`{${name}}`)
          ? 'This field is taken from the path.'
          : Object.hasOwn(op.input.shape, name)
            ? 'Send this field in the JSON body, not the query string.'
            : 'This field is not allowed.',
      ];
  }
  if (Object.keys(errors).length) throw validationError(errors);
}

export async function buildHttpApp(opts: HttpAppOptions): Promise<FastifyInstance> {
  const { core, operations, config, logger, mounted = [] } = opts;
  const app = Fastify({
    loggerInstance: logger as FastifyBaseLogger,
    // One line per request, written by the onResponse hook below, instead of Fastify's two.
    logController: new LogController({ disableRequestLogging: true }),
    // No child logger per request (a measurable share of a request's CPU): the two lines berth
    // logs about a request carry its id themselves.
    childLoggerFactory: (parent) => parent,
    trustProxy: config.trustProxy.length ? config.trustProxy : false,
    bodyLimit: 1024 * 1024,
    return503OnClosing: true,
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: MAX_SEGMENT },
    // A segment the router would refuse is kept for a 422 after the contract's checks (path-guard.ts).
    rewriteUrl: (req) => guardPath(req),
    frameworkErrors: (err, _req, reply) => void send(reply, toWire(fromFastifyError(err))),
    // A request Node cannot even parse has no route or token to check: the contract's shape all the same.
    clientErrorHandler: (err: Error & { code?: string }, socket) => {
      // A reset peer hears nothing (as Fastify's own handler does).
      if (err.code === 'ECONNRESET' || !socket.writable) {
        socket.destroy();
        return;
      }
      const [status, message] =
        err.code === 'HPE_HEADER_OVERFLOW' ? [431, 'Request headers too large.'] : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? [408, 'The request took too long to arrive.'] : [400, 'Bad request.'];
      const body = JSON.stringify({ message });
      socket.end(`HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
    },
  });

  // Bodies are parsed leniently and judged in the handler, after authentication and the
  // permission check, so a bad body never answers before the contract's earlier checks.
  // JSON only: Fastify's text/plain parser would hand a string on, a different answer from every other type's.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => {
    const text = (body as string).trim();
    // An empty body on a JSON POST (POST /enable with Content-Type set) means "no fields".
    if (text === '') return done(null, undefined);
    try {
      done(null, JSON.parse(text));
    } catch {
      done(null, new BadBody('The body is not valid JSON.'));
    }
  });
  app.addContentTypeParser('*', (_req, _payload, done) => done(null, new BadBody('Send the body as application/json.')));

  // Every API and /mcp response carries the bucket's state once the core has charged it.
  // berth's own version on every answer (/api/v1/version answers the Coolify API version).
  app.addHook('onSend', (req, reply, payload, done) => {
    reply.header('X-Berth-Version', BERTH_VERSION);
    if (req.berthAccess?.rate) reply.headers(rateHeaders(req.berthAccess.rate));
    done(null, payload);
  });
  if (logger.isLevelEnabled('info')) {
    app.addHook('onResponse', (req, reply, done) => {
      // url goes through the logger's redactUrl serializer: ?api_token=… never reaches a log.
      req.log.info({ reqId: req.id, method: req.method, url: req.url, status: reply.statusCode, ms: Math.round(reply.elapsedTime), ip: req.ip }, 'request');
      done();
    });
  }

  app.setErrorHandler(async (err: Error & { code?: string }, req, reply) => {
    let e = fromFastifyError(err);
    // A body Fastify refused before the handler (too large, short of its Content-Length) is
    // answered after the route's own checks, as every other bad body is.
    const op = req.routeOptions.config.op;
    if (op && err.code?.startsWith('FST_ERR_CTP_')) {
      try {
        await core.authorizeAudited(op, await core.admit(accessOf(req), op));
      } catch (earlier) {
        e = fromFastifyError(earlier as Error);
      }
    }
    if (e.kind === 'internal') req.log.error({ reqId: req.id, err }, 'unhandled error');
    if (e.kind === 'store_unavailable') req.log.warn({ reqId: req.id, error: err.message }, 'store unavailable');
    return send(reply, toWire(e));
  });

  const routes: RouteEntry[] = compileRoutes([...operations.flatMap((o) => routesOf(o)), ...PUBLIC_ROUTES.map((r) => ({ method: 'GET', path: r.path })), ...mounted]);

  app.setNotFoundHandler(async (req, reply) => {
    const url = req.url.split('?')[0]!.replace(/\/+$/, '') || '/';
    // A request to the API's space is charged even when no route matches, so probing costs too.
    if (url.startsWith('/api/v1/') || mounted.some((r) => r.path === url)) await core.chargeAddress(accessOf(req));
    const matching = routes.filter((r) => r.pattern.test(url));
    const allow = matching.map((r) => r.method);
    if (allow.length) {
      // A read also answers HEAD (Fastify's own HEAD route of a GET).
      if (matching.some((r) => r.method === 'GET')) allow.push('HEAD');
      return send(reply, toWire(new BerthError('method_not_allowed', { allow: [...new Set(allow)] })));
    }
    return send(reply, toWire(new BerthError('route_not_found')));
  });

  // Liveness, at berth's path and at Coolify's (the public routes that answer OK).
  for (const { path } of PUBLIC_ROUTES.filter((r) => r.text === 'OK')) {
    app.get(path, async (req, reply) => {
      const access = accessOf(req);
      try {
        access.rate = await core.deps.limits.charge(HEALTH_LIMIT, `addr:${req.ip}`);
      } catch (err) {
        // Liveness asks nothing of Redis: with the shared limiter away the process is still
        // alive, and restarting it would not bring Redis back. Unlimited until it returns.
        if (unexpected(err).kind !== 'store_unavailable') throw err;
      }
      if (access.rate && !access.rate.allowed) throw rateLimited(access.rate);
      return reply.type('text/plain; charset=utf-8').send('OK');
    });
  }

  // Readiness, for a load balancer: this instance can reach its store (and Redis, through the
  // limiter, when configured). 503 with the contract's body when it cannot; /api/health stays
  // the liveness check that asks nothing of them.
  app.get('/api/ready', async (req, reply) => {
    const access = accessOf(req);
    access.rate = await core.deps.limits.charge(HEALTH_LIMIT, `addr:${req.ip}`);
    if (!access.rate.allowed) throw rateLimited(access.rate);
    await storeReachable(core.deps.db);
    return reply.type('text/plain; charset=utf-8').send('READY');
  });

  // Public, like Coolify's published document: it describes the API, not anyone's data.
  let openapi: string | undefined;
  app.get('/api/v1/openapi.json', async (_req, reply) => reply.type('application/json; charset=utf-8').send((openapi ??= JSON.stringify(buildOpenApi(operations)))));

  const urlOf = (path: string) => path.replace(/\{([a-z_]+)\}/g, ':$1');
  for (const op of operations) {
    // Coolify's answer to a GET on a route it moved to POST, after the same token and permission
    // checks as the POST (its route carries them too); nothing runs. No HEAD route: a HEAD gets the plain 405.
    for (const path of movedToPostPaths(op))
      app.route({
        method: 'GET',
        url: urlOf(path),
        config: { op },
        exposeHeadRoute: false,
        handler: async (req) => {
          await core.authorizeAudited(op, await core.admit(accessOf(req), op));
          throw new BerthError('post_required');
        },
      });
    for (const { method, path } of routesOf(op)) {
      app.route({
        method,
        url: urlOf(path),
        config: { op },
        handler: async (req, reply) => {
          const caller = await core.admit(accessOf(req), op);
          // Permission before the body is even read: a refused caller never learns about its input.
          await core.authorizeAudited(op, caller);
          const input = inputOf(req, op);
          // A list without page and per_page answers every item, as Coolify's do (CallOptions.everyItem).
          const everyItem = op.http.list === true && !Object.hasOwn(req.query as object, 'page') && !Object.hasOwn(req.query as object, 'per_page');
          const output = (await core.run(op, caller, input, everyItem ? { everyItem } : {})) as Record<string, unknown>;
          reply.code(op.http.status ?? 200);
          if (op.http.text) return reply.type('text/plain; charset=utf-8').send(String(output[op.http.text]));
          if (op.http.list) {
            const { items, total, page, per_page } = output as { items: unknown[]; total: number; page: number; per_page: number };
            reply.headers({ 'X-Total-Count': String(total), 'X-Page': String(page), 'X-Per-Page': String(everyItem ? items.length : per_page) });
            // Every item of a long list (Coolify's clients ask for all): streamed, not one string.
            if (items.length > STREAM_FROM) return reply.type('application/json; charset=utf-8').send(jsonArrayStream(items));
            return reply.send(items);
          }
          return reply.send(output);
        },
      });
    }
  }

  return app;
}
