import { z } from 'zod';
import { sensitive } from '../redact.js';
import { atomically } from '../../store/atomic.js';
import { nowIso } from '../../store/db.js';
import { validationError } from '../../errors.js';
import { newUuid } from '../../ids.js';
import { ownedResource } from '../lookup.js';
import { requireFreeDomains } from '../domains.js';
import { domainProxyStatus, routeAtOnce } from './server-proxy.js';
import { deleteOperation } from './resource-delete.js';
import { defineOperation } from '../operation.js';
import { listOf, pageInput, pageOf } from '../pagination.js';
import { customLabelsInput, decodeCustomLabels, encodeCustomLabels } from '../custom-labels.js';
import { parseRunOptions, requireRunOptionsAccess } from '../run-options.js';
import { BUILD_PACKS, DEFAULT_IMAGES_TO_KEEP, isBuilt, type ApplicationConfig } from '../model/application.js';
import { checkLimits, givenHealthCheck, givenLimits, HEALTH_DEFAULTS, healthCheckInput, healthCheckOutput, limitsInput, limitsOutput, LIMITS_DEFAULTS } from '../runtime-fields.js';
import type { Db } from '../../store/db.js';
import { applySwarmFields, swarmInput, swarmOutput, swarmView } from '../swarm-fields.js';
import { description, domains, flag, imageName, imageTag, name, portsExposes, portsMappings, splitImage, tags, uuidParam } from '../validators.js';
import { CREATE, READ, UPDATE } from './common.js';
import { queueDeployment } from './deployments.js';
import {
  config,
  displayStatus,
  newResourceRow,
  placedRows,
  placedSchema,
  placeOf,
  placementInput,
  type Placements,
  resolvePlacement,
  type ResourceRow,
  VIEW_COLUMNS,
  type ViewRow,
  type Where,
} from './resource-common.js';
import { viewMemo } from '../view-memo.js';
import { APPLICATION_FIELDS, APPLICATION_UPDATE_FIELDS } from './coolify-fields.js';
import { applicationDestinations } from './application-destinations.js';
import { applicationPreviews, previewEntry } from './application-previews.js';
import { anyRepository, applyGitUpdate, buildInput, composeDomainsOf, composeDomainsView, gitBranch } from './git-fields.js';
import { TargetGuard } from '../outbound-guard.js';
import { DEFAULT_PREVIEW_URL_TEMPLATE, previewUrlTemplate } from '../model/preview.js';

export const applicationSchema = z.object({
  ...placedSchema,
  build_pack: z.enum(['dockerimage', ...BUILD_PACKS]),
  /** Built applications: the repository, branch and Dockerfile, or the inline Dockerfile. */
  git_repository: z.string().nullable(),
  git_branch: z.string().nullable(),
  base_directory: z.string().nullable(),
  dockerfile_location: z.string().nullable(),
  dockerfile: z.string().nullable(),
  /** nixpacks and static: the steps given in place of the detected ones. */
  install_command: z.string().nullable().meta({ 'berth.brief': true }),
  build_command: z.string().nullable().meta({ 'berth.brief': true }),
  start_command: z.string().nullable().meta({ 'berth.brief': true }),
  publish_directory: z.string().nullable().meta({ 'berth.brief': true }),
  /** dockercompose: where the compose file is, what the last build read there, and each compose service's domains. */
  docker_compose_location: z.string().nullable().meta({ 'berth.brief': true }),
  docker_compose_raw: sensitive(z.string().nullable().meta({ 'berth.brief': true })),
  docker_compose_domains: z.string().nullable().meta({ 'berth.brief': true }),
  docker_registry_image_name: z.string(),
  docker_registry_image_tag: z.string(),
  ports_exposes: z.string().nullable(),
  ports_mappings: z.string().nullable(),
  fqdn: z.string().nullable(),
  is_gzip_enabled: z.boolean().meta({ 'berth.brief': true }),
  is_stripprefix_enabled: z.boolean().meta({ 'berth.brief': true }),
  ...healthCheckOutput,
  ...limitsOutput,
  custom_labels: z.string().nullable().meta({ 'berth.brief': true }),
  custom_docker_run_options: z.string().nullable().meta({ 'berth.brief': true }),
  docker_images_to_keep: z.number().int().meta({ 'berth.brief': true }),
  ...swarmOutput,
  preview_url_template: z.string().meta({ 'berth.brief': true }),
});

export async function view(db: Db, r: ResourceRow, known?: Placements): Promise<z.infer<typeof applicationSchema>> {
  return applicationView(r, await placeOf(db, r, known));
}

/** A stored value, or the default where it was never set (null stays null, as stored). */
const or = <T>(v: T | undefined, d: T): T => (v === undefined ? d : v);
const H = HEALTH_DEFAULTS;
const L = LIMITS_DEFAULTS;

/**
 * An application as Coolify shows it: one object literal naming every field, no spread and no
 * Object.assign. V8 builds and stringifies such an object in fast mode; merged objects went to
 * dictionary mode, about 5× slower to build and 2× to stringify, which a list of 2,000
 * applications felt (bench/lists). The fields are the schema's, in its order (placedFields,
 * then healthCheckView's and limitsView's with their defaults).
 */
export function applicationView(r: ViewRow, where: Where): z.infer<typeof applicationSchema> {
  const { source, ...c } = config<ApplicationConfig>(r);
  const sw = swarmView(c);
  const git = source && 'git_repository' in source ? source : null;
  return {
    uuid: r.uuid,
    name: r.name,
    description: r.description,
    status: displayStatus(r),
    restart_count: r.restart_count ?? 0,
    last_exit_code: r.last_exit_code,
    observed_at: r.observed_at,
    environment_id: r.environment_id,
    destination_id: r.destination_id,
    destination_uuid: where.destination_uuid,
    server_uuid: where.server_uuid,
    environment_uuid: where.environment_uuid,
    project_uuid: where.project_uuid,
    tags: JSON.parse(r.tags) as string[],
    created_at: r.created_at,
    updated_at: r.updated_at,
    build_pack: c.build_pack,
    docker_registry_image_name: c.docker_registry_image_name,
    docker_registry_image_tag: c.docker_registry_image_tag,
    ports_exposes: c.ports_exposes,
    ports_mappings: c.ports_mappings,
    fqdn: c.fqdn,
    is_gzip_enabled: c.is_gzip_enabled ?? true,
    is_stripprefix_enabled: c.is_stripprefix_enabled ?? true,
    health_check_enabled: or(c.health_check_enabled, H.health_check_enabled),
    health_check_path: or(c.health_check_path, H.health_check_path),
    health_check_port: or(c.health_check_port, H.health_check_port),
    health_check_host: or(c.health_check_host, H.health_check_host),
    health_check_method: or(c.health_check_method, H.health_check_method),
    health_check_scheme: or(c.health_check_scheme, H.health_check_scheme),
    health_check_return_code: or(c.health_check_return_code, H.health_check_return_code),
    health_check_response_text: or(c.health_check_response_text, H.health_check_response_text),
    health_check_interval: or(c.health_check_interval, H.health_check_interval),
    health_check_timeout: or(c.health_check_timeout, H.health_check_timeout),
    health_check_retries: or(c.health_check_retries, H.health_check_retries),
    health_check_start_period: or(c.health_check_start_period, H.health_check_start_period),
    limits_memory: or(c.limits_memory, L.limits_memory),
    limits_memory_swap: or(c.limits_memory_swap, L.limits_memory_swap),
    limits_memory_swappiness: or(c.limits_memory_swappiness, L.limits_memory_swappiness),
    limits_memory_reservation: or(c.limits_memory_reservation, L.limits_memory_reservation),
    limits_cpus: or(c.limits_cpus, L.limits_cpus),
    limits_cpuset: or(c.limits_cpuset, L.limits_cpuset),
    limits_cpu_shares: or(c.limits_cpu_shares, L.limits_cpu_shares),
    custom_labels: encodeCustomLabels(c.custom_labels),
    custom_docker_run_options: c.custom_docker_run_options ?? null,
    docker_images_to_keep: c.docker_images_to_keep ?? DEFAULT_IMAGES_TO_KEEP,
    git_repository: git?.git_repository ?? null,
    git_branch: git?.git_branch ?? null,
    base_directory: git?.base_directory ?? null,
    dockerfile_location: c.build_pack === 'dockerfile' ? (git?.dockerfile_location ?? null) : null,
    dockerfile: source && 'dockerfile' in source ? source.dockerfile : null,
    install_command: git?.steps?.install_command ?? null,
    build_command: git?.steps?.build_command ?? null,
    start_command: git?.steps?.start_command ?? null,
    publish_directory: git?.steps?.publish_directory ?? null,
    docker_compose_location: c.build_pack === 'dockercompose' ? (git?.docker_compose_location ?? null) : null,
    docker_compose_raw: c.compose?.docker_compose_raw ?? null,
    docker_compose_domains: composeDomainsView(c.compose_domains),
    swarm_replicas: sw.swarm_replicas,
    swarm_placement_constraints: sw.swarm_placement_constraints,
    preview_url_template: c.preview_url_template ?? DEFAULT_PREVIEW_URL_TEMPLATE,
  };
}

/** The list's views: an unchanged row's view is reused, not built again (src/core/view-memo.ts). */
const listedApplication = viewMemo(applicationView, (r) => r.uuid);

/** Image name and tag as Coolify stores them: a tag inside the name wins over the default. */
function image(nameRef: string, tag: string | undefined): { docker_registry_image_name: string; docker_registry_image_tag: string } {
  const parsed = splitImage(nameRef);
  if (!parsed) throw validationError({ docker_registry_image_name: ['Invalid image reference.'] });
  return { docker_registry_image_name: parsed.name, docker_registry_image_tag: parsed.tag ?? tag ?? 'latest' };
}

/** Coolify's fqdn: comma-separated URLs without spaces, the same from create and patch. */
export const normalizeDomains = (v: string | null | undefined): string | null =>
  v
    ?.split(',')
    .map((d) => d.trim())
    .join(',') ?? null;

export const appFields = {
  name: name.optional(),
  description: description.optional(),
  docker_registry_image_name: imageName,
  docker_registry_image_tag: imageTag.optional(),
  ports_exposes: portsExposes.nullable().optional(),
  ports_mappings: portsMappings.nullable().optional(),
  domains: domains.nullable().optional(),
  tags: tags.optional(),
  ...runtimeFields(),
};

/** Coolify's runtime fields of an application, on every create and on update. */
export function runtimeFields() {
  return {
    ...healthCheckInput,
    ...limitsInput,
    custom_labels: customLabelsInput,
    custom_docker_run_options: z.string().max(4096).nullable().meta({ 'berth.brief': true }).optional(),
    docker_images_to_keep: z.number().int().min(0).max(100).meta({ 'berth.brief': true }).optional(),
    // The server's proxy applies them to the application's domains.
    is_gzip_enabled: flag.meta({ 'berth.brief': true }).optional(),
    is_stripprefix_enabled: flag.meta({ 'berth.brief': true }).optional(),
    force_domain_override: flag.meta({ 'berth.brief': true }).optional(),
    ...swarmInput,
    // A pull request's preview domain (deploy with pr): Coolify's template.
    preview_url_template: previewUrlTemplate.meta({ 'berth.brief': true }).optional(),
  };
}

async function hostAccessOf(db: Db, destinationId: number): Promise<boolean> {
  const s = await db.selectFrom('destinations as d').innerJoin('servers as s', 's.id', 'd.server_id').select('s.host_access').where('d.id', '=', destinationId).executeTakeFirstOrThrow();
  return s.host_access === 1;
}

/**
 * Sets the runtime fields given in an input on a config, checking them together and, for run
 * options that reach into the host, against the server's host access: 422 naming the field.
 */
export async function applyRuntimeFields(db: Db, c: ApplicationConfig, i: Record<string, unknown>, destinationId: number): Promise<void> {
  Object.assign(c, givenHealthCheck(i), givenLimits(i));
  checkLimits(c);
  if (i.docker_images_to_keep !== undefined) c.docker_images_to_keep = i.docker_images_to_keep as number;
  if (i.preview_url_template !== undefined) c.preview_url_template = i.preview_url_template as string;
  applySwarmFields(c, i);
  if (i.is_gzip_enabled !== undefined) c.is_gzip_enabled = i.is_gzip_enabled as boolean;
  if (i.is_stripprefix_enabled !== undefined) c.is_stripprefix_enabled = i.is_stripprefix_enabled as boolean;
  if (i.custom_labels !== undefined) c.custom_labels = decodeCustomLabels(i.custom_labels as string | null);
  const run = i.custom_docker_run_options as string | null | undefined;
  if (run !== undefined) {
    c.custom_docker_run_options = run?.trim() || null;
    if (c.custom_docker_run_options) requireRunOptionsAccess(parseRunOptions(c.custom_docker_run_options), await hostAccessOf(db, destinationId));
  }
}

export const applicationOperations = [
  defineOperation({
    name: 'list_applications',
    title: 'List applications',
    description: "List the team's applications (paginated; filter by tag).",
    summary: 'List the applications of the team.',
    permission: 'read',
    toolset: 'applications',
    input: () => z.strictObject({ ...pageInput, tag: z.string().max(64).optional() }),
    output: () => listOf(applicationSchema),
    annotations: READ,
    http: { method: 'GET', path: '/api/v1/applications', list: true },
    async run({ db, caller }, { tag, ...p }) {
      let rows = await db.selectFrom('resources').select(VIEW_COLUMNS).where('team_id', '=', caller.teamId).where('kind', '=', 'application').orderBy('id').execute();
      if (tag) rows = rows.filter((r) => (JSON.parse(r.tags) as string[]).includes(tag));
      const { items, ...rest } = pageOf(rows, p);
      return { items: await placedRows(db, items, listedApplication), ...rest };
    },
  }),
  defineOperation({
    name: 'create_application',
    title: 'Create an application from an image',
    description:
      "Create an application that runs a Docker image on a server, in a project environment. Needs project_uuid, server_uuid, environment_name (or environment_uuid) and docker_registry_image_name. Nothing runs until you deploy (or pass instant_deploy: true). Also takes Coolify's health_check_*, limits_*, custom_labels, custom_docker_run_options.",
    summary: 'Create an application from a Docker image (not deployed unless instant_deploy).',
    permission: 'write',
    toolset: 'applications',
    input: () => z.strictObject({ ...placementInput, ...appFields, instant_deploy: z.boolean().optional() }),
    output: () => z.object({ uuid: z.string(), domains: z.string().nullable(), deployment_uuid: z.string().optional() }),
    annotations: CREATE,
    http: { method: 'POST', path: '/api/v1/applications/dockerimage', status: 201 },
    unsupported: APPLICATION_FIELDS,
    async run(ctx, i) {
      const { db, caller } = ctx;
      const place = await resolvePlacement(db, caller.teamId, i);
      const uuid = newUuid();
      const c: ApplicationConfig = {
        build_pack: 'dockerimage',
        ...image(i.docker_registry_image_name, i.docker_registry_image_tag),
        ports_exposes: i.ports_exposes ?? null,
        ports_mappings: i.ports_mappings ?? null,
        fqdn: normalizeDomains(i.domains),
      };
      await applyRuntimeFields(db, c, i, place.destinationId);
      // The check and the insert in one transaction: of two creates claiming one domain, one wins.
      const row = await atomically(db, async (trx) => {
        await requireFreeDomains(trx, caller.teamId, c.fqdn, {}, i.force_domain_override);
        return trx
          .insertInto('resources')
          .values(newResourceRow({ uuid, teamId: caller.teamId, kind: 'application', place, name: i.name ?? `docker-image-${uuid}`, description: i.description, tags: i.tags }, c))
          .returningAll()
          .executeTakeFirstOrThrow();
      });
      const deployment = i.instant_deploy ? await queueDeployment(ctx, row, 'deploy', false) : undefined;
      return { uuid, domains: c.fqdn, ...(deployment ? { deployment_uuid: deployment.uuid } : {}) };
    },
  }),
  defineOperation({
    name: 'get_application',
    title: 'Get an application',
    description: 'Get an application: image, ports, domains, status (as its engine says) and where it lives.',
    default: true,
    summary: 'Get an application.',
    permission: 'read',
    toolset: 'applications',
    input: () => z.strictObject({ uuid: uuidParam }),
    output: () =>
      applicationSchema.extend({
        proxy_status: z.string().nullable().describe('The domains’ proxy: running, exited; null: none.').meta({ 'berth.brief': true }),
        additional_destinations: z.array(z.object({ uuid: z.string(), server_uuid: z.string(), status: z.string().nullable() })).meta({ 'berth.brief': true }),
        running_copies: z.number().int().describe('Destinations (primary included) it runs on now.').meta({ 'berth.brief': true }),
        previews: z.array(previewEntry).describe('Pull requests’ previews (deploy with pr).').meta({ 'berth.brief': true }),
      }),
    annotations: READ,
    http: { method: 'GET', path: '/api/v1/applications/{uuid}' },
    async run(ctx, { uuid }) {
      const r = await ownedResource(ctx.db, uuid, ctx.caller.teamId, ['application']);
      const v = await view(ctx.db, r);
      const [, ...copies] = await applicationDestinations(ctx.db, r);
      const running = [r.observed_status, ...copies.map((c) => c.status)].filter((s) => s?.startsWith('running')).length;
      return {
        ...v,
        proxy_status: await domainProxyStatus(ctx, r, v.fqdn),
        additional_destinations: copies.map((c) => ({ uuid: c.uuid, server_uuid: c.server_uuid, status: c.status })),
        running_copies: running,
        previews: await applicationPreviews(ctx.db, r.id),
      };
    },
  }),
  defineOperation({
    name: 'update_application',
    title: 'Update an application',
    description:
      "Change an application (image, ports, domains, name; a git application's git_repository, git_branch, build_pack, base_directory, dockerfile_location, install/build/start_command, publish_directory, docker_compose_location, docker_compose_domains, checked as on create; Coolify's health_check_*, limits_*, custom_labels, custom_docker_run_options). Deploy afterwards to apply.",
    summary: 'Change an application; redeploy for the change to reach the running container.',
    permission: 'write',
    toolset: 'applications',
    input: () =>
      z.strictObject({
        uuid: uuidParam,
        ...appFields,
        docker_registry_image_name: imageName.optional(),
        // A git application's source and build, checked as on create (git-fields.ts).
        git_repository: anyRepository.optional(),
        git_branch: gitBranch.optional(),
        build_pack: z.string().max(64).optional(),
        ...buildInput,
      }),
    output: () => z.object({ uuid: z.string() }),
    annotations: UPDATE,
    http: { method: 'PATCH', path: '/api/v1/applications/{uuid}' },
    unsupported: APPLICATION_UPDATE_FIELDS,
    async run(ctx, input) {
      const { db: store, caller, config: settings } = ctx;
      const {
        uuid,
        git_repository,
        git_branch,
        base_directory,
        dockerfile_location,
        build_pack,
        install_command,
        build_command,
        start_command,
        publish_directory,
        docker_compose_location,
        docker_compose_domains,
        ...i
      } = input;
      // Read, merge and write the config in one transaction: concurrent PATCHes of different
      // fields both land.
      const r = await atomically(store, async (db) => {
        const r = await ownedResource(db, uuid, caller.teamId, ['application']);
        const c = config<ApplicationConfig>(r);
        if (isBuilt(c) && (i.docker_registry_image_name !== undefined || i.docker_registry_image_tag !== undefined)) {
          throw validationError({
            [i.docker_registry_image_name !== undefined ? 'docker_registry_image_name' : 'docker_registry_image_tag']: ['This application is built from a Dockerfile: each deploy builds its image.'],
          });
        }
        if (i.docker_registry_image_name !== undefined) Object.assign(c, image(i.docker_registry_image_name, i.docker_registry_image_tag ?? c.docker_registry_image_tag));
        else if (i.docker_registry_image_tag !== undefined) c.docker_registry_image_tag = i.docker_registry_image_tag;
        if (i.ports_exposes !== undefined) c.ports_exposes = i.ports_exposes;
        if (i.ports_mappings !== undefined) c.ports_mappings = i.ports_mappings;
        if (i.domains !== undefined) {
          if (c.build_pack === 'dockercompose' && i.domains)
            throw validationError({ domains: ['A dockercompose application has a domain per compose service: send docker_compose_domains ([{ name, domain }]).'] });
          c.fqdn = normalizeDomains(i.domains);
          await requireFreeDomains(db, caller.teamId, c.fqdn, { resourceId: r.id }, i.force_domain_override);
        }
        const build = { base_directory, dockerfile_location, install_command, build_command, start_command, publish_directory, docker_compose_location };
        applyGitUpdate(c, { git_repository, git_branch, build_pack, ...build, ports_exposes: c.ports_exposes }, new TargetGuard(settings.outboundAllowedTargets));
        const parts = composeDomainsOf(c.build_pack, docker_compose_domains);
        if (parts !== undefined) {
          for (const [part, fqdn] of Object.entries(parts)) await requireFreeDomains(db, caller.teamId, fqdn, { resourceId: r.id, part }, i.force_domain_override);
          if (Object.keys(parts).length) c.compose_domains = parts;
          else delete c.compose_domains;
        }
        await applyRuntimeFields(db, c, i, r.destination_id);
        await db
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
        return r;
      });
      // A changed domain (or port) is routed now when the application runs, not at its next deploy.
      if (i.domains !== undefined || docker_compose_domains !== undefined || i.ports_exposes !== undefined || i.is_gzip_enabled !== undefined || i.is_stripprefix_enabled !== undefined)
        await routeAtOnce(ctx, r);
      return { uuid };
    },
  }),
  deleteOperation('applications'),
];
