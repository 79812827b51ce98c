import type { Logger } from 'pino';
import type { Runtime } from '../core/runtime.js';
import type { JobQueues } from '../limits/job-queues.js';
import { nowIso, type Db } from '../store/db.js';

/** The largest deployment log kept; older lines are dropped first. */
const MAX_LOG_CHARS = 1_000_000;

/**
 * Runs deployments (deploy, start, stop, restart) through the per-server queues. A deployment is
 * a row first (queued), so a restart finds what was waiting; a row found in progress at start
 * was cut off by a crash and is marked failed, never reported as done.
 */
export class Jobs {
  private readonly running = new Map<number, AbortController>();

  constructor(
    private readonly db: Db,
    private readonly queues: JobQueues,
    private readonly runtime: Runtime,
    private readonly logger: Logger,
  ) {}

  /** Resumes after a restart: cut-off deployments fail, queued ones are queued again. */
  async start(): Promise<void> {
    const cut = await this.db
      .updateTable('deployments')
      .set({ status: 'failed', finished_at: nowIso(), updated_at: nowIso() })
      .where('status', '=', 'in_progress')
      .executeTakeFirst();
    if (cut.numUpdatedRows > 0n) this.logger.warn({ count: Number(cut.numUpdatedRows) }, 'deployments cut off by a restart marked failed');
    const queued = await this.db.selectFrom('deployments').select(['id', 'server_id']).where('status', '=', 'queued').orderBy('id').execute();
    for (const d of queued) await this.enqueue(d.id, d.server_id).catch((err) => this.logger.error({ err, deploymentId: d.id }, 'could not requeue'));
  }

  /** Puts a deployment on its server's queue; 429 "Deployment queue is full." when it is. */
  async enqueue(deploymentId: number, serverId: number): Promise<void> {
    const { done } = await this.queues.submit(String(serverId), () => this.run(deploymentId));
    done.catch((err) => this.logger.error({ err, deploymentId }, 'deployment job failed'));
  }

  /** Cancels a queued or running deployment; false when it already ended. */
  async cancel(deploymentId: number): Promise<boolean> {
    const r = await this.db
      .updateTable('deployments')
      .set({ status: 'cancelled', finished_at: nowIso(), updated_at: nowIso() })
      .where('id', '=', deploymentId)
      .where('status', 'in', ['queued', 'in_progress'])
      .executeTakeFirst();
    this.running.get(deploymentId)?.abort();
    return r.numUpdatedRows > 0n;
  }

  private async run(deploymentId: number): Promise<void> {
    const claimed = await this.db
      .updateTable('deployments')
      .set({ status: 'in_progress', started_at: nowIso(), updated_at: nowIso() })
      .where('id', '=', deploymentId)
      .where('status', '=', 'queued')
      .executeTakeFirst();
    if (claimed.numUpdatedRows === 0n) return; // cancelled while it waited
    const controller = new AbortController();
    this.running.set(deploymentId, controller);
    const log = async (line: string) => {
      const row = await this.db.selectFrom('deployments').select('logs').where('id', '=', deploymentId).executeTakeFirstOrThrow();
      const logs = `${row.logs}${new Date().toISOString()} ${line}\n`.slice(-MAX_LOG_CHARS);
      await this.db.updateTable('deployments').set({ logs, updated_at: nowIso() }).where('id', '=', deploymentId).execute();
    };
    let status: 'finished' | 'failed';
    try {
      status = await this.runtime.runDeployment(deploymentId, { db: this.db, log, signal: controller.signal });
    } catch (err) {
      status = 'failed';
      await log(`failed: ${(err as Error).message}`).catch(() => undefined);
    } finally {
      this.running.delete(deploymentId);
    }
    await this.db
      .updateTable('deployments')
      .set({ status, finished_at: nowIso(), updated_at: nowIso() })
      .where('id', '=', deploymentId)
      .where('status', '=', 'in_progress')
      .execute();
  }
}
