import { createHash } from 'node:crypto';
import { answerBound, follow, followSchema, followText } from '../answer-bound.js';
import { z } from 'zod';
import { atomically } from '../../store/atomic.js';
import { nowIso, type Db } from '../../store/db.js';
import { BerthError, notFound, validationError } from '../../errors.js';
import { ownedResource } from '../lookup.js';
import { sensitive } from '../redact.js';
import { defineOperation } from '../operation.js';
import { listOf, pageInput, pageOf } from '../pagination.js';
import { domains, flag, uuidParam } from '../validators.js';
import { requireFreeDomains } from '../domains.js';
import { normalizeDomains } from './applications.js';
import { READ, UPDATE } from './common.js';
import { aggregate, type ContainerObservation } from '../observed-status.js';
import { config, displayStatus } from './resource-common.js';
import type { ServiceConfig } from '../model/service.js';
import { logInput } from './resource-parts.js';
import { routeAtOnce } from './server-proxy.js';

// Coolify splits a service's containers into applications and databases by image name.
const DATABASE_IMAGES = [
  'postgres',
  'postgis',
  'mysql',
  'mariadb',
  'mongo',
  'redis',
  'keydb',
  'dragonfly',
  'clickhouse',
  'memcached',
  'couchdb',
  'neo4j',
  'influxdb',
  'surrealdb',
  'valkey',
  'postgresql',
  'timescaledb',
];

/** True when the image (any registry, any tag) is a database image. */
export function isDatabaseImage(image: string): boolean {
  const last = image.split('/').pop() ?? image;
  const base = (last.split('@')[0] ?? last).split(':')[0] ?? last;
  return DATABASE_IMAGES.includes(base);
}

/** A part's uuid: derived from its service's uuid and its compose service name, so it stays while the name stays. */
export function partUuid(serviceUuid: string, name: string): string {
  const h = createHash('sha256').update(`${serviceUuid}\0${name}`).digest();
  const alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789';
  let s = '';
  for (let i = 0; i < 24; i++) s += alphabet[h[i]! % alphabet.length];
  return s;
}

export const partSchema = z.object({
  uuid: z.string(),
  name: z.string(),
  human_name: z.string().nullable(),
  description: z.string().nullable(),
  image: z.string(),
  status: z.string(),
  /** Applications only: Coolify's comma-separated URLs (`url` on update); a record, as an application's domains. */
  fqdn: z.string().nullable().optional(),
});

type Kind = 'application' | 'database';

/**
 * Coolify's switches of a service's container: off is what berth does (every container counts in
 * the status; a server's log drain takes every container), on is refused by name; the image is the
 * compose file's.
 */
const off = (what: string) =>
  z
    .boolean()
    .refine((v) => !v, `berth does not support ${what} yet.`)
    .nullable()
    .optional();
const coolifyPartSwitches = {
  exclude_from_status: off('leaving a container out of the service status'),
  // A server's log drain ships every resource on it (log-drains.ts): there is no per-container switch to turn on.
  is_log_drain_enabled: z
    .boolean()
    .refine((v) => !v, "berth drains every resource of a server together: turn the server's log drain on (update_server_log_drains).")
    .nullable()
    .optional(),
  // The server's proxy applies them to an application's urls (on unless turned off, as Coolify's).
  is_gzip_enabled: flag.nullable().optional(),
  is_stripprefix_enabled: flag.nullable().optional(),
  image: z
    .string()
    .refine(() => false, 'berth takes the image from the compose file: change it in docker_compose_raw (update_service).')
    .nullable()
    .optional(),
};

/** One container's status as the engine was seen (the service's own status where berth does not observe it). */
function partStatus(r: ServiceRow, name: string): string {
  const seen = r.observed && r.deleting === null && r.status !== 'migrating' ? (JSON.parse(r.observed) as Record<string, ContainerObservation>)[`${r.uuid}-${name}`] : undefined;
  return seen ? aggregate({ [name]: seen }).status : displayStatus(r);
}
type ServiceRow = Pick<Awaited<ReturnType<typeof ownedResource>>, 'uuid' | 'config' | 'observed' | 'deleting' | 'status' | 'observed_status'>;

/** The service's parts of one kind, as their API shows them (and GET /services/{uuid} in its applications and databases). */
export function partViews(r: ServiceRow, kind: Kind) {
  const c = config<ServiceConfig>(r);
  return c.containers
    .filter((k) => isDatabaseImage(k.image) === (kind === 'database'))
    .map((k) => ({
      uuid: partUuid(r.uuid, k.name),
      name: k.name,
      human_name: c.parts?.[k.name]?.human_name ?? null,
      description: c.parts?.[k.name]?.description ?? null,
      image: k.image,
      status: partStatus(r, k.name),
      ...(kind === 'application' ? { fqdn: c.parts?.[k.name]?.fqdn ?? null } : {}),
    }));
}

/** One part of a team's service, by uuid; a part of another service (or kind) is a 404 like a missing one. */
export async function ownedPart(db: Db, teamId: number, uuid: string, partUuidValue: string, kind: Kind) {
  const r = await ownedResource(db, uuid, teamId, ['service']);
  const part = partViews(r, kind).find((p) => p.uuid === partUuidValue);
  if (!part) throw notFound();
  return { r, part };
}

function partsOf(kind: 'application' | 'database') {
  return defineOperation({
    name: `list_service_${kind}s`,
    title: `List service ${kind}s`,
    description: `List the ${kind} containers of a compose service (${kind === 'database' ? 'postgres, mysql, mariadb, mongo, redis, keydb, dragonfly, clickhouse and similar images' : 'containers whose image is not a database image'}), each with a uuid that stays while its compose service name stays.`,
    summary: `List a service's ${kind}s (its compose containers ${kind === 'database' ? 'running a database image' : 'not running a database image'}).`,
    permission: 'read',
    toolset: 'services',
    input: () => z.strictObject({ uuid: uuidParam, ...pageInput }),
    output: () => listOf(partSchema),
    annotations: READ,
    http: { method: 'GET', path: `/api/v1/services/{uuid}/${kind}s`, list: true },
    async run({ db, caller }, i) {
      const r = await ownedResource(db, i.uuid, caller.teamId, ['service']);
      return pageOf(partViews(r, kind), i);
    },
  });
}

/** One part: read, rename or describe, its logs, and start/stop/restart of its container alone. */
function partOperations(kind: Kind) {
  const param = kind === 'application' ? 'app_uuid' : 'database_uuid';
  const base = `/api/v1/services/{uuid}/${kind}s/{${param}}`;
  const ids = { uuid: uuidParam, [param]: uuidParam } as { uuid: typeof uuidParam; app_uuid: typeof uuidParam };
  const partOf = (i: object) => (i as Record<string, string>)[param]!;
  const one = `one ${kind} of a service (a compose container, from list_service_${kind}s)`;
  const effect = { start: 'Start', stop: 'Stop', restart: 'Restart' } as const;
  const others = { start: 'are left as they are', stop: 'keep running', restart: 'keep running' } as const;
  const actions = (['start', 'stop', 'restart'] as const).map((action) =>
    defineOperation({
      name: `${action}_service_${kind}`,
      title: `${effect[action]} a service ${kind}`,
      description: `${effect[action]} ${one} alone; the service's other containers ${others[action]}.`,
      summary: `${effect[action]} one ${kind} container of a service; the others are left as they are.`,
      permission: 'deploy',
      toolset: 'services',
      input: () => z.strictObject(ids),
      output: () => z.object({ message: z.string(), follow: followSchema }),
      annotations: { readOnly: false, destructive: action === 'stop', idempotent: action !== 'restart', openWorld: true },
      http: { method: 'POST', path: `${base}/${action}` },
      async run(ctx, i) {
        const { db, caller, runtime, logger } = ctx;
        const bound = answerBound(ctx);
        const { r, part } = await ownedPart(db, caller.teamId, i.uuid, partOf(i), kind);
        const f = follow.resource('services', r.uuid);
        // The engine's work goes on past the answer bound (a health check may take minutes): the
        // service's observed status is its record, as the engine watcher sees it.
        const work = runtime.serviceContainer(r.id, part.name, action);
        try {
          const w = await bound.wait(work, async () => ({ message: `${part.name}: ${action} running, ${bound.seconds()} s` }));
          if (w.ended) return { message: w.value, follow: f };
        } catch (err) {
          throw new BerthError('conflict', { message: (err as Error).message });
        }
        work.catch((err: Error) => logger.warn({ err: err.message, service: r.uuid, container: part.name }, `${action} of a service container failed after its answer`));
        const message = `${part.name}: ${action} goes on after ${bound.seconds()} s (its health check, or the engine, is slow); ${followText(f)}.`;
        bound.finish({ message });
        return { message, follow: f };
      },
    }),
  );
  return [
    defineOperation({
      name: `get_service_${kind}`,
      title: `Get a service ${kind}`,
      description: `Get ${one}: its name, human_name, description and image.`,
      summary: `Get one ${kind} of a service (a compose container) by its uuid.`,
      permission: 'read',
      toolset: 'services',
      input: () => z.strictObject(ids),
      output: () => partSchema,
      annotations: READ,
      http: { method: 'GET', path: base },
      async run({ db, caller }, i) {
        return (await ownedPart(db, caller.teamId, i.uuid, partOf(i), kind)).part;
      },
    }),
    defineOperation({
      name: `update_service_${kind}`,
      title: `Describe a service ${kind}`,
      description: `Set the human_name or description of ${one}.`,
      summary: `Name or describe one ${kind} of a service (human_name, description)${kind === 'application' ? '; url sets its URLs (force_domain_override=true to share one with another resource)' : ''}.`,
      permission: 'write',
      toolset: 'services',
      input: () =>
        z.strictObject({
          ...ids,
          human_name: z.string().max(255).nullable().optional(),
          description: z.string().max(1000).nullable().optional(),
          ...coolifyPartSwitches,
          ...(kind === 'application' ? { url: domains.nullable().optional(), force_domain_override: flag.optional() } : {}),
        }),
      output: () => partSchema,
      annotations: UPDATE,
      // Coolify takes force_domain_override from the query here.
      http: { method: 'PATCH', path: base, ...(kind === 'application' ? { query: ['force_domain_override'] } : {}) },
      async run(ctx, input) {
        const { db: store, caller } = ctx;
        const i = input as typeof input & { url?: string | null; force_domain_override?: boolean };
        const switches = { is_gzip_enabled: i.is_gzip_enabled ?? undefined, is_stripprefix_enabled: i.is_stripprefix_enabled ?? undefined };
        if (i.human_name === undefined && i.description === undefined && i.url === undefined && switches.is_gzip_enabled === undefined && switches.is_stripprefix_enabled === undefined)
          throw validationError({ human_name: ['At least one field must be provided.'] });
        // One transaction: two parts renamed at once both keep their names.
        const { r, answer } = await atomically(store, async (db) => {
          const { r, part } = await ownedPart(db, caller.teamId, i.uuid, partOf(i), kind);
          const c = config<ServiceConfig>(r);
          const was = c.parts?.[part.name] ?? { human_name: null, description: null };
          const now: NonNullable<ServiceConfig['parts']>[string] = {
            ...was,
            human_name: i.human_name === undefined ? was.human_name : i.human_name,
            description: i.description === undefined ? was.description : i.description,
          };
          for (const [k, v] of Object.entries(switches)) if (v !== undefined) now[k as keyof typeof switches] = v;
          if (i.url !== undefined) {
            now.fqdn = normalizeDomains(i.url);
            await requireFreeDomains(db, caller.teamId, now.fqdn, { resourceId: r.id, part: part.name }, i.force_domain_override);
          }
          c.parts = { ...c.parts, [part.name]: now };
          await db
            .updateTable('resources')
            .set({ config: JSON.stringify(c), updated_at: nowIso() })
            .where('id', '=', r.id)
            .execute();
          return { r, answer: { ...part, human_name: now.human_name, description: now.description, ...(kind === 'application' ? { fqdn: now.fqdn ?? null } : {}) } };
        });
        // Changed URLs (or how they are served) are routed now when the service runs.
        if (i.url !== undefined || switches.is_gzip_enabled !== undefined || switches.is_stripprefix_enabled !== undefined) await routeAtOnce(ctx, r);
        return answer;
      },
    }),
    defineOperation({
      name: `get_service_${kind}_logs`,
      title: `Get service ${kind} logs`,
      description: `The last lines (default 100) of the logs of ${one}; read:sensitive.`,
      summary: `Recent logs of one ${kind} container of a service (read:sensitive).`,
      permission: 'read:sensitive',
      toolset: 'services',
      input: () => z.strictObject({ ...ids, ...logInput }),
      output: () => z.object({ logs: sensitive(z.string()) }),
      annotations: { readOnly: true, destructive: false, idempotent: true, openWorld: true },
      // Coolify's route answers POST too for a service application's logs (not a database's).
      http: { method: 'GET', path: `${base}/logs`, ...(kind === 'application' ? { alsoPost: true as const } : {}) },
      async run({ db, caller, runtime }, i) {
        const { r, part } = await ownedPart(db, caller.teamId, i.uuid, partOf(i), kind);
        return { logs: await runtime.logs(r.id, { lines: i.lines, container: part.name, timestamps: Boolean(i.show_timestamps) }) };
      },
    }),
    ...actions,
  ];
}

export const servicePartOperations = [partsOf('application'), partsOf('database'), ...partOperations('application'), ...partOperations('database')];
