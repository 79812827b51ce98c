import { z } from 'zod';
import type { S3StoragesTable } from '../../store/schema.js';
import { nowIso } from '../../store/db.js';
import { checkBucket } from '../../s3/client.js';
import { validationError } from '../../errors.js';
import { newUuid } from '../../ids.js';
import { owned } from '../lookup.js';
import { defineOperation } from '../operation.js';
import { TargetGuard } from '../outbound-guard.js';
import { sensitive } from '../redact.js';
import { description, name, uuidParam } from '../validators.js';
import { bit, bool, CREATE, DELETE, messageSchema, READ, stamps, UPDATE, uuidSchema } from './common.js';

type Row = Omit<S3StoragesTable, 'id'> & { id: number };

const s3Schema = z.object({
  uuid: z.string(),
  name: z.string(),
  description: z.string().nullable(),
  endpoint: z.string(),
  bucket: z.string(),
  region: z.string(),
  key: sensitive(z.string()),
  secret: sensitive(z.string()),
  is_usable: z.boolean(),
  team_id: z.number().int(),
  created_at: z.string(),
  updated_at: z.string(),
});

const view = (r: Row): z.infer<typeof s3Schema> => ({
  uuid: r.uuid,
  name: r.name,
  description: r.description,
  endpoint: r.endpoint,
  bucket: r.bucket,
  region: r.region,
  key: r.key,
  secret: r.secret,
  is_usable: bool(r.is_usable),
  team_id: r.team_id,
  created_at: r.created_at,
  updated_at: r.updated_at,
});

/** S3's bucket naming rules (what AWS and S3-compatible stores accept). */
const bucket = z
  .string()
  .min(3)
  .max(63)
  .regex(/^[a-z0-9][a-z0-9.-]*[a-z0-9]$/, 'Bucket names use lowercase letters, digits, dots and hyphens, and start and end with a letter or digit.')
  .refine((b) => !b.includes('..') && !/^\d+\.\d+\.\d+\.\d+$/.test(b), 'Bucket names have no two dots in a row and are not IP addresses.');
const secretText = z.string().min(1).max(255);
const fields = {
  name: name.optional(),
  description: description.optional(),
  endpoint: z.string().max(255),
  bucket,
  region: z.string().min(1).max(255),
  key: secretText,
  secret: secretText,
  is_usable: z.boolean().optional(),
};

function checkEndpoint(endpoint: string | undefined, guard: TargetGuard): void {
  if (endpoint === undefined) return;
  const why = guard.urlRefusal(endpoint);
  if (why) throw validationError({ endpoint: [why] });
}

export const s3StorageOperations = [
  defineOperation({
    name: 'list_s3_storages',
    title: 'List S3 storages',
    description: "The team's S3-compatible storages (backup targets): endpoint, bucket, region, is_usable. Keys need read:sensitive.",
    summary: "List the team's S3 storages (backup targets); keys need read:sensitive.",
    permission: 'read',
    toolset: 'backups',
    input: () => z.strictObject({}),
    output: () => z.array(s3Schema),
    annotations: READ,
    http: { method: 'GET', path: '/api/v1/s3-storages' },
    async run({ db, caller }) {
      return (await db.selectFrom('s3_storages').selectAll().where('team_id', '=', caller.teamId).orderBy('id').execute()).map(view);
    },
  }),
  defineOperation({
    name: 'create_s3_storage',
    title: 'Add an S3 storage',
    description: 'Add an S3-compatible storage (endpoint URL, bucket, region, key, secret). Then call validate_s3_storage. Private or loopback endpoints need the operator to allow them.',
    summary: 'Add an S3-compatible storage (endpoint, bucket, region, key, secret); validate it before use.',
    permission: 'write',
    toolset: 'backups',
    input: () => z.strictObject(fields),
    output: () => uuidSchema,
    annotations: CREATE,
    http: { method: 'POST', path: '/api/v1/s3-storages', status: 201 },
    async run({ db, caller, config }, i) {
      checkEndpoint(i.endpoint, new TargetGuard(config.outboundAllowedTargets));
      const uuid = newUuid();
      await db
        .insertInto('s3_storages')
        .values({
          uuid,
          team_id: caller.teamId,
          name: i.name ?? `s3-${uuid.slice(0, 8)}`,
          description: i.description ?? null,
          endpoint: i.endpoint,
          bucket: i.bucket,
          region: i.region,
          key: i.key,
          secret: i.secret,
          is_usable: bit(i.is_usable),
          ...stamps(),
        })
        .execute();
      return { uuid };
    },
  }),
  defineOperation({
    name: 'get_s3_storage',
    title: 'Get an S3 storage',
    description: 'One S3 storage; key and secret only with read:sensitive.',
    summary: 'Get an S3 storage; its key and secret need read:sensitive.',
    permission: 'read',
    toolset: 'backups',
    input: () => z.strictObject({ uuid: uuidParam }),
    output: () => s3Schema,
    annotations: READ,
    http: { method: 'GET', path: '/api/v1/s3-storages/{uuid}' },
    async run({ db, caller }, { uuid }) {
      return view(await owned(db, 's3_storages', uuid, caller.teamId));
    },
  }),
  defineOperation({
    name: 'update_s3_storage',
    title: 'Update an S3 storage',
    description: 'Change an S3 storage. A new endpoint, bucket, region or key clears is_usable: validate again.',
    summary: 'Change an S3 storage; a new endpoint, bucket or key needs a new validate.',
    permission: 'write',
    toolset: 'backups',
    input: () =>
      z.strictObject({
        uuid: uuidParam,
        ...fields,
        endpoint: fields.endpoint.optional(),
        bucket: fields.bucket.optional(),
        region: fields.region.optional(),
        key: secretText.optional(),
        secret: secretText.optional(),
      }),
    output: () => uuidSchema,
    annotations: UPDATE,
    http: { method: 'PATCH', path: '/api/v1/s3-storages/{uuid}' },
    async run({ db, caller, config }, { uuid, ...i }) {
      const s = await owned(db, 's3_storages', uuid, caller.teamId);
      checkEndpoint(i.endpoint, new TargetGuard(config.outboundAllowedTargets));
      const moved = (['endpoint', 'bucket', 'region', 'key', 'secret'] as const).some((k) => i[k] !== undefined && i[k] !== s[k]);
      await db
        .updateTable('s3_storages')
        .set({
          ...(i.name !== undefined ? { name: i.name } : {}),
          ...(i.description !== undefined ? { description: i.description } : {}),
          ...Object.fromEntries((['endpoint', 'bucket', 'region', 'key', 'secret'] as const).filter((k) => i[k] !== undefined).map((k) => [k, i[k]])),
          // Coolify keeps is_usable as given; a changed target is not known to work any more.
          is_usable: i.is_usable !== undefined ? bit(i.is_usable) : moved ? 0 : s.is_usable,
          updated_at: nowIso(),
        })
        .where('id', '=', s.id)
        .execute();
      return { uuid };
    },
  }),
  defineOperation({
    name: 'delete_s3_storage',
    title: 'Delete an S3 storage',
    description: "Delete an S3 storage's record from berth; the bucket and its objects stay.",
    summary: 'Delete an S3 storage record (the bucket and its objects stay).',
    permission: 'write',
    toolset: 'backups',
    input: () => z.strictObject({ uuid: uuidParam }),
    output: () => messageSchema,
    annotations: DELETE,
    http: { method: 'DELETE', path: '/api/v1/s3-storages/{uuid}' },
    async run({ db, caller }, { uuid }) {
      const s = await owned(db, 's3_storages', uuid, caller.teamId);
      await db.deleteFrom('s3_storages').where('id', '=', s.id).execute();
      return { message: 'S3 storage deleted.' };
    },
  }),
  defineOperation({
    name: 'validate_s3_storage',
    title: 'Validate an S3 storage',
    description: 'List the bucket with the stored keys (AWS Signature V4) and record is_usable; the message says what is wrong (bucket, key, secret, endpoint).',
    summary: 'Check that berth can list the bucket with these keys; records is_usable.',
    permission: 'write',
    toolset: 'backups',
    input: () => z.strictObject({ uuid: uuidParam }),
    output: () => z.object({ valid: z.boolean(), message: z.string() }),
    annotations: { readOnly: false, destructive: false, idempotent: true, openWorld: true },
    http: { method: 'POST', path: '/api/v1/s3-storages/{uuid}/validate' },
    async run({ db, caller, config }, { uuid }) {
      const s = await owned(db, 's3_storages', uuid, caller.teamId);
      let message = 'S3 storage connection is valid.';
      let valid = true;
      try {
        await checkBucket(s, new TargetGuard(config.outboundAllowedTargets));
      } catch (err) {
        valid = false;
        message = (err as Error).message;
      }
      await db
        .updateTable('s3_storages')
        .set({ is_usable: bit(valid), updated_at: nowIso() })
        .where('id', '=', s.id)
        .execute();
      return { valid, message };
    },
  }),
];
