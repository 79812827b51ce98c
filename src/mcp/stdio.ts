import type { Config } from '../config/config.js';
import type { RequestAccess } from '../core/caller.js';
import { BerthError } from '../errors.js';
import { assembleCore } from '../assemble.js';
import { createLogger } from '../logging/logger.js';
import { openStore } from '../store/db.js';
import { servedUrl } from '../store/served-url.js';
import { tools } from './tools/index.js';
import { visibleTools } from './tools/registry.js';
import { buildMcpServer, catalogueFor } from './server.js';
import { serveGuardedStdio } from './message-guard.js';
import { LiveSubscriptions } from './resources/live.js';
import { stdioListenCheck } from './resources/stdio-listen.js';
import { McpTaskRunner } from './tasks/runner.js';

export interface StdioOptions {
  token: string | undefined;
  readOnly: boolean;
  /** `--toolsets`: group names, default, all; the default set when absent. */
  toolsets?: string;
}

/**
 * `berth mcp`: the MCP server on stdin/stdout, the core in-process on the same store as `serve`.
 * stdout carries JSON-RPC only; every log line goes to stderr. A stdio client is a local process,
 * so it is checked and charged as the loopback address.
 */
export async function runStdio(config: Config, opts: StdioOptions): Promise<void> {
  const logger = createLogger({ level: config.logLevel, destination: 'stderr' });
  if (!opts.token) throw new Error('set BERTH_TOKEN to an API token (<id>|<secret>) to use berth mcp');
  const db = await openStore(config.dataDir, config.databaseUrl, config.storeTimeoutMs);
  const assembled = assembleCore(db, config, logger);
  const { core } = assembled;
  const access: RequestAccess = { authorization: `Bearer ${opts.token}`, sourceIp: '127.0.0.1', mcp: true, door: 'mcp-stdio' };
  let caller;
  try {
    caller = await core.identify(access);
  } catch (err) {
    await db.destroy();
    await assembled.close();
    if (err instanceof BerthError) throw new Error(`BERTH_TOKEN was refused: ${err.message}`);
    throw err;
  }
  // What the token reaches at start is listed (the listed part grows when the agent enables
  // toolsets). Every call is admitted and checked anew, so a holder's role change applies at the
  // next call: a tool the token lost answers the missing permission, one it gained runs.
  const catalogue = catalogueFor(visibleTools(tools, caller, { readOnly: opts.readOnly }), opts.toolsets, true);
  // The links this process makes for people (approve_url) name the console a running serve
  // recorded, read again at every call: serve may start, stop or move while the agent runs.
  const callerFor = async (tool?: { op: Parameters<typeof core.admit>[1] }) => {
    // A store that does not answer keeps the last address: the call itself says what is wrong.
    if (!config.publicUrl) config.servedUrl = await servedUrl(db).catch(() => config.servedUrl);
    return core.admit(access, tool?.op);
  };
  // One connection, one set of followed resources (2025 subscribe and 2026 listens alike).
  const subscriptions = new LiveSubscriptions();
  const caller0 = caller;
  // Tasks: the owner is the session's token, checked anew on every tasks request.
  const taskRunner = new McpTaskRunner(core, { leaseMs: config.jobLeaseMs, ttlMs: config.mcpTaskTtlMs, maxTtlMs: config.mcpTaskMaxTtlMs }, logger);
  const tasks = { runner: taskRunner, owner: () => core.identify(access), notifies: true };
  const handle = serveGuardedStdio(
    (ctx) =>
      buildMcpServer({
        core,
        logger,
        catalogue,
        all: tools,
        readOnly: opts.readOnly,
        callerFor,
        resources: { core, caller: () => core.admit(access), era: ctx.era, advertise: true, live: { feed: assembled.changes, teamId: caller0.teamId, subscriptions } },
        tasks,
      }),
    stdioListenCheck(core, () => core.admit(access), subscriptions),
  );
  // Resource status comes from the engines, backups and cleanups from their schedules: a
  // desktop-only installation follows and runs them too.
  const startedAt = performance.now();
  // The same background work as `serve` (src/assemble.ts): above all the job leases, renewed
  // here as there, so a long job started through this process is not taken over by a serve
  // sharing the store.
  const ready = assembled.start();
  taskRunner.start();
  // stdin's end is listened for before the start is awaited: a client may send its requests and
  // close stdin while the scheduler is still starting, and a missed 'end' keeps the process alive.
  process.stdin.once('end', () => {
    // A client that closes stdin expects the process to end: the clean-up gets a few seconds, and
    // one that hangs is said on stderr and cut short.
    const deadline = setTimeout(() => {
      logger.warn('berth mcp: clean-up after stdin closed took over 5 s; exiting without it');
      process.exit(0);
    }, 5_000);
    deadline.unref();
    void ready
      .catch(() => undefined)
      .then(() => handle.close())
      .finally(async () => {
        await Promise.all([assembled.stop(), taskRunner.stop()]);
        await Promise.all([db.destroy(), assembled.close()]);
        // Everything is closed: end now, once the log and stdout are flushed, instead of after
        // Node's own teardown of the isolate (measured: tens of ms of a client's spawn → exit).
        logger.flush(() => process.stdout.write('', () => process.exit()));
      });
  });
  await ready;
  logger.info({ tools: catalogue.listed.size, reachable: catalogue.reachable.length, teamId: caller.teamId, backgroundStartMs: Math.round(performance.now() - startedAt) }, 'berth mcp ready on stdio');
}
