import type { Kysely } from 'kysely';
import { inspectPrivateKey } from '../../ssh/key-material.js';

/**
 * Servers reached over SSH: the pinned host key (`SHA256:…`, trust on first validate) and the
 * root team's host-access switch; a migration remembers its resource's status before it began. Keys keep their OpenSSH public line, and their fingerprints
 * become the SSH ones (`ssh-keygen -lf`) instead of a hash of the DER public key.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('servers').addColumn('host_key_fingerprint', 'text').execute();
  await db.schema
    .alterTable('servers')
    .addColumn('host_access', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema.alterTable('private_keys').addColumn('public_key', 'text').execute();
  // What the resource was doing before a migration, so a failed one puts it back (running again).
  await db.schema.alterTable('migrations_jobs').addColumn('previous_status', 'text').execute();

  const k = db as Kysely<{ private_keys: { id: number; private_key: string; fingerprint: string; public_key: string | null } }>;
  for (const row of await k.selectFrom('private_keys').select(['id', 'private_key']).execute()) {
    // A key that no longer parses keeps its old fingerprint; using it fails with the parser's reason.
    const inspected = await inspectPrivateKey(row.private_key).catch(() => null);
    if (inspected) await k.updateTable('private_keys').set({ fingerprint: inspected.fingerprint, public_key: inspected.publicKey }).where('id', '=', row.id).execute();
  }
}
