import type { Kysely } from 'kysely';
import { autoId } from '../portable.js';

/**
 * MCP tasks (issue 38): a tool call an agent asked to run as a task, its status and, once it
 * ended, what the call answered. A task belongs to the token that made it (no foreign key: a
 * revoked token's tasks simply end with their ttl). The instance running it holds a lease it
 * renews, as jobs do; a task whose lease lapsed is ended failed by any instance. Kept until
 * expires_at (created + ttl), then swept.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await autoId(db.schema.createTable('mcp_tasks'))
    .addColumn('task_id', 'text', (c) => c.notNull().unique())
    .addColumn('team_id', 'integer', (c) => c.notNull().references('teams.id').onDelete('cascade'))
    .addColumn('token_id', 'integer', (c) => c.notNull())
    .addColumn('tool', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('status_message', 'text')
    // JSON: the CallToolResult the call answered (an isError one too), once completed.
    .addColumn('result', 'text')
    // JSON { code, message, data? }: a protocol-level error, when failed.
    .addColumn('error', 'text')
    .addColumn('job_kind', 'text')
    .addColumn('job_uuid', 'text')
    .addColumn('ttl_ms', 'bigint', (c) => c.notNull())
    .addColumn('lease_owner', 'text')
    .addColumn('lease_until', 'bigint')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('mcp_tasks_token').on('mcp_tasks').columns(['token_id', 'id']).execute();
  await db.schema.createIndex('mcp_tasks_status').on('mcp_tasks').columns(['status', 'lease_until']).execute();
  await db.schema.createIndex('mcp_tasks_expires').on('mcp_tasks').column('expires_at').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('mcp_tasks').execute();
}
