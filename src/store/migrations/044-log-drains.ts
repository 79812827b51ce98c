import type { Kysely } from 'kysely';

/**
 * A server's log drains (Coolify's `logdrain_*` server settings): which providers berth ships the
 * logs of the server's containers to, and their settings (license and API keys among them), as
 * JSON; null for the defaults (no drain).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('servers').addColumn('log_drains', 'text').execute();
}
