import { randomInt } from 'node:crypto';
import { z } from 'zod';
import { atomically } from '../../store/atomic.js';
import type { Db } from '../../store/db.js';
import { nowIso } from '../../store/db.js';
import { validationError } from '../../errors.js';
import { newUuid } from '../../ids.js';
import { ownedResource } from '../lookup.js';
import { deleteOperation } from './resource-delete.js';
import { defineOperation } from '../operation.js';
import { listOf, paged, pageInput } from '../pagination.js';
import { sensitive } from '../redact.js';
import { checkLimits, givenLimits, limitsInput, limitsOutput, limitsView } from '../runtime-fields.js';
import { DATABASE_ENGINES, type DatabaseConfig } from '../model/database.js';
import { description, imageName, name, tags, uuidParam } from '../validators.js';
import { CREATE, messageSchema, READ, stamps, UPDATE } from './common.js';
import { queueDeployment } from './deployments.js';
import { config, newResourceRow, placedSchema, placedView, placedViews, placementInput, type Placements, resolvePlacement, type ResourceRow } from './resource-common.js';
import { DATABASE_KINDS, type DatabaseKind } from '../model/kinds.js';
import { DATABASE_CREATE_FIELDS, DATABASE_UPDATE_FIELDS } from './coolify-fields.js';

const password = () => {
  const a = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
  let s = '';
  for (let i = 0; i < 32; i++) s += a[randomInt(a.length)];
  return s;
};

// Coolify's database password rule: any length from 1 (issue 27); the characters stay shell- and URL-safe.
const secret = z
  .string()
  .min(1)
  .max(256)
  .regex(/^[A-Za-z0-9!#%*+,.:=?@^_~-]+$/, 'Use letters, digits and !#%*+,.:=?@^_~- (no quotes, spaces or $).');
const ident = z
  .string()
  .min(1)
  .max(63)
  .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'Use letters, digits and _.');

/** Type-specific fields, by their Coolify names. Passwords are sensitive. */
const typeFields = {
  postgresql: { postgres_user: ident.optional(), postgres_password: secret.optional(), postgres_db: ident.optional() },
  mysql: { mysql_root_password: secret.optional(), mysql_user: ident.optional(), mysql_password: secret.optional(), mysql_database: ident.optional() },
  mariadb: { mariadb_root_password: secret.optional(), mariadb_user: ident.optional(), mariadb_password: secret.optional(), mariadb_database: ident.optional() },
  redis: { redis_password: secret.optional() },
  mongodb: { mongo_initdb_root_username: ident.optional(), mongo_initdb_root_password: secret.optional(), mongo_initdb_database: ident.optional() },
  clickhouse: { clickhouse_admin_user: ident.optional(), clickhouse_admin_password: secret.optional() },
  dragonfly: { dragonfly_password: secret.optional() },
  keydb: { keydb_password: secret.optional() },
} as const;

const PASSWORD_FIELDS = new Set([
  'postgres_password',
  'mysql_root_password',
  'mysql_password',
  'mariadb_root_password',
  'mariadb_password',
  'redis_password',
  'mongo_initdb_root_password',
  'clickhouse_admin_password',
  'dragonfly_password',
  'keydb_password',
]);

/** Defaults for a new database of a kind: users and names as Coolify's, random passwords. */
function defaults(kind: DatabaseKind): Record<string, string> {
  const e = DATABASE_ENGINES[kind];
  switch (kind) {
    case 'postgresql':
      return { postgres_user: e.user!, postgres_password: password(), postgres_db: e.db! };
    case 'mysql':
      return { mysql_root_password: password(), mysql_user: e.user!, mysql_password: password(), mysql_database: e.db! };
    case 'mariadb':
      return { mariadb_root_password: password(), mariadb_user: e.user!, mariadb_password: password(), mariadb_database: e.db! };
    case 'redis':
      return { redis_password: password() };
    case 'mongodb':
      return { mongo_initdb_root_username: e.user!, mongo_initdb_root_password: password(), mongo_initdb_database: e.db! };
    case 'clickhouse':
      return { clickhouse_admin_user: e.user!, clickhouse_admin_password: password() };
    case 'dragonfly':
      return { dragonfly_password: password() };
    case 'keydb':
      return { keydb_password: password() };
  }
}

/** The URL other containers on the destination's network use (the host is the resource uuid). */
function internalUrl(kind: DatabaseKind, uuid: string, f: Record<string, string>): string {
  const port = DATABASE_ENGINES[kind].port;
  switch (kind) {
    case 'postgresql':
      return `postgres://${f.postgres_user}:${f.postgres_password}@${uuid}:${port}/${f.postgres_db}`;
    case 'mysql':
      return `mysql://${f.mysql_user}:${f.mysql_password}@${uuid}:${port}/${f.mysql_database}`;
    case 'mariadb':
      return `mysql://${f.mariadb_user}:${f.mariadb_password}@${uuid}:${port}/${f.mariadb_database}`;
    case 'redis':
      return `redis://default:${f.redis_password}@${uuid}:${port}/0`;
    case 'mongodb':
      return `mongodb://${f.mongo_initdb_root_username}:${f.mongo_initdb_root_password}@${uuid}:${port}/?directConnection=true`;
    case 'clickhouse':
      return `clickhouse://${f.clickhouse_admin_user}:${f.clickhouse_admin_password}@${uuid}:${port}/${DATABASE_ENGINES.clickhouse.db}`;
    case 'dragonfly':
      return `redis://:${f.dragonfly_password}@${uuid}:${port}/0`;
    case 'keydb':
      return `redis://:${f.keydb_password}@${uuid}:${port}/0`;
  }
}

const allTypeFields = Object.assign({}, ...Object.values(typeFields)) as Record<string, z.ZodOptional<z.ZodString>>;

export const databaseSchema = z.object({
  ...placedSchema,
  database_type: z.string(),
  image: z.string(),
  is_public: z.boolean(),
  public_port: z.number().int().nullable(),
  internal_db_url: sensitive(z.string()),
  ...limitsOutput,
  ...Object.fromEntries(Object.keys(allTypeFields).map((k) => [k, PASSWORD_FIELDS.has(k) ? sensitive(z.string()) : z.string().optional()])),
});

async function view(db: Db, r: ResourceRow, known?: Placements) {
  const c = config<DatabaseConfig>(r);
  const kind = r.kind as DatabaseKind;
  return {
    ...(await placedView(db, r, known)),
    database_type: `standalone-${kind}`,
    image: c.image,
    is_public: c.is_public,
    public_port: c.public_port,
    internal_db_url: internalUrl(kind, r.uuid, c.fields),
    ...limitsView(c),
    ...c.fields,
  } as z.infer<typeof databaseSchema>;
}

const common = {
  name: name.optional(),
  description: description.optional(),
  image: imageName.optional(),
  is_public: z.boolean().optional(),
  public_port: z.number().int().min(1024).max(65535).nullable().optional(),
  tags: tags.optional(),
  ...limitsInput,
};

function createOperation(kind: DatabaseKind) {
  return defineOperation({
    name: `create_${kind}_database`,
    title: `Create a ${kind} database`,
    description: `Create a ${kind} database with a persistent data volume on a server, in a project environment (project_uuid, server_uuid, environment_name). Passwords are generated unless given; limits_* as Coolify. Nothing runs until you deploy or start it.`,
    summary: `Create a ${kind} database with a persistent volume (not started unless instant_deploy).`,
    permission: 'write',
    toolset: 'databases',
    input: () => z.strictObject({ ...placementInput, ...common, ...typeFields[kind], instant_deploy: z.boolean().optional() }),
    output: () => z.object({ uuid: z.string(), internal_db_url: sensitive(z.string()), deployment_uuid: z.string().optional() }),
    annotations: CREATE,
    http: { method: 'POST', path: `/api/v1/databases/${kind}`, status: 201 },
    unsupported: DATABASE_CREATE_FIELDS,
    async run(ctx, i) {
      const { db, caller } = ctx;
      const place = await resolvePlacement(db, caller.teamId, i, 'database');
      const uuid = newUuid();
      const input = i as Record<string, unknown>;
      const given = Object.fromEntries(
        Object.keys(typeFields[kind])
          .filter((k) => input[k] !== undefined)
          .map((k) => [k, String(input[k])]),
      );
      const c: DatabaseConfig = {
        image: i.image ?? DATABASE_ENGINES[kind].image,
        is_public: Boolean(i.is_public && i.public_port),
        public_port: i.public_port ?? null,
        fields: { ...defaults(kind), ...given },
        ...givenLimits(i),
      };
      checkLimits(c);
      const row = await db.transaction().execute(async (trx) => {
        const r = await trx
          .insertInto('resources')
          .values(newResourceRow({ uuid, teamId: caller.teamId, kind: kind, place, name: i.name ?? `${kind}-database-${uuid}`, description: i.description, tags: i.tags }, c))
          .returningAll()
          .executeTakeFirstOrThrow();
        await trx
          .insertInto('storages')
          .values({ uuid: newUuid(), resource_id: r.id, name: 'data', mount_path: DATABASE_ENGINES[kind].dataDir, container: null, engine_volume: null, ...stamps() })
          .execute();
        return r;
      });
      const deployment = i.instant_deploy ? await queueDeployment(ctx, row, 'deploy', false) : undefined;
      return { uuid, internal_db_url: internalUrl(kind, uuid, c.fields), ...(deployment ? { deployment_uuid: deployment.uuid } : {}) };
    },
  });
}

export const databaseOperations = [
  defineOperation({
    name: 'list_databases',
    title: 'List databases',
    description: "List the team's databases. Passwords and connection URLs are included only with read:sensitive.",
    summary: 'List the databases of the team.',
    permission: 'read',
    toolset: 'databases',
    input: () => z.strictObject({ ...pageInput }),
    output: () => listOf(databaseSchema),
    annotations: READ,
    http: { method: 'GET', path: '/api/v1/databases', list: true },
    async run({ db, caller }, p) {
      const base = db
        .selectFrom('resources')
        .where('team_id', '=', caller.teamId)
        .where('kind', 'in', [...DATABASE_KINDS]);
      return paged(
        base,
        p,
        (q) => q.selectAll().orderBy('id'),
        (rows) => placedViews(db, rows, view),
      );
    },
  }),
  ...DATABASE_KINDS.map(createOperation),
  defineOperation({
    name: 'get_database',
    title: 'Get a database',
    description: 'Get a database. Passwords and internal_db_url need read:sensitive.',
    default: true,
    summary: 'Get a database (passwords and URLs need read:sensitive).',
    permission: 'read',
    toolset: 'databases',
    input: () => z.strictObject({ uuid: uuidParam }),
    output: () => databaseSchema,
    annotations: READ,
    http: { method: 'GET', path: '/api/v1/databases/{uuid}' },
    async run({ db, caller }, { uuid }) {
      return view(db, await ownedResource(db, uuid, caller.teamId, DATABASE_KINDS));
    },
  }),
  defineOperation({
    name: 'update_database',
    title: 'Update a database',
    description: "Change a database (name, image, credentials of its own type, Coolify's limits_*). Restart it for the change to apply.",
    summary: 'Change a database; restart it for the change to apply.',
    permission: 'write',
    toolset: 'databases',
    input: () => z.strictObject({ uuid: uuidParam, ...common, ...allTypeFields }),
    output: () => messageSchema,
    annotations: UPDATE,
    http: { method: 'PATCH', path: '/api/v1/databases/{uuid}' },
    unsupported: DATABASE_UPDATE_FIELDS,
    async run({ db: store, caller }, { uuid, name: n, description: d, image, is_public, public_port, tags: t, ...rest }) {
      // Read, merge and write the config in one transaction: concurrent PATCHes of different
      // fields both land.
      return atomically(store, async (db) => {
        const r = await ownedResource(db, uuid, caller.teamId, DATABASE_KINDS);
        const c = config<DatabaseConfig>(r);
        const limits = givenLimits(rest);
        const fields = Object.fromEntries(Object.entries(rest).filter(([k]) => !(k in limitsInput)));
        Object.assign(c, limits);
        checkLimits(c);
        const allowed = Object.keys(typeFields[r.kind as DatabaseKind]);
        const foreign = Object.keys(fields).filter((k) => (fields as Record<string, unknown>)[k] !== undefined && !allowed.includes(k));
        if (foreign.length) {
          throw validationError(Object.fromEntries(foreign.map((k) => [k, [`Not a field of a ${r.kind} database.`]])));
        }
        for (const [k, v] of Object.entries(fields)) if (v !== undefined) c.fields[k] = v as string;
        if (image !== undefined) c.image = image;
        if (public_port !== undefined) c.public_port = public_port;
        if (is_public !== undefined) c.is_public = is_public;
        // Public only with a port, as at create: removing the port makes it private again.
        c.is_public = c.is_public && c.public_port !== null;
        await db
          .updateTable('resources')
          .set({ name: n ?? r.name, description: d === undefined ? r.description : d, tags: t ? JSON.stringify(t) : r.tags, config: JSON.stringify(c), updated_at: nowIso() })
          .where('id', '=', r.id)
          .execute();
        return { message: 'Database updated.' };
      });
    },
  }),
  deleteOperation('databases'),
];
