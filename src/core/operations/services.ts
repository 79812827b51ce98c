import { newEnvRow } from './resource-parts.js';
import { brief } from '../runtime-fields.js';
import { z } from 'zod';
import { atomically } from '../../store/atomic.js';
import type { Db } from '../../store/db.js';
import { nowIso } from '../../store/db.js';
import { composeInput, parseCompose, requireHostAccess, type ComposeContainer } from '../compose.js';
import { composeSwarmProblems } from '../compose-swarm.js';
import { newUuid } from '../../ids.js';
import { ownedResource } from '../lookup.js';
import type { ServiceConfig } from '../model/service.js';
import { deleteOperation } from './resource-delete.js';
import { defineOperation } from '../operation.js';
import { listOf, paged, pageInput } from '../pagination.js';
import { sensitive } from '../redact.js';
import { description, name, tags, uuidParam } from '../validators.js';
import { CREATE, READ, stamps, UPDATE } from './common.js';
import { queueDeployment } from './deployments.js';
import { LIST_TEMPLATES_TOOL, templateEnvironment, templateFor, templateType } from './service-templates.js';
import { validationError } from '../../errors.js';
import { partSchema, partViews } from './service-parts.js';
import { applyServiceUrls, serviceDomains, serviceUrlsInput } from './service-urls.js';
import { domainProxyStatus, routeAtOnce } from './server-proxy.js';
import { config, newResourceRow, placedSchema, placedView, placedViews, placementInput, type Placements, resolvePlacement, serverOf, type ResourceRow } from './resource-common.js';

/**
 * Coolify's is_container_label_escape_enabled: true (its default) keeps `$` in labels literal,
 * which is what berth does with every label; false asks for interpolation berth does not do.
 */
const labelEscape = z
  .boolean()
  .refine((v) => v, 'berth does not support turning label escaping off yet: it keeps every label literal (no $ interpolation).')
  .optional();

export const serviceSchema = z.object({
  ...placedSchema,
  /** The one-click template it was made from (create_service's type), or null. */
  service_type: z.string().nullable(),
  /** The compose file as YAML (decoded); sensitive. */
  docker_compose_raw: sensitive(z.string()),
  containers: z.array(z.object({ name: z.string(), image: z.string(), volumes: z.array(z.string()) })),
  volumes: z.array(z.string()),
  /** True: the containers join the destination's network beside its other resources; false: a network of the service's own. */
  connect_to_docker_network: z.boolean(),
});

async function view(db: Db, r: ResourceRow, known?: Placements): Promise<z.infer<typeof serviceSchema>> {
  const c = config<ServiceConfig>(r);
  return {
    ...(await placedView(db, r, known)),
    service_type: c.template ?? null,
    docker_compose_raw: c.docker_compose_raw,
    containers: c.containers.map((k) => ({ name: k.name, image: k.image, volumes: k.mounts.map((m) => m.volume) })),
    volumes: c.volumes,
    connect_to_docker_network: c.connect_to_docker_network !== false,
  };
}

/** One storage row per named volume, at the first place a container mounts it. */
export async function syncStorages(db: Db, resourceId: number, containers: ComposeContainer[]) {
  const wanted = new Map<string, { target: string; container: string }>();
  for (const k of containers) for (const m of k.mounts) if (!wanted.has(m.volume)) wanted.set(m.volume, { target: m.target, container: k.name });
  const existing = await db.selectFrom('storages').select(['id', 'name']).where('resource_id', '=', resourceId).execute();
  for (const e of existing) if (!wanted.has(e.name)) await db.deleteFrom('storages').where('id', '=', e.id).execute();
  for (const [volume, w] of wanted) {
    const e = existing.find((x) => x.name === volume);
    if (e) await db.updateTable('storages').set({ mount_path: w.target, container: w.container, updated_at: nowIso() }).where('id', '=', e.id).execute();
    else
      await db
        .insertInto('storages')
        .values({ uuid: newUuid(), resource_id: resourceId, name: volume, mount_path: w.target, container: w.container, engine_volume: null, ...stamps() })
        .execute();
  }
}

/** 422 naming every compose key a swarm stack cannot run (a service on a swarm destination). */
function requireSwarmFit(containers: ComposeContainer[]): void {
  const problems = composeSwarmProblems(containers);
  if (problems.length) throw validationError({ docker_compose_raw: problems });
}

/** A new service's generated variables: runtime and build time, as Coolify's defaults. */
async function insertVariables(db: Db, resourceId: number, env: Record<string, string>) {
  const rows = Object.entries(env).map(([key, value]) => newEnvRow(resourceId, key, { value }));
  if (rows.length) await db.insertInto('environment_variables').values(rows).execute();
}

export const serviceOperations = [
  defineOperation({
    name: 'list_services',
    title: 'List services',
    description: "List the team's services (docker compose stacks) with their containers and volumes.",
    summary: 'List the services (compose stacks) of the team.',
    permission: 'read',
    toolset: 'services',
    input: () => z.strictObject({ ...pageInput }),
    output: () => listOf(serviceSchema),
    annotations: READ,
    http: { method: 'GET', path: '/api/v1/services', list: true },
    async run({ db, caller }, p) {
      const base = db.selectFrom('resources').where('team_id', '=', caller.teamId).where('kind', '=', 'service');
      return paged(
        base,
        p,
        (q) => q.selectAll().orderBy('id'),
        (rows) => placedViews(db, rows, view),
      );
    },
  }),
  defineOperation({
    name: 'create_service',
    title: 'Create a service',
    description:
      'Create a service from a one-click template (type, e.g. "uptime-kuma"; list_service_templates lists them; passwords and users generated per service as its variables) or from a docker compose file (docker_compose_raw, base64 as Coolify expects, or plain YAML). Named volumes only: settings that reach into the host need host_access on the server. Nothing runs until you deploy (or instant_deploy).',
    summary: 'Create a service from a one-click template (type) or a docker compose file (base64 or YAML).',
    permission: 'write',
    toolset: 'services',
    input: () =>
      z.strictObject({
        ...placementInput,
        name: name.optional(),
        description: description.optional(),
        type: templateType.optional().describe('A one-click template (list_service_templates); instead of docker_compose_raw.'),
        docker_compose_raw: composeInput.optional(),
        instant_deploy: z.boolean().optional(),
        is_container_label_escape_enabled: labelEscape,
        tags: tags.optional(),
        ...serviceUrlsInput,
      }),
    output: () => z.object({ uuid: z.string(), domains: z.array(z.string()), deployment_uuid: z.string().optional() }),
    annotations: CREATE,
    http: { method: 'POST', path: '/api/v1/services', status: 201 },
    async run(ctx, i) {
      const { db, caller } = ctx;
      if ((i.type === undefined) === (i.docker_compose_raw === undefined)) {
        const both = i.type !== undefined;
        throw validationError({
          [both ? 'docker_compose_raw' : 'type']: [both ? 'Give either type or docker_compose_raw, not both.' : `Give type (a one-click template: ${LIST_TEMPLATES_TOOL}) or docker_compose_raw.`],
        });
      }
      const template = i.type === undefined ? undefined : await templateFor(ctx, i.type);
      const compose = parseCompose(template ? template.compose : i.docker_compose_raw!);
      const place = await resolvePlacement(db, caller.teamId, i, 'service');
      requireHostAccess(compose, (await serverOf(db, { destination_id: place.destinationId })).host_access === 1);
      if (place.swarm) requireSwarmFit(compose.containers);
      const uuid = newUuid();
      const c: ServiceConfig = { docker_compose_raw: compose.yaml, containers: compose.containers, volumes: compose.volumes, ...(template ? { template: template.type } : {}) };
      const env = template ? templateEnvironment(compose.yaml, uuid, compose.containers) : {};
      // The URLs' claims and the insert in one transaction: of two creates claiming one domain, one wins.
      const row = await atomically(db, async (trx) => {
        await applyServiceUrls(trx, caller.teamId, c, i.urls, {}, i.force_domain_override);
        const r = await trx
          .insertInto('resources')
          .values(
            newResourceRow({ uuid, teamId: caller.teamId, kind: 'service', place, name: i.name ?? `${template?.type ?? 'service'}-${uuid.slice(0, 10)}`, description: i.description, tags: i.tags }, c),
          )
          .returningAll()
          .executeTakeFirstOrThrow();
        await syncStorages(trx, r.id, compose.containers);
        await insertVariables(trx, r.id, env);
        return r;
      });
      const deployment = i.instant_deploy ? await queueDeployment(ctx, row, 'deploy', false) : undefined;
      return { uuid, domains: serviceDomains(c), ...(deployment ? { deployment_uuid: deployment.uuid } : {}) };
    },
  }),
  defineOperation({
    name: 'get_service',
    title: 'Get a service',
    description: 'A service: its containers, volumes, applications and databases. The compose file needs read:sensitive.',
    default: true,
    summary: 'Get a service with its containers, volumes, applications and databases (the compose file needs read:sensitive).',
    permission: 'read',
    toolset: 'services',
    input: () => z.strictObject({ uuid: uuidParam }),
    // Coolify loads the service's applications and databases here (service_by_uuid), not in its list.
    // Brief: the default tools/list stays in its budget; the description names them, REST and OpenAPI keep them.
    output: () =>
      serviceSchema.extend({
        applications: brief(z.array(partSchema)),
        databases: brief(z.array(partSchema)),
        proxy_status: z.string().nullable().describe('The urls’ proxy: running, exited; null: none.').meta({ 'berth.brief': true }),
      }),
    annotations: READ,
    http: { method: 'GET', path: '/api/v1/services/{uuid}' },
    async run(ctx, { uuid }) {
      const r = await ownedResource(ctx.db, uuid, ctx.caller.teamId, ['service']);
      const urls = serviceDomains(config<ServiceConfig>(r)).join(',');
      return { ...(await view(ctx.db, r)), applications: partViews(r, 'application'), databases: partViews(r, 'database'), proxy_status: await domainProxyStatus(ctx, r, urls || null) };
    },
  }),
  defineOperation({
    name: 'update_service',
    title: 'Update a service',
    description: 'Change a service or replace its compose file (same rules as create). Redeploy to apply.',
    summary: 'Change a service or replace its compose file; redeploy to apply.',
    permission: 'write',
    toolset: 'services',
    input: () =>
      z.strictObject({
        uuid: uuidParam,
        name: name.optional(),
        description: description.optional(),
        docker_compose_raw: composeInput.optional(),
        connect_to_docker_network: z
          .boolean()
          .optional()
          .describe("true: the containers join the destination's network (other resources there reach them by name); false: a network of the service's own. Applied at the next deploy."),
        is_container_label_escape_enabled: labelEscape,
        tags: tags.optional(),
        ...serviceUrlsInput,
      }),
    output: () => z.object({ uuid: z.string(), domains: z.array(z.string()) }),
    annotations: UPDATE,
    http: { method: 'PATCH', path: '/api/v1/services/{uuid}' },
    async run(ctx, { uuid, ...i }) {
      const { db, caller } = ctx;
      const compose = i.docker_compose_raw === undefined ? undefined : parseCompose(i.docker_compose_raw);
      // Read, merge and write in one transaction: concurrent PATCHes of different fields both land.
      const { r, c } = await atomically(db, async (trx) => {
        const r = await ownedResource(trx, uuid, caller.teamId, ['service']);
        if (compose) requireHostAccess(compose, (await serverOf(trx, r)).host_access === 1);
        if (compose && (await trx.selectFrom('destinations').select('type').where('id', '=', r.destination_id).executeTakeFirstOrThrow()).type === 'swarm') requireSwarmFit(compose.containers);
        const c = config<ServiceConfig>(r);
        if (compose) Object.assign(c, { docker_compose_raw: compose.yaml, containers: compose.containers, volumes: compose.volumes });
        if (i.connect_to_docker_network !== undefined) c.connect_to_docker_network = i.connect_to_docker_network;
        await applyServiceUrls(trx, caller.teamId, c, i.urls, { resourceId: r.id }, i.force_domain_override);
        await trx
          .updateTable('resources')
          .set({
            name: i.name ?? r.name,
            description: i.description === undefined ? r.description : i.description,
            tags: i.tags ? JSON.stringify(i.tags) : r.tags,
            config: JSON.stringify(c),
            updated_at: nowIso(),
          })
          .where('id', '=', r.id)
          .execute();
        if (compose) await syncStorages(trx, r.id, compose.containers);
        // A template service's new compose may name magic variables it lacks: generated as at create.
        if (compose && c.template) {
          const have = new Set((await trx.selectFrom('environment_variables').select('key').where('resource_id', '=', r.id).where('is_preview', '=', 0).execute()).map((e) => e.key));
          const fresh = Object.entries(templateEnvironment(compose.yaml, r.uuid, compose.containers)).filter(([k]) => !have.has(k));
          await insertVariables(trx, r.id, Object.fromEntries(fresh));
        }
        return { r, c };
      });
      if (i.urls?.length) await routeAtOnce(ctx, r);
      return { uuid, domains: serviceDomains(c) };
    },
  }),
  deleteOperation('services'),
];
