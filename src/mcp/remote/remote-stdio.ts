import { z } from 'zod';
import { PERMISSIONS } from '../../auth/permissions.js';
import { createLogger } from '../../logging/logger.js';
import { buildMcpServer, catalogueFor } from '../server.js';
import { serveGuardedStdio } from '../message-guard.js';
import { tools } from '../tools/index.js';
import { visibleTools } from '../tools/registry.js';
import { remoteExecutor } from './executor.js';
import { operationKey, probeUpstream, StartError } from './probe.js';
import { connectUpstream, parseApiUrl } from './upstream.js';

export interface RemoteStdioOptions {
  apiUrl: string;
  token: string | undefined;
  readOnly: boolean;
  toolsets?: string;
  logLevel: string;
}

/** Remote mode's own settings (environment, read once at start). */
const remoteEnv = z.object({
  /** Past this wait for one tool call (429s, Retry-After, backoff), answer "retry after N s". */
  BERTH_API_MAX_WAIT_MS: z.coerce.number().int().min(0).default(60_000),
  /** Timeout of one upstream request (headers, then body). */
  BERTH_API_TIMEOUT_MS: z.coerce.number().int().min(100).default(30_000),
});

/**
 * `berth mcp --api-url URL`: the same tool table as local mode, served on stdio, executed by
 * calling the upstream's REST API (a berth or a Coolify) instead of the in-process core. No store
 * is opened. stdout carries JSON-RPC only; logs and start-up failures go to stderr.
 */
export async function runRemoteStdio(opts: RemoteStdioOptions): Promise<void> {
  const logger = createLogger({ level: opts.logLevel, destination: 'stderr' });
  const token = opts.token?.trim();
  if (!token) throw new Error('set BERTH_TOKEN to an API token of the upstream (<id>|<secret>) to use berth mcp --api-url');
  const env = remoteEnv.safeParse(process.env);
  if (!env.success) throw new Error(`Invalid environment variable ${env.error.issues[0]?.path.join('.')}: ${env.error.issues[0]?.message}`);
  const upstream = parseApiUrl(opts.apiUrl);
  const secrets = [token, token.split('|').slice(1).join('|')];
  const conn = connectUpstream(upstream, token, { timeoutMs: env.data.BERTH_API_TIMEOUT_MS, maxWaitMs: env.data.BERTH_API_MAX_WAIT_MS });

  let facts;
  try {
    facts = await probeUpstream({ fast: conn.probeClient, patient: conn.client }, upstream, secrets);
  } catch (err) {
    await conn.close();
    if (err instanceof StartError) throw new Error(err.message);
    throw err;
  }
  for (const w of facts.warnings) logger.warn(w);

  const offered = facts.offered ? tools.filter((t) => facts.offered!.has(operationKey(t.op))) : tools;
  const caller = { permissions: facts.permissions ?? new Set(PERMISSIONS), rootTeam: facts.rootTeam ?? true };
  const catalogue = catalogueFor(visibleTools(offered, caller, { readOnly: opts.readOnly }), opts.toolsets, true);
  const execute = remoteExecutor({ client: conn.client, upstream, logger, secrets });
  const handle = serveGuardedStdio(() => buildMcpServer({ logger, catalogue, execute, all: offered, readOnly: opts.readOnly }));
  logger.info(
    {
      upstream: upstream.display,
      kind: facts.kind,
      version: facts.version,
      teamId: facts.team?.id,
      tools: catalogue.listed.size,
      reachable: catalogue.reachable.length,
      hidden: tools.length - offered.length,
      permissions: facts.permissions ? [...facts.permissions] : 'unknown',
    },
    'berth mcp ready on stdio (remote)',
  );
  process.stdin.once('end', () => {
    void handle.close().finally(() => conn.close());
  });
}
