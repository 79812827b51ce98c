import { z } from 'zod';
import type { PrivateKeysTable } from '../../store/schema.js';
import { nowIso } from '../../store/db.js';
import { inspectPrivateKey, KeyProblem, type InspectedKey } from '../../ssh/key-material.js';
import { atomically } from '../../store/atomic.js';
import { BerthError, isForeignKeyViolation, validationError } from '../../errors.js';
import { newUuid } from '../../ids.js';
import { owned } from '../lookup.js';
import { defineOperation } from '../operation.js';
import { listOf, paged, pageInput } from '../pagination.js';
import { sensitive } from '../redact.js';
import { description, name, privateKeyPem, uuidParam } from '../validators.js';
import { CREATE, DELETE, READ, UPDATE, messageSchema, stamps, uuidSchema } from './common.js';

export const keySchema = z.object({
  id: z.number().int(),
  uuid: z.string(),
  name: z.string(),
  description: z.string().nullable(),
  fingerprint: z.string().describe('SHA256:… as ssh-keygen -lf prints it.'),
  public_key: z.string().describe('The authorized_keys line of the public half (what goes on the server).'),
  /** Never in lists; in a single key only with read:sensitive or root. */
  private_key: sensitive(z.string()),
  team_id: z.number().int(),
  created_at: z.string(),
  updated_at: z.string(),
});

/** The key's public half and SSH fingerprint; a 422 on private_key saying why it cannot be used. */
async function inspectKey(text: string): Promise<InspectedKey> {
  try {
    return await inspectPrivateKey(text);
  } catch (err) {
    if (err instanceof KeyProblem) throw validationError({ private_key: [err.message] });
    throw err;
  }
}

type KeyRow = Omit<PrivateKeysTable, 'id'> & { id: number };

function view(k: KeyRow, withKey: boolean) {
  const base = {
    id: k.id,
    uuid: k.uuid,
    name: k.name,
    description: k.description,
    fingerprint: k.fingerprint,
    public_key: k.public_key ?? '',
    team_id: k.team_id,
    created_at: k.created_at,
    updated_at: k.updated_at,
  };
  return withKey ? { ...base, private_key: k.private_key } : base;
}

async function assertUniqueFingerprint(db: import('../../store/db.js').Db, teamId: number, fingerprint: string, exceptId?: number) {
  let q = db.selectFrom('private_keys').select('id').where('team_id', '=', teamId).where('fingerprint', '=', fingerprint);
  if (exceptId !== undefined) q = q.where('id', '!=', exceptId);
  if (await q.executeTakeFirst()) throw validationError({ private_key: ['Private key already exists.'] });
}

const keyFields = { name: name.optional(), description: description.optional(), private_key: privateKeyPem };

export const keyOperations = [
  defineOperation({
    name: 'list_private_keys',
    title: 'List private keys',
    description: "List the team's SSH private keys (name, fingerprint, public key). Key material never appears in a list.",
    summary: 'List the private keys of the team (never the key material).',
    permission: 'read',
    toolset: 'servers',
    input: () => z.strictObject({ ...pageInput }),
    output: () => listOf(keySchema.omit({ private_key: true })),
    annotations: READ,
    http: { method: 'GET', path: '/api/v1/security/keys', list: true },
    async run({ db, caller }, p) {
      const base = db.selectFrom('private_keys').where('team_id', '=', caller.teamId);
      return paged(
        base,
        p,
        (q) => q.selectAll().orderBy('id'),
        (rows) => rows.map((k) => view(k, false)),
      );
    },
  }),
  defineOperation({
    name: 'create_private_key',
    title: 'Store a private key',
    description: 'Store an SSH private key (OpenSSH or PEM, no passphrase). Returns its uuid for create_server; get_private_key shows its public_key, which goes into authorized_keys on the server.',
    summary: 'Store a private key for reaching servers.',
    permission: 'write',
    toolset: 'servers',
    input: () => z.strictObject(keyFields),
    output: () => uuidSchema,
    annotations: CREATE,
    http: { method: 'POST', path: '/api/v1/security/keys', status: 201 },
    async run({ db, caller }, i) {
      const { fingerprint, publicKey } = await inspectKey(i.private_key);
      // No unique index on fingerprints: the check and the insert must be one transaction.
      return atomically(db, async (trx) => {
        await assertUniqueFingerprint(trx, caller.teamId, fingerprint);
        const uuid = newUuid();
        await trx
          .insertInto('private_keys')
          .values({
            uuid,
            team_id: caller.teamId,
            name: i.name ?? `key-${uuid.slice(0, 8)}`,
            description: i.description ?? null,
            private_key: i.private_key,
            fingerprint,
            public_key: publicKey,
            ...stamps(),
          })
          .execute();
        return { uuid };
      });
    },
  }),
  defineOperation({
    name: 'get_private_key',
    title: 'Get a private key',
    description: 'Get one private key: public_key (the authorized_keys line) and SHA256 fingerprint; the private part only with read:sensitive.',
    summary: 'Get a private key (the key itself only with read:sensitive).',
    permission: 'read',
    toolset: 'servers',
    input: () => z.strictObject({ uuid: uuidParam }),
    output: () => keySchema,
    annotations: READ,
    http: { method: 'GET', path: '/api/v1/security/keys/{uuid}' },
    async run({ db, caller }, { uuid }) {
      return view(await owned(db, 'private_keys', uuid, caller.teamId), true) as z.infer<typeof keySchema>;
    },
  }),
  defineOperation({
    name: 'update_private_key',
    title: 'Update a private key',
    description: "Change a private key's name, description or key material.",
    summary: 'Change a private key’s name, description or key material.',
    permission: 'write',
    toolset: 'servers',
    input: () => z.strictObject({ uuid: uuidParam, ...keyFields, private_key: privateKeyPem.optional() }),
    output: () => uuidSchema,
    annotations: UPDATE,
    // Coolify's OpenAPI documents this update as PATCH /security/keys (the key's uuid then in the body).
    http: { method: 'PATCH', path: '/api/v1/security/keys/{uuid}', status: 201, aliases: ['/api/v1/security/keys'] },
    async run({ db, caller }, { uuid, ...i }) {
      // Looked up first (404 before a bad key's 422), inspected outside the transaction (it
      // may take a while), then read again and written in one.
      await owned(db, 'private_keys', uuid, caller.teamId);
      const inspected = i.private_key === undefined ? undefined : await inspectKey(i.private_key);
      return atomically(db, async (trx) => {
        const key = await owned(trx, 'private_keys', uuid, caller.teamId);
        const patch: Partial<KeyRow> = { updated_at: nowIso() };
        if (i.name !== undefined) patch.name = i.name;
        if (i.description !== undefined) patch.description = i.description;
        if (inspected) {
          await assertUniqueFingerprint(trx, caller.teamId, inspected.fingerprint, key.id);
          Object.assign(patch, { private_key: i.private_key, fingerprint: inspected.fingerprint, public_key: inspected.publicKey });
        }
        await trx.updateTable('private_keys').set(patch).where('id', '=', key.id).execute();
        return { uuid };
      });
    },
  }),
  defineOperation({
    name: 'delete_private_key',
    title: 'Delete a private key',
    description: 'Delete a private key. Refused while a server still uses it.',
    summary: 'Delete a private key that no server, GitHub app or deploy-key application uses.',
    permission: 'write',
    toolset: 'servers',
    input: () => z.strictObject({ uuid: uuidParam }),
    output: () => messageSchema,
    annotations: DELETE,
    storeOnly: true,
    http: { method: 'DELETE', path: '/api/v1/security/keys/{uuid}' },
    async run({ db, caller }, { uuid }) {
      const inUse = () => new BerthError('conflict', { message: 'Private Key is in use and cannot be deleted.' });
      try {
        await atomically(db, async (trx) => {
          const key = await owned(trx, 'private_keys', uuid, caller.teamId);
          if (await trx.selectFrom('servers').select('id').where('private_key_id', '=', key.id).executeTakeFirst()) throw inUse();
          // Applications cloned with it as a deploy key name it in their config (no foreign key there).
          const cloning = await trx
            .selectFrom('resources')
            .select('id')
            .where('team_id', '=', caller.teamId)
            .where('kind', '=', 'application')
            .where((w) => w.or([w('config', 'like', `%"private_key_id":${key.id},%`), w('config', 'like', `%"private_key_id":${key.id}}%`)]))
            .executeTakeFirst();
          if (cloning) throw inUse();
          await trx.deleteFrom('private_keys').where('id', '=', key.id).execute();
        });
      } catch (err) {
        // A server that took the key meanwhile holds it (servers do not cascade): same 409.
        if (isForeignKeyViolation(err)) throw inUse();
        throw err;
      }
      return { message: 'Private Key deleted.' };
    },
  }),
];
