import type { Kysely } from 'kysely';
import { autoId } from '../portable.js';

/**
 * Scheduled tasks (Coolify's ScheduledTask): a command run inside an application's or a service's
 * container on a schedule, and its executions. Both go with their resource (ON DELETE CASCADE); a
 * migration changes the resource's destination, not its row, so its tasks follow it.
 * `last_due` is the latest schedule time claimed: an instance runs a firing only when its
 * conditional update moved it forward, so several instances never run one firing twice.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await autoId(db.schema.createTable('scheduled_tasks'))
    .addColumn('uuid', 'text', (c) => c.notNull().unique())
    .addColumn('team_id', 'integer', (c) => c.notNull().references('teams.id').onDelete('cascade'))
    .addColumn('resource_id', 'integer', (c) => c.notNull().references('resources.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('command', 'text', (c) => c.notNull())
    .addColumn('frequency', 'text', (c) => c.notNull())
    .addColumn('container', 'text')
    .addColumn('timeout', 'integer', (c) => c.notNull().defaultTo(300))
    .addColumn('enabled', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('last_due', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('scheduled_tasks_resource').on('scheduled_tasks').columns(['resource_id']).execute();

  await autoId(db.schema.createTable('scheduled_task_executions'))
    .addColumn('uuid', 'text', (c) => c.notNull().unique())
    .addColumn('task_id', 'integer', (c) => c.notNull().references('scheduled_tasks.id').onDelete('cascade'))
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('message', 'text')
    .addColumn('logs', 'text')
    .addColumn('exit_code', 'integer')
    .addColumn('scheduled_for', 'text')
    .addColumn('started_at', 'text', (c) => c.notNull())
    .addColumn('finished_at', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    // A second guard beside last_due: one execution per task and schedule time (NULLs: on demand).
    .addUniqueConstraint('scheduled_task_run_once', ['task_id', 'scheduled_for'])
    .execute();
  await db.schema.createIndex('scheduled_task_executions_task').on('scheduled_task_executions').columns(['task_id', 'id']).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('scheduled_task_executions').execute();
  await db.schema.dropTable('scheduled_tasks').execute();
}
