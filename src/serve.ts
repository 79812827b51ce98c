import type { FastifyInstance } from 'fastify';
import type { Config } from './config/config.js';
import { defaultPublicUrl } from './config/config.js';
import { initInstance, isInitialized } from './core/admin.js';
import { assembleCore } from './assemble.js';
import { operations } from './core/operations/index.js';
import { buildHttpServer } from './http-server.js';
import { allowedHosts } from './http-common/allowed-hosts.js';
import { oauthConnectedApps } from './console/apps.js';
import { consolePlugin, Sessions } from './console/index.js';
import { TargetGuard } from './core/outbound-guard.js';
import { createLogger } from './logging/logger.js';
import { openStore } from './store/db.js';
import { forgetServedUrl, recordServedUrl } from './store/served-url.js';
import { auditedChange } from './core/audit/cli-door.js';
import { tools } from './mcp/tools/index.js';
import { OAuthServer } from './auth/oauth/server.js';
import type { CurrentPerson } from './console/person.js';

export interface RunningServer {
  url: string;
  app: FastifyInstance;
  /** The authorization server (the console signs its revoke forms with it). */
  oauth: OAuthServer;
  /** The change feed its subscriptions hear (tests: nothing is left behind). */
  changes: { readonly listenerCount: number };
  close(): Promise<void>;
}

/**
 * `berth serve`: the store, the core, the HTTP listener and the workers. On the first start of
 * an empty data directory it creates the instance, once its port is bound, and prints the root
 * token once.
 */
export interface ServerOptions {
  /** The console's sign-in (who is signed in, from the request's session). */
  currentPerson?: CurrentPerson;
}

export async function startServer(config: Config, out: (line: string) => void = console.log, options: ServerOptions = {}): Promise<RunningServer> {
  const logger = createLogger({ level: config.logLevel, destination: 'stdout' });
  const db = await openStore(config.dataDir, config.databaseUrl, config.storeTimeoutMs);
  const assembled = assembleCore(db, config, logger);
  const { core } = assembled;
  const outbound = new TargetGuard(config.outboundAllowedTargets);
  const oauth = new OAuthServer(db, {
    accessTokenTtlS: config.oauthAccessTtlS,
    refreshTokenTtlS: config.oauthRefreshTtlS,
    grantTtlS: config.oauthGrantTtlS,
    clientIdleDays: config.oauthClientIdleDays,
    trustProxy: config.trustProxy.length > 0,
    // Client ID Metadata Documents are fetched like a team's webhook: through the guarded client.
    fetch: (url) => outbound.fetch(url, { method: 'GET', headers: { accept: 'application/json' }, timeoutMs: 5_000 }),
  });
  // People's sessions (the console's sign-in); the consent page asks them who is signed in.
  const sessions = new Sessions(db, { publicUrl: config.publicUrl });
  const currentPerson: CurrentPerson = options.currentPerson ?? ((req) => sessions.currentPerson(req));
  const app = await buildHttpServer({ core, operations, tools, config, logger, oauth, currentPerson });
  const { mailer } = assembled;
  // The console for people at `/`, in its own context (form parsing, HTML error pages).
  await app.register(consolePlugin, {
    db,
    sessions,
    limits: core.deps.limits,
    mailer,
    logger,
    publicUrl: config.publicUrl,
    linkHosts: allowedHosts(config),
    apps: oauthConnectedApps,
    core,
  });
  if (mailer && !config.publicUrl && !allowedHosts(config)) {
    logger.warn('SMTP_URL is set but BERTH_PUBLIC_URL is not, and MCP_ALLOWED_HOSTS names no host: the console mails no sign-in links (their address cannot be trusted from a request)');
  }

  // The port first: a busy one fails here, before a first start creates the instance and prints
  // its root token (which would then be lost with the process).
  const abandon = async (err: unknown): Promise<never> => {
    await app.close().catch(() => undefined);
    await assembled.close().catch(() => undefined);
    await db.destroy();
    throw err;
  };
  await app.listen({ host: config.host, port: config.port }).catch((err: unknown) => abandon(listenError(err, config)));
  if (!(await isInitialized(db))) {
    // Audited as `berth init` is: the cli door, this host (the operator who started serve).
    const init = await auditedChange(db, (trx) => initInstance(trx, {}), {
      operation: 'init_instance',
      args: { team: 'Root Team', api_enabled: true },
      status: 201,
      facts: (r) => ({ teamId: r.team.id, userId: r.user.id, targets: [`team:${r.team.id}`, `user:${r.user.id}`] }),
    }).catch(abandon);
    out(`berth: created a new instance in ${config.databaseUrl ? 'the PostgreSQL store (DATABASE_URL)' : config.dataDir} (team "${init.team.name}", owner ${init.user.email}).`);
    out('berth: root token (shown once, store it now):');
    out(init.token);
  }
  // The background work, started as `berth mcp` starts it (src/assemble.ts).
  await assembled.start();
  const addr = app.server.address();
  const port = typeof addr === 'object' && addr ? addr.port : config.port;
  // PORT=0 asks for any free port: links made from the config (approve_url) name the one it got.
  if (config.port === 0) config.port = port;
  const host = config.host.includes(':') ? `[${config.host}]` : config.host;
  const url = `http://${host}:${port}`;
  // The issuer is the URL people and clients use, the same one the console's sign-in uses (its
  // session cookie must reach the consent page): BERTH_PUBLIC_URL, else http://localhost:PORT.
  const reachedAt = config.publicUrl ?? defaultPublicUrl(config.host, port);
  await oauth.start(reachedAt);
  // For `berth mcp` on this store: the console's address its approval links name.
  await recordServedUrl(db, assembled.jobs.instanceId, reachedAt);

  let closing: Promise<void> | undefined;
  return {
    url,
    app,
    oauth,
    changes: assembled.changes,
    close: () =>
      (closing ??= (async () => {
        // No new requests; in-flight ones finish. Jobs not yet started are handed back (another
        // instance on the same store queues them at once); running ones end here or time out.
        await app.close();
        await forgetServedUrl(db, assembled.jobs.instanceId).catch((err) => logger.warn({ err: (err as Error).message }, 'could not remove the recorded address'));
        await assembled.stop();
        await assembled.close();
        await db.destroy();
        logger.flush();
      })()),
  };
}

/** A listen that failed, said as what to do: a busy port names itself (nothing was created). */
function listenError(err: unknown, config: Config): Error {
  const code = (err as NodeJS.ErrnoException).code;
  const where = `${config.host.includes(':') ? `[${config.host}]` : config.host}:${config.port}`;
  if (code === 'EADDRINUSE') return new Error(`${where} is already in use (another berth serve?); nothing was created: stop it or choose another --port`);
  if (code === 'EACCES') return new Error(`not allowed to listen on ${where}; nothing was created: choose another --port`);
  return err as Error;
}
