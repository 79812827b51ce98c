import type { Kysely } from 'kysely';

/**
 * A server's reverse proxy (Coolify's `proxy`): its type, redirects, TLS issuer and the saved
 * compose configuration, as JSON; null for the defaults (no proxy). Its status is never stored:
 * the engine says it.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('servers').addColumn('proxy', 'text').execute();
}
