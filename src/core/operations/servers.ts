import { z } from 'zod';
import type { Db } from '../../store/db.js';
import { nowIso } from '../../store/db.js';
import type { DestinationsTable, ServersTable } from '../../store/schema.js';
import { BerthError, notFound } from '../errors.js';
import { newUuid } from '../ids.js';
import { owned } from '../lookup.js';
import { defineOperation } from '../operation.js';
import { listOf, paged, pageInput } from '../pagination.js';
import { sensitive } from '../redact.js';
import { description, engineEndpoint, engineName, engineTls, hostAddress, name, sshUser, uuidParam } from '../validators.js';
import { bool, CREATE, DELETE, ENGINE, messageSchema, READ, stamps, UPDATE, uuidSchema } from './common.js';

type Row<T> = Omit<T, 'id'> & { id: number };
type ServerRow = Row<ServersTable>;
type DestinationRow = Row<DestinationsTable>;

/** The default destination's network on every server. */
export const DEFAULT_NETWORK = 'berth';

export const serverSchema = z.object({
  uuid: z.string(),
  name: z.string(),
  description: z.string().nullable(),
  ip: z.string(),
  port: z.number().int(),
  user: z.string(),
  private_key_uuid: z.string().nullable(),
  engine_endpoint: z.string().nullable().describe('berth: where the Docker Engine API of this server is reached.'),
  engine_tls: sensitive(z.object({ ca: z.string(), cert: z.string(), key: z.string() }).nullable()),
  is_reachable: z.boolean(),
  is_usable: z.boolean(),
  /** berth: validated, reachable and usable, so berth moves volume data for it. */
  is_managed: z.boolean(),
  validated_at: z.string().nullable(),
  validation_logs: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
});

export const destinationSchema = z.object({
  uuid: z.string(),
  name: z.string(),
  network: z.string(),
  type: z.literal('standalone'),
  server_uuid: z.string(),
  created_at: z.string(),
  updated_at: z.string(),
});

async function serverView(db: Db, s: ServerRow): Promise<z.infer<typeof serverSchema>> {
  const key = s.private_key_id === null ? undefined : await db.selectFrom('private_keys').select('uuid').where('id', '=', s.private_key_id).executeTakeFirst();
  return {
    uuid: s.uuid,
    name: s.name,
    description: s.description,
    ip: s.ip,
    port: s.port,
    user: s.user,
    private_key_uuid: key?.uuid ?? null,
    engine_endpoint: s.engine_endpoint,
    engine_tls: s.engine_tls ? JSON.parse(s.engine_tls) : null,
    is_reachable: bool(s.is_reachable),
    is_usable: bool(s.is_usable),
    is_managed: bool(s.is_reachable) && bool(s.is_usable) && s.engine_endpoint !== null,
    validated_at: s.validated_at,
    validation_logs: s.validation_logs,
    created_at: s.created_at,
    updated_at: s.updated_at,
  };
}

export function destinationView(d: DestinationRow, serverUuid: string): z.infer<typeof destinationSchema> {
  return { uuid: d.uuid, name: d.name, network: d.network, type: 'standalone', server_uuid: serverUuid, created_at: d.created_at, updated_at: d.updated_at };
}

/** A private key of the caller's team by uuid; another team's is refused like a missing one. */
async function keyIdFor(db: Db, teamId: number, uuid: string | null | undefined): Promise<number | null | undefined> {
  if (uuid === undefined) return undefined;
  if (uuid === null) return null;
  const k = await db.selectFrom('private_keys').select('id').where('uuid', '=', uuid).where('team_id', '=', teamId).executeTakeFirst();
  if (!k) throw notFound();
  return k.id;
}

const serverFields = {
  name: name.optional(),
  description: description.optional(),
  ip: hostAddress,
  port: z.number().int().min(1).max(65535).optional(),
  user: sshUser.optional(),
  private_key_uuid: uuidParam.nullable().optional(),
  engine_endpoint: engineEndpoint.nullable().optional(),
  engine_tls: engineTls.nullable().optional(),
};

export const serverOperations = [
  defineOperation({
    name: 'list_servers',
    summary: 'List the servers of the team.',
    permission: 'read',
    toolset: 'servers',
    input: z.strictObject({ ...pageInput }),
    output: listOf(serverSchema),
    annotations: READ,
    http: { method: 'GET', path: '/api/v1/servers', list: true },
    async run({ db, caller }, p) {
      const base = db.selectFrom('servers').where('team_id', '=', caller.teamId);
      return paged(base, p, (q) => q.selectAll().orderBy('id'), (rows) => Promise.all(rows.map((r) => serverView(db, r))));
    },
  }),
  defineOperation({
    name: 'create_server',
    summary: 'Register a server (and its Docker engine endpoint); it gets a default destination.',
    permission: 'write',
    toolset: 'servers',
    input: z.strictObject(serverFields),
    output: uuidSchema,
    annotations: CREATE,
    http: { method: 'POST', path: '/api/v1/servers', status: 201 },
    async run({ db, caller }, i) {
      const keyId = await keyIdFor(db, caller.teamId, i.private_key_uuid);
      const uuid = newUuid();
      await db.transaction().execute(async (trx) => {
        const s = await trx
          .insertInto('servers')
          .values({
            uuid,
            team_id: caller.teamId,
            name: i.name ?? `server-${uuid.slice(0, 8)}`,
            description: i.description ?? null,
            ip: i.ip,
            port: i.port ?? 22,
            user: i.user ?? 'root',
            private_key_id: keyId ?? null,
            engine_endpoint: i.engine_endpoint ?? null,
            engine_tls: i.engine_tls ? JSON.stringify(i.engine_tls) : null,
            is_reachable: 0,
            is_usable: 0,
            validated_at: null,
            validation_logs: null,
            ...stamps(),
          })
          .returning(['id', 'name'])
          .executeTakeFirstOrThrow();
        await trx
          .insertInto('destinations')
          .values({ uuid: newUuid(), team_id: caller.teamId, server_id: s.id, name: `${s.name}-${DEFAULT_NETWORK}`, network: DEFAULT_NETWORK, ...stamps() })
          .execute();
      });
      return { uuid };
    },
  }),
  defineOperation({
    name: 'get_server',
    summary: 'Get a server with its engine endpoint and managed state.',
    permission: 'read',
    toolset: 'servers',
    input: z.strictObject({ uuid: uuidParam }),
    output: serverSchema,
    annotations: READ,
    http: { method: 'GET', path: '/api/v1/servers/{uuid}' },
    async run({ db, caller }, { uuid }) {
      return serverView(db, await owned(db, 'servers', uuid, caller.teamId));
    },
  }),
  defineOperation({
    name: 'update_server',
    summary: 'Change a server’s fields; a new engine endpoint clears its validation.',
    permission: 'write',
    toolset: 'servers',
    input: z.strictObject({ uuid: uuidParam, ...serverFields, ip: hostAddress.optional() }),
    output: uuidSchema,
    annotations: UPDATE,
    http: { method: 'PATCH', path: '/api/v1/servers/{uuid}', status: 201 },
    async run({ db, caller }, { uuid, ...i }) {
      const s = await owned(db, 'servers', uuid, caller.teamId);
      const keyId = await keyIdFor(db, caller.teamId, i.private_key_uuid);
      const patch: Partial<ServerRow> = { updated_at: nowIso() };
      for (const k of ['name', 'description', 'ip', 'port', 'user'] as const) if (i[k] !== undefined) (patch as Record<string, unknown>)[k] = i[k];
      if (keyId !== undefined) patch.private_key_id = keyId;
      if (i.engine_endpoint !== undefined || i.engine_tls !== undefined) {
        if (i.engine_endpoint !== undefined) patch.engine_endpoint = i.engine_endpoint;
        if (i.engine_tls !== undefined) patch.engine_tls = i.engine_tls ? JSON.stringify(i.engine_tls) : null;
        // A different engine must be validated again before berth trusts it with data.
        Object.assign(patch, { is_reachable: 0, is_usable: 0, validated_at: null });
      }
      await db.updateTable('servers').set(patch).where('id', '=', s.id).execute();
      return { uuid };
    },
  }),
  defineOperation({
    name: 'delete_server',
    summary: 'Delete a server that has no resources left on it.',
    permission: 'write',
    toolset: 'servers',
    input: z.strictObject({ uuid: uuidParam }),
    output: messageSchema,
    annotations: DELETE,
    http: { method: 'DELETE', path: '/api/v1/servers/{uuid}' },
    async run({ db, caller }, { uuid }) {
      const s = await owned(db, 'servers', uuid, caller.teamId);
      const used = await db
        .selectFrom('resources as r')
        .innerJoin('destinations as d', 'd.id', 'r.destination_id')
        .select('r.id')
        .where('d.server_id', '=', s.id)
        .executeTakeFirst();
      if (used) throw new BerthError('conflict', { message: 'Server has resources; delete or migrate them first.' });
      await db.deleteFrom('servers').where('id', '=', s.id).execute();
      return { message: 'Server deleted.' };
    },
  }),
  defineOperation({
    name: 'validate_server',
    summary: 'Check the server’s Docker engine and mark it reachable and managed.',
    permission: 'write',
    toolset: 'servers',
    input: z.strictObject({ uuid: uuidParam }),
    output: z.object({ message: z.string(), is_reachable: z.boolean(), is_usable: z.boolean(), validation_logs: z.string() }),
    annotations: ENGINE,
    http: { method: 'POST', path: '/api/v1/servers/{uuid}/validate', status: 201 },
    async run({ db, caller, runtime }, { uuid }) {
      const s = await owned(db, 'servers', uuid, caller.teamId);
      const r = await runtime.validateServer(s);
      await db
        .updateTable('servers')
        .set({ is_reachable: r.reachable ? 1 : 0, is_usable: r.usable ? 1 : 0, validated_at: r.reachable ? nowIso() : null, validation_logs: r.logs, updated_at: nowIso() })
        .where('id', '=', s.id)
        .execute();
      return { message: r.reachable ? 'Server validated.' : 'Server is not reachable.', is_reachable: r.reachable, is_usable: r.usable, validation_logs: r.logs };
    },
  }),
  defineOperation({
    name: 'list_server_destinations',
    summary: 'List the destinations (Docker networks) of a server.',
    permission: 'read',
    toolset: 'servers',
    input: z.strictObject({ uuid: uuidParam, ...pageInput }),
    output: listOf(destinationSchema),
    annotations: READ,
    http: { method: 'GET', path: '/api/v1/servers/{uuid}/destinations', list: true },
    async run({ db, caller }, { uuid, ...p }) {
      const s = await owned(db, 'servers', uuid, caller.teamId);
      const base = db.selectFrom('destinations').where('server_id', '=', s.id);
      return paged(base, p, (q) => q.selectAll().orderBy('id'), (rows) => rows.map((d) => destinationView(d, s.uuid)));
    },
  }),
  defineOperation({
    name: 'create_server_destination',
    summary: 'Add a destination (a Docker network) to a server.',
    permission: 'write',
    toolset: 'servers',
    input: z.strictObject({ uuid: uuidParam, network: engineName, name: name.optional(), type: z.literal('standalone').optional() }),
    output: destinationSchema,
    annotations: CREATE,
    http: { method: 'POST', path: '/api/v1/servers/{uuid}/destinations', status: 201 },
    async run({ db, caller }, i) {
      const s = await owned(db, 'servers', i.uuid, caller.teamId);
      if (await db.selectFrom('destinations').select('id').where('server_id', '=', s.id).where('network', '=', i.network).executeTakeFirst()) {
        throw new BerthError('conflict', { message: 'A destination with this network already exists on the server.' });
      }
      const d = await db
        .insertInto('destinations')
        .values({ uuid: newUuid(), team_id: caller.teamId, server_id: s.id, name: i.name ?? `${s.name}-${i.network}`, network: i.network, ...stamps() })
        .returningAll()
        .executeTakeFirstOrThrow();
      return destinationView(d, s.uuid);
    },
  }),
  defineOperation({
    name: 'list_server_resources',
    summary: 'List the applications, databases and services on a server.',
    permission: 'read',
    toolset: 'servers',
    input: z.strictObject({ uuid: uuidParam, ...pageInput }),
    output: listOf(z.object({ uuid: z.string(), name: z.string(), type: z.string(), status: z.string(), created_at: z.string(), updated_at: z.string() })),
    annotations: READ,
    http: { method: 'GET', path: '/api/v1/servers/{uuid}/resources', list: true },
    async run({ db, caller }, { uuid, ...p }) {
      const s = await owned(db, 'servers', uuid, caller.teamId);
      const base = db.selectFrom('resources as r').innerJoin('destinations as d', 'd.id', 'r.destination_id').where('d.server_id', '=', s.id);
      return paged(base, p, (q) => q.select(['r.uuid', 'r.name', 'r.kind', 'r.status', 'r.created_at', 'r.updated_at']).orderBy('r.id'), (rows) => rows.map(({ kind, ...r }) => ({ ...r, type: kind })));
    },
  }),
];

export const destinationOperations = [
  defineOperation({
    name: 'list_destinations',
    summary: 'List every destination (Docker network) on the team’s servers.',
    permission: 'read',
    toolset: 'servers',
    input: z.strictObject({ ...pageInput }),
    output: listOf(destinationSchema),
    annotations: READ,
    http: { method: 'GET', path: '/api/v1/destinations', list: true },
    async run({ db, caller }, p) {
      const base = db.selectFrom('destinations as d').innerJoin('servers as s', 's.id', 'd.server_id').where('d.team_id', '=', caller.teamId);
      return paged(base, p, (q) => q.selectAll('d').select('s.uuid as server_uuid').orderBy('d.id'), (rows) => rows.map((d) => destinationView(d, d.server_uuid)));
    },
  }),
  defineOperation({
    name: 'get_destination',
    summary: 'Get a destination.',
    permission: 'read',
    toolset: 'servers',
    input: z.strictObject({ uuid: uuidParam }),
    output: destinationSchema,
    annotations: READ,
    http: { method: 'GET', path: '/api/v1/destinations/{uuid}' },
    async run({ db, caller }, { uuid }) {
      const d = await owned(db, 'destinations', uuid, caller.teamId);
      const s = await db.selectFrom('servers').select('uuid').where('id', '=', d.server_id).executeTakeFirstOrThrow();
      return destinationView(d, s.uuid);
    },
  }),
  defineOperation({
    name: 'update_destination',
    summary: 'Rename a destination.',
    permission: 'write',
    toolset: 'servers',
    input: z.strictObject({ uuid: uuidParam, name }),
    output: destinationSchema,
    annotations: UPDATE,
    http: { method: 'PATCH', path: '/api/v1/destinations/{uuid}' },
    async run({ db, caller }, { uuid, name: newName }) {
      const d = await owned(db, 'destinations', uuid, caller.teamId);
      await db.updateTable('destinations').set({ name: newName, updated_at: nowIso() }).where('id', '=', d.id).execute();
      const s = await db.selectFrom('servers').select('uuid').where('id', '=', d.server_id).executeTakeFirstOrThrow();
      return destinationView({ ...d, name: newName }, s.uuid);
    },
  }),
  defineOperation({
    name: 'delete_destination',
    summary: 'Delete a destination that has no resources.',
    permission: 'write',
    toolset: 'servers',
    input: z.strictObject({ uuid: uuidParam }),
    output: messageSchema,
    annotations: DELETE,
    http: { method: 'DELETE', path: '/api/v1/destinations/{uuid}' },
    async run({ db, caller }, { uuid }) {
      const d = await owned(db, 'destinations', uuid, caller.teamId);
      if (await db.selectFrom('resources').select('id').where('destination_id', '=', d.id).executeTakeFirst()) {
        throw new BerthError('conflict', { message: 'Destination has attached resources, detach first.' });
      }
      await db.deleteFrom('destinations').where('id', '=', d.id).execute();
      return { message: 'Deleted.' };
    },
  }),
];

