import { randomUUID } from 'node:crypto';
import type { Selectable } from 'kysely';
import { nowIso, type Db } from '../../store/db.js';
import type { McpTasksTable, McpTaskStatus } from '../../store/schema-mcp-tasks.js';
import type { StartedJob } from '../../core/operation.js';

export type TaskRow = Selectable<McpTasksTable>;

/** Whose a task is: the token that made it, in its team. Every read and change is scoped to it. */
export interface TaskOwner {
  teamId: number;
  tokenId: number;
}

/** A protocol-level error a task ended with (JSON-RPC code and message). */
export interface TaskError {
  code: number;
  message: string;
  data?: unknown;
}

const ACTIVE: McpTaskStatus[] = ['working', 'input_required'];
export const isTerminal = (s: McpTaskStatus) => !ACTIVE.includes(s);

/** What an instance whose lease lapsed leaves: the same words on every such task. */
export const LAPSED_MESSAGE = 'The berth instance running this task stopped before it ended; its deployment or migration, if it started one, ends by the job rules (see docs/mcp.md, Tasks).';

/**
 * The mcp_tasks table (migration 035). A task is made working, leased to the instance that runs
 * it, and leaves working once, by one conditional UPDATE (finished by its instance, cancelled by
 * its token, or failed by any instance once its lease lapsed): whichever comes first wins.
 */
export class TaskStore {
  constructor(private readonly db: Db) {}

  async create(owner: TaskOwner, tool: string, ttlMs: number, lease: { owner: string; until: number }): Promise<TaskRow> {
    const now = new Date();
    const row = {
      task_id: randomUUID(),
      team_id: owner.teamId,
      token_id: owner.tokenId,
      tool,
      status: 'working' as const,
      status_message: 'The call is running.',
      result: null,
      error: null,
      job_kind: null,
      job_uuid: null,
      ttl_ms: ttlMs,
      lease_owner: lease.owner,
      lease_until: lease.until,
      created_at: now.toISOString(),
      updated_at: now.toISOString(),
      expires_at: new Date(now.getTime() + ttlMs).toISOString(),
    };
    const { id } = await this.db.insertInto('mcp_tasks').values(row).returning('id').executeTakeFirstOrThrow();
    return { id, ...row };
  }

  /** The owner's task, or undefined: another token's, an expired one and a missing one look the same. */
  get(owner: TaskOwner, taskId: string): Promise<TaskRow | undefined> {
    return this.db
      .selectFrom('mcp_tasks')
      .selectAll()
      .where('task_id', '=', taskId)
      .where('token_id', '=', owner.tokenId)
      .where('team_id', '=', owner.teamId)
      .where('expires_at', '>', nowIso())
      .executeTakeFirst();
  }

  /** One page of the owner's tasks, oldest first, after the task named by `after` (undefined: that task is not the owner's). */
  async list(owner: TaskOwner, after: string | undefined, limit: number): Promise<{ rows: TaskRow[]; more: boolean } | undefined> {
    let afterId = 0;
    if (after !== undefined) {
      const row = await this.get(owner, after);
      if (!row) return undefined;
      afterId = row.id;
    }
    const rows = await this.db
      .selectFrom('mcp_tasks')
      .selectAll()
      .where('token_id', '=', owner.tokenId)
      .where('team_id', '=', owner.teamId)
      .where('expires_at', '>', nowIso())
      .where('id', '>', afterId)
      .orderBy('id')
      .limit(limit + 1)
      .execute();
    return { rows: rows.slice(0, limit), more: rows.length > limit };
  }

  /** Records the job the call queued; the row as it is now (cancelled already, maybe). */
  async setJob(id: number, job: StartedJob): Promise<TaskRow | undefined> {
    await this.db.updateTable('mcp_tasks').set({ job_kind: job.kind, job_uuid: job.uuid, updated_at: nowIso() }).where('id', '=', id).execute();
    return this.db.selectFrom('mcp_tasks').selectAll().where('id', '=', id).executeTakeFirst();
  }

  /** Ends an active task; false when it had ended already (cancelled, or failed by a lapsed lease). */
  async finish(id: number, end: { status: 'completed'; result: unknown } | { status: 'failed'; error: TaskError }): Promise<boolean> {
    const r = await this.db
      .updateTable('mcp_tasks')
      .set({
        status: end.status,
        status_message: end.status === 'completed' ? 'The call has ended.' : end.error.message,
        result: end.status === 'completed' ? JSON.stringify(end.result) : null,
        error: end.status === 'failed' ? JSON.stringify(end.error) : null,
        lease_owner: null,
        lease_until: null,
        updated_at: nowIso(),
      })
      .where('id', '=', id)
      .where('status', 'in', ACTIVE)
      .executeTakeFirst();
    return r.numUpdatedRows > 0n;
  }

  /** Cancels the owner's active task: the row after, 'terminal' when it had ended, undefined when it is not the owner's. */
  async cancel(owner: TaskOwner, taskId: string): Promise<TaskRow | 'terminal' | undefined> {
    const row = await this.get(owner, taskId);
    if (!row) return undefined;
    const r = await this.db
      .updateTable('mcp_tasks')
      .set({ status: 'cancelled', status_message: 'Cancelled by the client.', lease_owner: null, lease_until: null, updated_at: nowIso() })
      .where('id', '=', row.id)
      .where('status', 'in', ACTIVE)
      .executeTakeFirst();
    if (r.numUpdatedRows === 0n) return 'terminal';
    return this.db.selectFrom('mcp_tasks').selectAll().where('id', '=', row.id).executeTakeFirst();
  }

  /** Renews this instance's leases; the ids of its tasks that are no longer active (ended elsewhere). */
  async renew(leaseOwner: string, until: number, local: readonly number[]): Promise<number[]> {
    await this.db.updateTable('mcp_tasks').set({ lease_until: until }).where('lease_owner', '=', leaseOwner).where('status', 'in', ACTIVE).execute();
    if (!local.length) return [];
    const ended = await this.db.selectFrom('mcp_tasks').select('id').where('id', 'in', local).where('status', 'not in', ACTIVE).execute();
    return ended.map((r) => r.id);
  }

  /** Ends failed every active task whose instance stopped renewing its lease (one statement: any instance may run it). */
  async failLapsed(now = Date.now()): Promise<number> {
    const error: TaskError = { code: -32603, message: LAPSED_MESSAGE };
    const r = await this.db
      .updateTable('mcp_tasks')
      .set({ status: 'failed', status_message: LAPSED_MESSAGE, error: JSON.stringify(error), lease_owner: null, lease_until: null, updated_at: nowIso() })
      .where('status', 'in', ACTIVE)
      .where('lease_until', '<', now)
      .executeTakeFirst();
    return Number(r.numUpdatedRows);
  }

  /** Removes the tasks whose ttl has passed. */
  async sweepExpired(now = nowIso()): Promise<number> {
    const r = await this.db.deleteFrom('mcp_tasks').where('expires_at', '<=', now).executeTakeFirst();
    return Number(r.numDeletedRows);
  }
}
