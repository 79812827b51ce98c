import type { Selectable } from 'kysely';
import { z } from 'zod';
import type { Db } from '../../store/db.js';
import { nowIso } from '../../store/db.js';
import { atomically } from '../../store/atomic.js';
import type { DestinationsTable, ServersTable } from '../../store/schema.js';
import { engineTargetOf, parseSshEndpoint, sshEndpoint, type EngineTarget } from '../engine-target.js';
import { BerthError, isForeignKeyViolation, notFound, validationError } from '../../errors.js';
import { describeHostReach, hostReaching } from '../host-access.js';
import { targetRefusal } from '../network-guard.js';
import type { Caller } from '../caller.js';
import { newUuid } from '../../ids.js';
import { owned } from '../lookup.js';
import { defineOperation } from '../operation.js';
import { listOf, paged, pageInput } from '../pagination.js';
import { sensitive } from '../redact.js';
import { description, flag, engineEndpoint, engineName, engineTls, hostAddress, hostKeyFingerprint, name, sshUser, uuidParam } from '../validators.js';
import { displayStatus } from './resource-common.js';
import { bool, CREATE, DELETE, ENGINE, messageSchema, READ, stamps, UPDATE, uuidSchema } from './common.js';
import { SERVER_FIELDS } from './coolify-fields.js';
import { assertHeldHere, transferOf } from '../transfer/state.js';
import { proxyTypeInput, saveProxySettings } from './server-proxy.js';
import { PROXY_DEFAULTS } from '../model/proxy.js';

type Row<T> = Selectable<T>;
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
  engine_endpoint: z.string().nullable().describe('berth: where the Docker Engine API of this server is reached (ssh://, unix:// or tcp://).'),
  transport: z.enum(['ssh', 'unix', 'tcp']).nullable().describe('berth: how the engine is reached; null when berth cannot reach it.'),
  host_key_fingerprint: z.string().nullable().describe('berth: the SSH host key pinned at the first validate (SHA256:…).'),
  host_access: z.boolean().describe('berth: containers here may reach into the host (privileged, host binds, …); set by the root team only.'),
  engine_tls: sensitive(z.object({ ca: z.string(), cert: z.string(), key: z.string() }).nullable()),
  is_reachable: z.boolean(),
  is_usable: z.boolean(),
  /** berth: validated, reachable and usable, so berth moves volume data for it. */
  is_managed: z.boolean(),
  // Read at the last validate (a manager's destinations are swarm); left out of tool schemas for size.
  is_swarm_manager: z.boolean().meta({ 'berth.brief': true }),
  is_swarm_worker: z.boolean().meta({ 'berth.brief': true }),
  validated_at: z.string().nullable(),
  validation_logs: z.string().nullable(),
  transfer: z
    .object({
      status: z.enum(['imported', 'claimed', 'transferred']),
      export_id: z.string().nullable(),
      at: z.string(),
      source_instance_url: z.string().nullable().optional(),
      target_instance_url: z.string().nullable().optional(),
    })
    .nullable()
    .describe('berth: the server moved between berth instances (export/import); imported and transferred servers are not managed here until claimed.'),
  created_at: z.string(),
  updated_at: z.string(),
});

export const destinationSchema = z.object({
  uuid: z.string(),
  name: z.string(),
  network: z.string(),
  /** standalone or swarm (a plain string in the tool schema: the default tools/list has a size budget). */
  type: z.string(),
  server_uuid: z.string(),
  created_at: z.string(),
  updated_at: z.string(),
});

async function serverView(db: Db, s: ServerRow): Promise<z.infer<typeof serverSchema>> {
  const key = s.private_key_id === null ? undefined : await db.selectFrom('private_keys').select('uuid').where('id', '=', s.private_key_id).executeTakeFirst();
  const target = engineTargetOf(s);
  return {
    uuid: s.uuid,
    name: s.name,
    description: s.description,
    ip: s.ip,
    port: s.port,
    user: s.user,
    private_key_uuid: key?.uuid ?? null,
    engine_endpoint: target?.endpoint ?? null,
    transport: target?.transport ?? null,
    host_key_fingerprint: s.host_key_fingerprint,
    host_access: bool(s.host_access),
    engine_tls: s.engine_tls ? JSON.parse(s.engine_tls) : null,
    is_reachable: bool(s.is_reachable),
    is_usable: bool(s.is_usable),
    is_managed: isManaged(s),
    is_swarm_manager: bool(s.is_swarm_manager),
    is_swarm_worker: bool(s.is_swarm_worker),
    validated_at: s.validated_at,
    validation_logs: s.validation_logs,
    transfer: transferOf(s),
    created_at: s.created_at,
    updated_at: s.updated_at,
  };
}

export function destinationView(d: DestinationRow, serverUuid: string): z.infer<typeof destinationSchema> {
  return { uuid: d.uuid, name: d.name, network: d.network, type: d.type === 'swarm' ? 'swarm' : 'standalone', server_uuid: serverUuid, created_at: d.created_at, updated_at: d.updated_at };
}

/** Networks every engine has: never a swarm destination's overlay. */
const BUILTIN_NETWORKS = new Set(['none', 'host', 'bridge', 'default', 'ingress', 'docker_gwbridge']);

/**
 * A server validated as a swarm manager: its destinations that place nothing yet become `swarm`
 * (their network an overlay berth creates at the first deploy); one no longer a manager gets them
 * back as `standalone`. A destination with resources keeps its kind: they run as what they are.
 */
async function followSwarmState(db: Db, serverId: number, manager: boolean): Promise<void> {
  const [from, to] = manager ? ['standalone', 'swarm'] : ['swarm', 'standalone'];
  await db
    .updateTable('destinations')
    .set({ type: to, updated_at: nowIso() })
    .where('server_id', '=', serverId)
    .where('type', '=', from)
    .where(({ not, exists, selectFrom }) => not(exists(selectFrom('resources').select('id').whereRef('resources.destination_id', '=', 'destinations.id'))))
    .where('network', 'not in', [...BUILTIN_NETWORKS])
    .execute();
}

/** A private key of the caller's team by uuid; another team's is refused like a missing one. */
async function keyIdFor(db: Db, teamId: number, uuid: string | null | undefined): Promise<number | null | undefined> {
  if (uuid === undefined) return undefined;
  if (uuid === null) return null;
  const k = await db.selectFrom('private_keys').select('id').where('uuid', '=', uuid).where('team_id', '=', teamId).executeTakeFirst();
  if (!k) throw notFound();
  return k.id;
}

/** Validated, reachable and usable, so berth deploys there and moves volume data for it. */
export const isManaged = (s: Pick<ServerRow, 'ip' | 'port' | 'user' | 'engine_endpoint' | 'private_key_id' | 'is_reachable' | 'is_usable'>) =>
  bool(s.is_reachable) && bool(s.is_usable) && engineTargetOf(s) !== null;

type Address = Pick<ServerRow, 'ip' | 'port' | 'user' | 'engine_endpoint' | 'private_key_id' | 'engine_tls'>;

/**
 * The address fields after a create or update, made consistent: an ssh:// endpoint names the
 * host, port and user, so those fields follow it; a changed host, port or user rewrites a stored
 * ssh:// endpoint. Then the isolation rules (network-guard) and the transport's own needs are
 * checked, without connecting. 422 on the field that has to change.
 */
export function settleAddress(
  next: Address,
  given: { engine_endpoint?: string | null | undefined; ip?: string | undefined; port?: number | undefined; user?: string | undefined },
  caller: Caller,
): { address: Address; target: EngineTarget | null } {
  const address = { ...next };
  const ssh = given.engine_endpoint ? parseSshEndpoint(given.engine_endpoint) : null;
  if (ssh) {
    address.ip = ssh.host;
    if (ssh.port !== undefined) address.port = ssh.port;
    if (ssh.user !== undefined) address.user = ssh.user;
  }
  let target = engineTargetOf(address);
  if (target?.transport === 'ssh' && address.engine_endpoint !== null) {
    address.engine_endpoint = sshEndpoint({ user: address.user, host: address.ip, port: address.port, socketPath: target.socketPath });
    target = engineTargetOf(address);
  }
  const field = target?.transport === 'ssh' && address.engine_endpoint === null ? 'ip' : 'engine_endpoint';
  if (target) {
    const refusal = targetRefusal(target, caller.rootTeam);
    if (refusal) throw validationError({ [field]: [refusal] });
  }
  if (target?.transport === 'ssh' && address.private_key_id === null) throw validationError({ private_key_uuid: ['An SSH engine endpoint needs a private key: give private_key_uuid.'] });
  if (address.engine_tls !== null && target && target.transport !== 'tcp') throw validationError({ engine_tls: ['TLS client certificates are for tcp:// engine endpoints.'] });
  return { address, target };
}

/** The host access switch is the instance's: only a root token of the root team may flip it. */
function assertMayChangeHostAccess(caller: Caller): void {
  if (!caller.rootTeam) throw new BerthError('root_team_only');
  if (!caller.permissions.has('root')) throw new BerthError('missing_permissions', { missingPermissions: ['root'], heldPermissions: [...caller.permissions] });
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
  host_key_fingerprint: hostKeyFingerprint
    .nullable()
    .optional()
    .describe('Pin the SSH host key up front (SHA256:… from ssh-keygen -lf on the server); null forgets it so the next validate pins the key it finds.'),
  proxy_type: proxyTypeInput.optional(),
};

export const serverOperations = [
  defineOperation({
    name: 'list_servers',
    title: 'List servers',
    description: "List the team's servers with their engine endpoint and state (is_reachable, is_usable, is_managed). Use the uuid for create_application and migrate.",
    summary: 'List the servers of the team.',
    permission: 'read',
    toolset: 'servers',
    input: () => z.strictObject({ ...pageInput }),
    output: () => listOf(serverSchema),
    annotations: READ,
    http: { method: 'GET', path: '/api/v1/servers', list: true },
    async run({ db, caller }, p) {
      const base = db.selectFrom('servers').where('team_id', '=', caller.teamId);
      return paged(
        base,
        p,
        (q) => q.selectAll().orderBy('id'),
        (rows) => Promise.all(rows.map((r) => serverView(db, r))),
      );
    },
  }),
  defineOperation({
    name: 'create_server',
    title: 'Register a server',
    description:
      'Register a server: ip, user (default root) and private_key_uuid reach its Docker socket over SSH (or engine_endpoint ssh://user@host:port/socket, tcp://host:port). Then call validate_server. A default destination is created with it.',
    summary: 'Register a server (and its Docker engine endpoint); it gets a default destination.',
    permission: 'write',
    toolset: 'servers',
    input: () => z.strictObject(serverFields),
    output: () => uuidSchema,
    annotations: CREATE,
    http: { method: 'POST', path: '/api/v1/servers', status: 201 },
    unsupported: SERVER_FIELDS,
    async run({ db, caller }, i) {
      const keyId = await keyIdFor(db, caller.teamId, i.private_key_uuid);
      const { address } = settleAddress(
        {
          ip: i.ip,
          port: i.port ?? 22,
          user: i.user ?? 'root',
          private_key_id: keyId ?? null,
          engine_endpoint: i.engine_endpoint ?? null,
          engine_tls: i.engine_tls ? JSON.stringify(i.engine_tls) : null,
        },
        i,
        caller,
      );
      const uuid = newUuid();
      await db.transaction().execute(async (trx) => {
        const s = await trx
          .insertInto('servers')
          .values({
            uuid,
            team_id: caller.teamId,
            name: i.name ?? `server-${uuid.slice(0, 8)}`,
            description: i.description ?? null,
            ...address,
            is_reachable: 0,
            is_usable: 0,
            validated_at: null,
            validation_logs: null,
            host_key_fingerprint: i.host_key_fingerprint ?? null,
            host_access: 0,
            transfer: null,
            proxy: i.proxy_type ? JSON.stringify({ ...PROXY_DEFAULTS, proxy_type: i.proxy_type }) : null,
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
    title: 'Get a server',
    description: 'Get a server: address, transport, engine endpoint, pinned SSH host key, and whether it is reachable and managed. TLS key material needs read:sensitive.',
    summary: 'Get a server with its engine endpoint and managed state.',
    permission: 'read',
    toolset: 'servers',
    input: () => z.strictObject({ uuid: uuidParam }),
    output: () => serverSchema,
    annotations: READ,
    http: { method: 'GET', path: '/api/v1/servers/{uuid}' },
    async run({ db, caller }, { uuid }) {
      return serverView(db, await owned(db, 'servers', uuid, caller.teamId));
    },
  }),
  defineOperation({
    name: 'update_server',
    title: 'Update a server',
    description: 'Change a server. A new address, key or endpoint clears its validation: call validate_server again. host_key_fingerprint: null forgets a pinned host key.',
    summary: 'Change a server’s fields; a new engine endpoint clears its validation.',
    permission: 'write',
    toolset: 'servers',
    input: () =>
      z.strictObject({
        uuid: uuidParam,
        ...serverFields,
        ip: hostAddress.optional(),
        host_access: z
          .boolean()
          .optional()
          .describe(
            "Let containers on this server reach into the host (privileged, capabilities, devices, host namespaces, host bind mounts). Only a root token of the instance's root team may change it.",
          ),
      }),
    output: () => uuidSchema,
    annotations: UPDATE,
    http: { method: 'PATCH', path: '/api/v1/servers/{uuid}', status: 201 },
    unsupported: SERVER_FIELDS,
    async run({ db, caller, runtime, logger }, { uuid, host_access, ...i }) {
      const s = await owned(db, 'servers', uuid, caller.teamId);
      if (host_access !== undefined) assertMayChangeHostAccess(caller);
      const keyId = await keyIdFor(db, caller.teamId, i.private_key_uuid);
      const patch: Partial<ServerRow> = { updated_at: nowIso() };
      for (const k of ['name', 'description'] as const) if (i[k] !== undefined) (patch as Record<string, unknown>)[k] = i[k];
      const before = engineTargetOf(s);
      const { address, target } = settleAddress(
        {
          ip: i.ip ?? s.ip,
          port: i.port ?? s.port,
          user: i.user ?? s.user,
          private_key_id: keyId === undefined ? s.private_key_id : keyId,
          engine_endpoint: i.engine_endpoint === undefined ? s.engine_endpoint : i.engine_endpoint,
          engine_tls: i.engine_tls === undefined ? s.engine_tls : i.engine_tls ? JSON.stringify(i.engine_tls) : null,
        },
        i,
        caller,
      );
      Object.assign(patch, address);
      // A different engine, or another way in, must be validated again before berth trusts it with data.
      if (target?.endpoint !== before?.endpoint || address.engine_tls !== s.engine_tls || address.private_key_id !== s.private_key_id) {
        Object.assign(patch, { is_reachable: 0, is_usable: 0, validated_at: null });
      }
      // A pinned host key belongs to the host at that address; another address starts over.
      const sameHost = target?.transport === 'ssh' && before?.transport === 'ssh' && target.host === before.host && target.port === before.port;
      if (i.host_key_fingerprint !== undefined) patch.host_key_fingerprint = i.host_key_fingerprint;
      else if (!sameHost && s.host_key_fingerprint !== null) patch.host_key_fingerprint = null;
      if (host_access !== undefined) patch.host_access = host_access ? 1 : 0;
      await db.updateTable('servers').set(patch).where('id', '=', s.id).execute();
      if (i.proxy_type !== undefined) {
        await saveProxySettings(db, s.id, { proxy_type: i.proxy_type });
        // none removes a running proxy now; caddy starts when a domain needs it.
        if (runtime.isLive(s)) await runtime.syncProxy(s.id).catch((err) => logger.warn({ err: (err as Error).message, server: uuid }, 'could not apply the proxy type'));
      }
      return { uuid };
    },
  }),
  defineOperation({
    name: 'delete_server',
    title: 'Delete a server',
    description: 'Delete a server and its destinations. Refused while applications, databases or services live on it: migrate or delete them first.',
    summary: 'Delete a server that has no resources left on it.',
    permission: 'write',
    toolset: 'servers',
    input: () => z.strictObject({ uuid: uuidParam }),
    output: () => messageSchema,
    annotations: DELETE,
    http: { method: 'DELETE', path: '/api/v1/servers/{uuid}' },
    async run({ db, caller }, { uuid }) {
      const hasResources = () => new BerthError('conflict', { message: 'Server has resources; delete or migrate them first.' });
      try {
        await atomically(db, async (trx) => {
          const s = await owned(trx, 'servers', uuid, caller.teamId);
          const used = await trx.selectFrom('resources as r').innerJoin('destinations as d', 'd.id', 'r.destination_id').select('r.id').where('d.server_id', '=', s.id).executeTakeFirst();
          if (used) throw hasResources();
          await trx.deleteFrom('servers').where('id', '=', s.id).execute();
        });
      } catch (err) {
        // A resource placed on it meanwhile holds it (resources do not cascade): the same 409.
        if (isForeignKeyViolation(err)) throw hasResources();
        throw err;
      }
      return { message: 'Server deleted.' };
    },
  }),
  defineOperation({
    name: 'validate_server',
    title: 'Validate a server',
    description:
      "Check the server's Docker engine (over SSH: log in, pin the host key on first success) and record whether it is reachable and usable; validation_logs says what is wrong. accept_host_key: true trusts a changed host key. Needed before deploying or moving data.",
    summary: 'Check the server’s Docker engine and mark it reachable and managed.',
    permission: 'write',
    toolset: 'servers',
    input: () =>
      z.strictObject({
        uuid: uuidParam,
        // flag: Coolify's GET /servers/{uuid}/validate brings it as a query string's "true".
        accept_host_key: flag.optional().describe('Trust the SSH host key the server presents now, replacing the pinned one (after a reinstall, say). Check its fingerprint first.'),
      }),
    output: () =>
      z.object({
        message: z.string(),
        is_reachable: z.boolean(),
        is_usable: z.boolean(),
        is_swarm_manager: z.boolean().meta({ 'berth.brief': true }),
        is_swarm_worker: z.boolean().meta({ 'berth.brief': true }),
        validation_logs: z.string(),
        host_key_fingerprint: z.string().nullable(),
      }),
    annotations: ENGINE,
    // Coolify 4.3.11 moved it to POST: a GET answers its 405.
    http: { method: 'POST', path: '/api/v1/servers/{uuid}/validate', status: 201, getMovedToPost: true },
    async run({ db, caller, runtime }, { uuid, accept_host_key }) {
      const s = await owned(db, 'servers', uuid, caller.teamId);
      assertHeldHere(s);
      const target = engineTargetOf(s);
      // Records from before the isolation rules are refused here too, without connecting.
      const refusal = target && targetRefusal(target, caller.rootTeam);
      const r = refusal ? { reachable: false, usable: false, logs: refusal, hostKeyFingerprint: s.host_key_fingerprint } : await runtime.validateServer(s, { acceptHostKey: accept_host_key === true });
      const pinned = r.hostKeyFingerprint === undefined ? s.host_key_fingerprint : r.hostKeyFingerprint;
      // Unread (unreachable): the last word stands.
      const manager = r.swarm === undefined ? bool(s.is_swarm_manager) : r.swarm === 'manager';
      const worker = r.swarm === undefined ? bool(s.is_swarm_worker) : r.swarm === 'worker';
      await db
        .updateTable('servers')
        .set({
          is_reachable: r.reachable ? 1 : 0,
          is_usable: r.usable ? 1 : 0,
          is_swarm_manager: manager ? 1 : 0,
          is_swarm_worker: worker ? 1 : 0,
          validated_at: r.reachable ? nowIso() : null,
          validation_logs: r.logs,
          host_key_fingerprint: pinned,
          updated_at: nowIso(),
        })
        .where('id', '=', s.id)
        .execute();
      if (r.swarm !== undefined) await followSwarmState(db, s.id, manager);
      return {
        message: r.reachable ? 'Server validated.' : 'Server is not reachable.',
        is_reachable: r.reachable,
        is_usable: r.usable,
        is_swarm_manager: manager,
        is_swarm_worker: worker,
        validation_logs: r.logs,
        host_key_fingerprint: pinned,
      };
    },
  }),
  defineOperation({
    name: 'list_server_destinations',
    title: 'List destinations of a server',
    description: 'List the destinations (Docker networks) of one server. Resources are placed on a destination.',
    summary: 'List the destinations (Docker networks) of a server.',
    permission: 'read',
    toolset: 'servers',
    input: () => z.strictObject({ uuid: uuidParam, ...pageInput }),
    output: () => listOf(destinationSchema),
    annotations: READ,
    http: { method: 'GET', path: '/api/v1/servers/{uuid}/destinations', list: true },
    async run({ db, caller }, { uuid, ...p }) {
      const s = await owned(db, 'servers', uuid, caller.teamId);
      const base = db.selectFrom('destinations').where('server_id', '=', s.id);
      return paged(
        base,
        p,
        (q) => q.selectAll().orderBy('id'),
        (rows) => rows.map((d) => destinationView(d, s.uuid)),
      );
    },
  }),
  defineOperation({
    name: 'create_server_destination',
    title: 'Add a destination',
    description: 'Add a destination (a Docker network) to a server. Use its uuid as destination_uuid when creating or migrating resources.',
    summary: 'Add a destination (a Docker network) to a server.',
    permission: 'write',
    toolset: 'servers',
    input: () =>
      z.strictObject({
        uuid: uuidParam,
        network: engineName,
        name: name.optional(),
        // Default: swarm on a swarm manager, else standalone (docs/decisions/swarm.md).
        type: z.enum(['standalone', 'swarm']).optional(),
      }),
    output: () => destinationSchema,
    annotations: CREATE,
    http: { method: 'POST', path: '/api/v1/servers/{uuid}/destinations', status: 201 },
    async run({ db, caller }, i) {
      const s = await owned(db, 'servers', i.uuid, caller.teamId);
      const type = i.type ?? (bool(s.is_swarm_manager) ? 'swarm' : 'standalone');
      if (type === 'swarm' && !bool(s.is_swarm_manager)) {
        throw validationError({ type: ['A swarm destination needs a server that is a Docker Swarm manager: validate it once its engine is one (is_swarm_manager).'] });
      }
      if (type === 'swarm' && BUILTIN_NETWORKS.has(i.network))
        throw validationError({ network: [`A swarm destination runs on an overlay network berth creates; "${i.network}" is the engine's own.`] });
      const reach = hostReaching({ networkMode: i.network });
      if (reach.length && !bool(s.host_access)) throw validationError({ network: [describeHostReach(reach, `Network "${i.network}"`)] });
      if (await db.selectFrom('destinations').select('id').where('server_id', '=', s.id).where('network', '=', i.network).executeTakeFirst()) {
        throw new BerthError('conflict', { message: 'A destination with this network already exists on the server.' });
      }
      const d = await db
        .insertInto('destinations')
        .values({ uuid: newUuid(), team_id: caller.teamId, server_id: s.id, name: i.name ?? `${s.name}-${i.network}`, network: i.network, type, ...stamps() })
        .returningAll()
        .executeTakeFirstOrThrow();
      return destinationView(d, s.uuid);
    },
  }),
  defineOperation({
    name: 'list_server_orphans',
    title: 'List orphans on a server',
    description: 'List containers and volumes berth made on a server that no record names any more (a delete that could not reach the engine, or removed records). Asks the engine.',
    summary: 'List berth-labelled containers and volumes on a server that no record names (left by a delete that could not finish, or by hand).',
    permission: 'read',
    toolset: 'servers',
    input: () => z.strictObject({ uuid: uuidParam }),
    output: () =>
      z.object({
        containers: z.array(z.object({ name: z.string(), resource_uuid: z.string().nullable(), state: z.string() })),
        volumes: z.array(z.object({ name: z.string(), resource_uuid: z.string().nullable() })),
      }),
    annotations: { ...READ, openWorld: true },
    http: { method: 'GET', path: '/api/v1/servers/{uuid}/orphans' },
    async run({ db, caller, runtime }, { uuid }) {
      const s = await owned(db, 'servers', uuid, caller.teamId);
      return runtime.orphans(s.id);
    },
  }),
  defineOperation({
    name: 'list_server_resources',
    title: 'List resources on a server',
    description: 'List the applications, databases and services that live on one server.',
    summary: 'List the applications, databases and services on a server.',
    permission: 'read',
    toolset: 'servers',
    input: () => z.strictObject({ uuid: uuidParam, ...pageInput }),
    output: () => listOf(z.object({ uuid: z.string(), name: z.string(), type: z.string(), status: z.string(), created_at: z.string(), updated_at: z.string() })),
    annotations: READ,
    http: { method: 'GET', path: '/api/v1/servers/{uuid}/resources', list: true },
    async run({ db, caller }, { uuid, ...p }) {
      const s = await owned(db, 'servers', uuid, caller.teamId);
      const base = db.selectFrom('resources as r').innerJoin('destinations as d', 'd.id', 'r.destination_id').where('d.server_id', '=', s.id);
      return paged(
        base,
        p,
        (q) => q.select(['r.uuid', 'r.name', 'r.kind', 'r.status', 'r.observed_status', 'r.deleting', 'r.created_at', 'r.updated_at']).orderBy('r.id'),
        (rows) => rows.map(({ kind, observed_status, deleting, ...r }) => ({ ...r, status: displayStatus({ status: r.status, observed_status, deleting }), type: kind })),
      );
    },
  }),
  defineOperation({
    name: 'get_server_domains',
    title: 'Domains on a server',
    description: 'The domains of the applications on a server, each with the server address: what their DNS records should point at.',
    summary: 'The domains the applications on a server answer to, with the server address (what DNS should point at).',
    permission: 'read',
    toolset: 'servers',
    input: () => z.strictObject({ uuid: uuidParam }),
    output: () => z.array(z.object({ ip: z.string(), domain: z.array(z.string()) })),
    annotations: READ,
    http: { method: 'GET', path: '/api/v1/servers/{uuid}/domains' },
    async run({ db, caller }, { uuid }) {
      const s = await owned(db, 'servers', uuid, caller.teamId);
      const apps = await db
        .selectFrom('resources as r')
        .innerJoin('destinations as d', 'd.id', 'r.destination_id')
        .select('r.config')
        .where('d.server_id', '=', s.id)
        .where('r.kind', '=', 'application')
        .orderBy('r.id')
        .execute();
      // As Coolify: one entry per application with domains, each domain as a bare host name.
      return apps.flatMap((a) => {
        const hosts = hostNames((JSON.parse(a.config) as { fqdn?: string | null }).fqdn);
        return hosts.length ? [{ ip: s.ip, domain: hosts }] : [];
      });
    },
  }),
];

/** `https://a.example:8443/x,http://b.example` → ['a.example', 'b.example']. */
function hostNames(fqdn: string | null | undefined): string[] {
  return (fqdn ?? '')
    .split(',')
    .map(
      (u) =>
        u
          .trim()
          .replace(/^https?:\/\//, '')
          .split('/')[0]!
          .split(':')[0]!,
    )
    .filter(Boolean);
}

export const destinationOperations = [
  defineOperation({
    name: 'list_destinations',
    title: 'List destinations',
    description: "Every destination (Docker network) on the team's servers; a migration's target is a destination_uuid from here.",
    default: true,
    summary: 'List every destination (Docker network) on the team’s servers.',
    permission: 'read',
    toolset: 'servers',
    input: () => z.strictObject({ ...pageInput }),
    output: () => listOf(destinationSchema),
    annotations: READ,
    http: { method: 'GET', path: '/api/v1/destinations', list: true },
    async run({ db, caller }, p) {
      const base = db.selectFrom('destinations as d').innerJoin('servers as s', 's.id', 'd.server_id').where('d.team_id', '=', caller.teamId);
      return paged(
        base,
        p,
        (q) => q.selectAll('d').select('s.uuid as server_uuid').orderBy('d.id'),
        (rows) => rows.map((d) => destinationView(d, d.server_uuid)),
      );
    },
  }),
  defineOperation({
    name: 'get_destination',
    title: 'Get a destination',
    description: 'Get one destination and the server it belongs to.',
    summary: 'Get a destination.',
    permission: 'read',
    toolset: 'servers',
    input: () => z.strictObject({ uuid: uuidParam }),
    output: () => destinationSchema,
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
    title: 'Rename a destination',
    description: 'Rename a destination. The Docker network itself does not change.',
    summary: 'Rename a destination.',
    permission: 'write',
    toolset: 'servers',
    input: () => z.strictObject({ uuid: uuidParam, name }),
    output: () => destinationSchema,
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
    title: 'Delete a destination',
    description: 'Delete a destination. Refused while resources are attached to it.',
    summary: 'Delete a destination that has no resources.',
    permission: 'write',
    toolset: 'servers',
    input: () => z.strictObject({ uuid: uuidParam }),
    output: () => messageSchema,
    annotations: DELETE,
    http: { method: 'DELETE', path: '/api/v1/destinations/{uuid}' },
    async run({ db, caller }, { uuid }) {
      const attached = () => new BerthError('conflict', { message: 'Destination has attached resources, detach first.' });
      try {
        await atomically(db, async (trx) => {
          const d = await owned(trx, 'destinations', uuid, caller.teamId);
          if (await trx.selectFrom('resources').select('id').where('destination_id', '=', d.id).executeTakeFirst()) throw attached();
          await trx.deleteFrom('destinations').where('id', '=', d.id).execute();
        });
      } catch (err) {
        if (isForeignKeyViolation(err)) throw attached();
        throw err;
      }
      return { message: 'Deleted.' };
    },
  }),
];
