import type { ApplicationConfig } from '../core/model/application.js';
import type { DatabaseConfig } from '../core/model/database.js';
import { DATABASE_ENGINES } from '../core/model/database.js';
import type { DatabaseKind } from '../core/model/kinds.js';
import { volumeName } from '../core/model/volumes.js';
import type { ServiceConfig } from '../core/model/service.js';
import type { Db } from '../store/db.js';
import { composePort, dependencyOrder, type ComposeContainer, type DependencyCondition } from '../core/compose.js';
import { interpolateContainer } from '../core/compose-variables.js';
import { describeHostReach, hostReaching } from '../core/host-access.js';
import { labelsOf } from '../core/custom-labels.js';
import { parseRunOptions } from '../core/run-options.js';
import { healthcheckSpec, limitsSpec } from '../core/runtime-fields.js';
import { resolveSharedReferences } from './shared-references.js';
import type { ContainerSpec, PortBinding } from '../core/model/container-spec.js';
import { DEFAULT_SWARM_REPLICAS, placementOf, type SwarmPlacement } from '../core/swarm-fields.js';

/** Labels berth puts on everything it creates, so it can find (and only touch) its own. */
export const LABEL_RESOURCE = 'berth.resource';
export const LABEL_MANAGED = 'berth.managed';

/** The containers a resource has on its engine, by name (what a plan of it would name). */
export function containerNames(r: { uuid: string; kind: string; config: string }): string[] {
  if (r.kind === 'service') return (JSON.parse(r.config) as ServiceConfig).containers.map((k) => `${r.uuid}-${k.name}`);
  // A dockercompose application is planned as a service once its compose file has been read.
  const compose = r.kind === 'application' ? (JSON.parse(r.config) as ApplicationConfig).compose : undefined;
  return compose ? compose.containers.map((k) => `${r.uuid}-${k.name}`) : [r.uuid];
}

/** A destination's stored type as an engine kind (anything unknown is standalone Docker). */
export const engineKindOf = (type: string): EngineKindType => (type === 'swarm' ? 'swarm' : 'standalone');

export interface PlannedContainer {
  name: string;
  spec: ContainerSpec;
  /** Compose's depends_on: planned containers (by their name) to wait for, and for what. Containers come after what they depend on. */
  dependsOn?: { name: string; condition: DependencyCondition }[];
  /** File storages: written into the container after it is created, before it starts. */
  files?: { path: string; content: string; isDirectory: boolean }[];
  /** Compose's deploy.replicas: the tasks of the service on a swarm destination (a standalone one runs one container). */
  replicas?: number;
  /** Compose's deploy.endpoint_mode (swarm only: a standalone container is reached by its name). */
  endpointMode?: 'vip' | 'dnsrr';
}

/**
 * The engine kinds berth runs resources on, by a destination's `type` (Coolify's words):
 * `standalone` is one Docker-compatible engine's containers; `swarm` is a swarm manager's services.
 * Declared here (kind.ts re-exports it) so the plan and the port do not import each other.
 */
export type EngineKindType = 'standalone' | 'swarm';

export interface Plan {
  serverId: number;
  /** Which engine kind runs the plan (kinds.ts picks its implementation). */
  engineKind: EngineKindType;
  /** The resource's uuid: its containers, helpers and leftovers carry it in their names and labels. */
  resourceUuid: string;
  /** A swarm destination's service settings (applications: Coolify's swarm_replicas and placement). */
  swarm?: { replicas: number; placement: SwarmPlacement | null };
  /** The containers are a compose file's (a service, a dockercompose application): on a swarm destination, a stack. */
  compose?: boolean;
  /** The server lets containers reach into the host (checked with core/host-access.ts). */
  hostAccess: boolean;
  network: string;
  /** The network is the resource's own (a service not connected to its destination's network). */
  ownNetwork: boolean;
  containers: PlannedContainer[];
  volumes: string[];
  /** Lines for the deployment log about how the plan was made (unresolved shared variables). */
  notes: string[];
}

function ports(mappings: string | null): PortBinding[] {
  if (!mappings) return [];
  return mappings.split(',').map((m) => {
    const [host, container] = m.split(':').map(Number);
    return { hostPort: host!, containerPort: container! };
  });
}

/** Environment of a database container from its type fields, as the official images expect. */
function databaseEnv(kind: DatabaseKind, f: Record<string, string>): Record<string, string> {
  switch (kind) {
    case 'postgresql':
      return { POSTGRES_USER: f.postgres_user!, POSTGRES_PASSWORD: f.postgres_password!, POSTGRES_DB: f.postgres_db! };
    case 'mysql':
      return { MYSQL_ROOT_PASSWORD: f.mysql_root_password!, MYSQL_USER: f.mysql_user!, MYSQL_PASSWORD: f.mysql_password!, MYSQL_DATABASE: f.mysql_database! };
    case 'mariadb':
      return { MARIADB_ROOT_PASSWORD: f.mariadb_root_password!, MARIADB_USER: f.mariadb_user!, MARIADB_PASSWORD: f.mariadb_password!, MARIADB_DATABASE: f.mariadb_database! };
    case 'redis':
      return { REDIS_PASSWORD: f.redis_password! };
    case 'mongodb':
      return { MONGO_INITDB_ROOT_USERNAME: f.mongo_initdb_root_username!, MONGO_INITDB_ROOT_PASSWORD: f.mongo_initdb_root_password!, MONGO_INITDB_DATABASE: f.mongo_initdb_database! };
    case 'clickhouse':
      return { CLICKHOUSE_USER: f.clickhouse_admin_user!, CLICKHOUSE_PASSWORD: f.clickhouse_admin_password!, CLICKHOUSE_DEFAULT_ACCESS_MANAGEMENT: '1' };
    case 'dragonfly':
      return { DRAGONFLY_PASSWORD: f.dragonfly_password! };
    case 'keydb':
      return { KEYDB_PASSWORD: f.keydb_password! };
  }
}

/** The command of a database container when the image's default does not take the password from the environment (as Coolify's). */
function databaseCmd(kind: DatabaseKind, f: Record<string, string>): string[] | undefined {
  switch (kind) {
    case 'dragonfly':
      return ['dragonfly', '--requirepass', f.dragonfly_password!, '--dir', '/data'];
    case 'keydb':
      return ['keydb-server', '--requirepass', f.keydb_password!, '--appendonly', 'yes', '--dir', '/data'];
    default:
      return undefined;
  }
}

const envList = (env: Record<string, string>) => Object.entries(env).map(([k, v]) => `${k}=${v}`);

/**
 * What a resource should look like on its engine, derived from the records alone: container
 * names, images, environment, ports and named volumes. A deployment makes the engine match it.
 */
export async function planResource(db: Db, resourceId: number, opts: { destinationId?: number } = {}): Promise<Plan> {
  const r = await db.selectFrom('resources').selectAll().where('id', '=', resourceId).executeTakeFirstOrThrow();
  const dest = await db
    .selectFrom('destinations as d')
    .innerJoin('servers as s', 's.id', 'd.server_id')
    .select(['d.server_id', 'd.network', 'd.type', 's.host_access'])
    .where('d.id', '=', opts.destinationId ?? r.destination_id)
    .executeTakeFirstOrThrow();
  const envRows = await db.selectFrom('environment_variables').select(['key', 'value']).where('resource_id', '=', r.id).where('is_preview', '=', 0).execute();
  const storages = await db.selectFrom('storages').selectAll().where('resource_id', '=', r.id).execute();
  const fileRows = await db.selectFrom('file_storages').select(['mount_path', 'content', 'is_directory']).where('resource_id', '=', r.id).orderBy('id').execute();
  const files = fileRows.length ? { files: fileRows.map((f) => ({ path: f.mount_path, content: f.content ?? '', isDirectory: f.is_directory === 1 })) } : {};
  // {{team.KEY}} and friends: the shared variables of this resource's own team, project,
  // environment and the server it is planned on.
  const { env: userEnv, notes } = await resolveSharedReferences(db, r, dest.server_id, Object.fromEntries(envRows.map((e) => [e.key, e.value ?? ''])));
  const vol = (name: string) => storages.find((s) => s.name === name)?.engine_volume ?? volumeName(r.uuid, name);
  const labels = { [LABEL_MANAGED]: 'true', [LABEL_RESOURCE]: r.uuid };
  const config = JSON.parse(r.config) as unknown;
  const ownNetwork = r.kind === 'service' && (config as ServiceConfig).connect_to_docker_network === false;
  const network = ownNetwork ? r.uuid : dest.network;
  const base = { labels, restartPolicy: { name: 'unless-stopped' as const }, networkMode: network };
  let containers: PlannedContainer[];
  const engineKind = engineKindOf(dest.type);
  let swarm: Plan['swarm'];
  let composeVolumes: string[] = [];
  if (r.kind === 'application' && (config as ApplicationConfig).compose) {
    // A dockercompose application: the compose file read at its last build, planned as a service's.
    const compose = (config as ApplicationConfig).compose!;
    containers = composeContainers(r.uuid, compose.containers, base, labels, userEnv, vol);
    composeVolumes = compose.volumes.map(vol);
  } else if (r.kind === 'application') {
    const c = config as ApplicationConfig;
    if (engineKind === 'swarm') swarm = { replicas: c.swarm_replicas ?? DEFAULT_SWARM_REPLICAS, placement: placementOf(c.swarm_placement_constraints) };
    // Checked at the door; read again here so a record never carries more than the rules allow.
    const { labels: runLabels, ...run } = c.custom_docker_run_options ? parseRunOptions(c.custom_docker_run_options) : {};
    const healthcheck = healthcheckSpec(c, c.ports_exposes);
    const limits = limitsSpec(c);
    containers = [
      {
        name: r.uuid,
        ...files,
        spec: {
          ...base,
          image: `${c.docker_registry_image_name}:${c.docker_registry_image_tag}`,
          env: envList(userEnv),
          ports: ports(c.ports_mappings),
          volumes: storages.map((s) => ({ volume: vol(s.name), target: s.mount_path })),
          ...run,
          // An entrypoint replaces the image's command too, as `docker run --entrypoint` does.
          ...(run.entrypoint ? { cmd: [] } : {}),
          ...(healthcheck ? { healthcheck } : {}),
          ...(limits ? { limits } : {}),
          // berth's own labels last: a tenant's never replace them.
          labels: { ...labelsOf(c.custom_labels), ...runLabels, ...labels },
        },
      },
    ];
  } else if (r.kind === 'service') {
    const c = config as ServiceConfig;
    // Stored in dependency order since depends_on is honoured; older records are ordered here.
    const ordered = dependencyOrder(c.containers);
    const stored = 'order' in ordered ? ordered.order : c.containers;
    // A template's compose reads the service's variables as compose would (${VAR}, $$).
    const unset = new Set<string>();
    const list = c.template ? stored.map((k) => interpolateContainer(k, userEnv, unset)) : stored;
    if (unset.size) notes.push(`Variables the compose file uses that are not set (empty, as compose makes them): ${[...unset].sort().join(', ')}.`);
    containers = composeContainers(r.uuid, list, base, labels, userEnv, vol);
  } else {
    const c = config as DatabaseConfig;
    const kind = r.kind as DatabaseKind;
    containers = [
      {
        name: r.uuid,
        ...files,
        spec: {
          ...base,
          image: c.image,
          stopTimeoutS: DATABASE_ENGINES[kind].stopGraceS,
          ...(c.image === DATABASE_ENGINES[kind].image && databaseCmd(kind, c.fields) ? { cmd: databaseCmd(kind, c.fields)! } : {}),
          env: envList({ ...databaseEnv(kind, c.fields), ...userEnv }),
          ports: c.is_public && c.public_port ? [{ hostPort: c.public_port, containerPort: DATABASE_ENGINES[kind].port }] : [],
          volumes: storages.map((s) => ({ volume: vol(s.name), target: s.mount_path })),
          ...(limitsSpec(c) ? { limits: limitsSpec(c) } : {}),
        },
      },
    ];
  }
  const volumes = [...new Set([...storages.map((s) => vol(s.name)), ...composeVolumes])];
  const compose = r.kind === 'service' || (r.kind === 'application' && Boolean((config as ApplicationConfig).compose));
  const scaled = compose && engineKind === 'standalone' ? containers.filter((c) => c.replicas !== undefined && c.replicas !== 1) : [];
  if (scaled.length) notes.push(`deploy.replicas is not applied on a standalone destination (one container per compose service): ${scaled.map((c) => c.name).join(', ')}.`);
  return {
    serverId: dest.server_id,
    engineKind,
    ...(swarm ? { swarm } : {}),
    ...(compose ? { compose } : {}),
    resourceUuid: r.uuid,
    hostAccess: dest.host_access === 1,
    network,
    ownNetwork,
    containers,
    volumes,
    notes,
  };
}

/** A compose file's containers as planned (`<uuid>-<name>`, reachable by their compose name): a service's, or a dockercompose application's. */
function composeContainers(
  uuid: string,
  list: ComposeContainer[],
  base: Pick<ContainerSpec, 'restartPolicy' | 'networkMode'>,
  labels: Record<string, string>,
  userEnv: Record<string, string>,
  vol: (name: string) => string,
): PlannedContainer[] {
  return list.map((k) => ({
    name: `${uuid}-${k.name}`,
    ...(k.dependsOn?.length ? { dependsOn: k.dependsOn.map((d) => ({ name: `${uuid}-${d.service}`, condition: d.condition })) } : {}),
    ...(k.replicas !== undefined ? { replicas: k.replicas } : {}),
    ...(k.endpointMode ? { endpointMode: k.endpointMode } : {}),
    spec: {
      ...base,
      networkAliases: [k.name],
      image: k.image,
      env: envList({ ...k.environment, ...userEnv }),
      ...(k.command ? { cmd: k.command } : {}),
      ...(k.entrypoint ? { entrypoint: k.entrypoint } : {}),
      ports: k.ports.map(composePort),
      volumes: k.mounts.map((m) => ({ volume: vol(m.volume), target: m.target, readOnly: m.readOnly })),
      binds: k.binds.map((b) => `${b.source}:${b.target}${b.readOnly ? ':ro' : ''}`),
      ...(k.restart ? { restartPolicy: { name: k.restart } } : {}),
      ...(k.privileged ? { privileged: true } : {}),
      ...(k.networkMode ? { networkMode: k.networkMode, networkAliases: [] } : {}),
      capAdd: k.capAdd ?? [],
      capDrop: k.capDrop ?? [],
      devices: k.devices ?? [],
      pidMode: k.pidMode ?? null,
      ipcMode: k.ipcMode ?? null,
      utsMode: k.utsMode ?? null,
      usernsMode: k.usernsMode ?? null,
      securityOpt: k.securityOpt ?? [],
      ...(k.user ? { user: k.user } : {}),
      ...(k.workingDir ? { workingDir: k.workingDir } : {}),
      ...(k.healthcheck ? { healthcheck: k.healthcheck } : {}),
      ...(k.limits ? { limits: k.limits } : {}),
      ...(k.stopGraceS !== undefined ? { stopTimeoutS: k.stopGraceS } : {}),
      labels: { ...k.labels, ...labels, 'berth.container': k.name },
    },
  }));
}

/** Why this plan may not run on its server (host-reaching settings without host access), or null. */
export function planRefusal(plan: Plan): string | null {
  if (plan.hostAccess) return null;
  for (const c of plan.containers) {
    const found = hostReaching(c.spec);
    if (found.length) return describeHostReach(found, `Container ${c.name}`);
  }
  return null;
}
