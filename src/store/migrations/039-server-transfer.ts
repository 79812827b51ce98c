import type { Kysely } from 'kysely';

/**
 * A server's transfer between berth instances (docs/decisions/server-transfer.md): JSON
 * { status: imported | claimed | transferred, export_id, at, source_instance_url?,
 * target_instance_url? }; null for a server that never moved. A server imported unclaimed or
 * transferred away is not managed here (is_usable 0, validate refused) until it is claimed.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('servers').addColumn('transfer', 'text').execute();
}
