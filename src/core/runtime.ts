import type { Db } from '../store/db.js';

/**
 * What the core asks of the machinery that runs things on engines. The core records intent and
 * state; a runtime makes it real. Until a runtime is wired in, `recordOnlyRuntime` keeps the
 * records and says so in every result.
 */
export interface ServerEngine {
  id: number;
  engine_endpoint: string | null;
  engine_tls: string | null;
}

export interface ValidationResult {
  reachable: boolean;
  usable: boolean;
  logs: string;
}

export interface RuntimeJobContext {
  db: Db;
  /** Appends to the deployment's log (sensitive). */
  log(line: string): Promise<void>;
  signal: AbortSignal;
}

export interface Runtime {
  /** True when actions reach real engines; false when only records change. */
  readonly live: boolean;
  validateServer(server: ServerEngine): Promise<ValidationResult>;
  /** Runs a deployment (deploy, start, stop, restart) of a resource; resolves with its final status. */
  runDeployment(deploymentId: number, ctx: RuntimeJobContext): Promise<'finished' | 'failed'>;
  /** Recent logs of a resource's containers. */
  logs(resourceId: number, opts: { lines: number }): Promise<string>;
}

export const RECORD_ONLY_NOTE = 'No engine runtime is wired in yet: berth recorded the change but did not act on any engine.';

export const recordOnlyRuntime: Runtime = {
  live: false,
  async validateServer(server) {
    return {
      reachable: false,
      usable: false,
      logs: server.engine_endpoint ? RECORD_ONLY_NOTE : 'The server has no engine_endpoint, so berth cannot manage it.',
    };
  },
  async runDeployment(id, ctx) {
    const d = await ctx.db.selectFrom('deployments').select(['resource_id', 'kind']).where('id', '=', id).executeTakeFirstOrThrow();
    await ctx.db
      .updateTable('resources')
      .set({ status: d.kind === 'stop' ? 'exited' : 'running', updated_at: new Date().toISOString() })
      .where('id', '=', d.resource_id)
      .execute();
    await ctx.log(RECORD_ONLY_NOTE);
    return 'finished';
  },
  async logs() {
    return '';
  },
};
