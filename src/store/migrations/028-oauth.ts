import type { Kysely } from 'kysely';

/**
 * OAuth 2.1 (berth as its own authorization server, src/auth/oauth): what oidc-provider keeps
 * (registered clients, grants, codes, access and refresh tokens, interactions, sessions) as one
 * keyed table, so any instance answers any step of a flow. Token values are never stored: the
 * key of a row is the SHA-256 of its id, and for tokens the id is the token.
 *
 * A person's approval is also an api_tokens row (oauth_grant_id set, token_hash of a secret
 * nobody holds): it is listed and revoked like any token, and authentication reads its team,
 * permissions and holder's role from it, so revoking it or a role change applies at the next
 * request on every instance (api_tokens is counted by migration 020).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('oauth_store')
    .addColumn('model', 'text', (c) => c.notNull())
    .addColumn('id_hash', 'text', (c) => c.notNull())
    .addColumn('payload', 'text', (c) => c.notNull())
    .addColumn('grant_id', 'text')
    .addColumn('uid', 'text')
    .addColumn('user_code', 'text')
    // Milliseconds since the epoch; null: kept until deleted (registered clients).
    .addColumn('expires_at', 'bigint')
    .addColumn('consumed_at', 'bigint')
    .addPrimaryKeyConstraint('oauth_store_pk', ['model', 'id_hash'])
    .execute();
  await db.schema.createIndex('oauth_store_grant').on('oauth_store').column('grant_id').execute();
  await db.schema.createIndex('oauth_store_uid').on('oauth_store').column('uid').execute();
  await db.schema.createIndex('oauth_store_expires').on('oauth_store').column('expires_at').execute();

  await db.schema.alterTable('api_tokens').addColumn('oauth_grant_id', 'text').execute();
  await db.schema.alterTable('api_tokens').addColumn('oauth_client_id', 'text').execute();
  await db.schema.createIndex('api_tokens_oauth_grant').on('api_tokens').column('oauth_grant_id').unique().execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('api_tokens_oauth_grant').execute();
  await db.schema.alterTable('api_tokens').dropColumn('oauth_client_id').execute();
  await db.schema.alterTable('api_tokens').dropColumn('oauth_grant_id').execute();
  await db.schema.dropTable('oauth_store').execute();
}
