import { z } from 'zod';
import { atomically } from '../../store/atomic.js';
import { nowIso } from '../../store/db.js';
import { validationError } from '../../errors.js';
import { newUuid } from '../../ids.js';
import { ownedResource } from '../lookup.js';
import { requireFreeDomains } from '../domains.js';
import { domainProxyStatus } from './server-proxy.js';
import { deleteOperation } from './resource-delete.js';
import { defineOperation } from '../operation.js';
import { listOf, pageInput, pageOf } from '../pagination.js';
import { customLabelsInput, decodeCustomLabels, encodeCustomLabels } from '../custom-labels.js';
import { parseRunOptions, requireRunOptionsAccess } from '../run-options.js';
import { BUILD_PACKS, DEFAULT_IMAGES_TO_KEEP, isBuilt, type ApplicationConfig } from '../model/application.js';
import { checkLimits, givenHealthCheck, givenLimits, healthCheckInput, healthCheckOutput, healthCheckView, limitsInput, limitsOutput, limitsView } from '../runtime-fields.js';
import type { Db } from '../../store/db.js';
import { applySwarmFields, swarmInput, swarmOutput, swarmView } from '../swarm-fields.js';
import { description, domains, flag, imageName, imageTag, name, portsExposes, portsMappings, splitImage, tags, uuidParam } from '../validators.js';
import { CREATE, READ, UPDATE } from './common.js';
import { queueDeployment } from './deployments.js';
import { config, newResourceRow, placedSchema, placedView, placedViews, placementInput, type Placements, resolvePlacement, type ResourceRow } from './resource-common.js';
import { APPLICATION_FIELDS, APPLICATION_UPDATE_FIELDS } from './coolify-fields.js';
import { anyRepository, applyGitUpdate, gitBranch, repoPath } from './git-fields.js';
import { TargetGuard } from '../outbound-guard.js';

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
});

export async function view(db: Db, r: ResourceRow, known?: Placements): Promise<z.infer<typeof applicationSchema>> {
  const { source, ...c } = config<ApplicationConfig>(r);
  const git = source && 'git_repository' in source ? source : null;
  // Object.assign, not one literal of spreads: V8 built that literal ~20× slower, which a list of
  // 2,000 applications felt (bench/lists). The keys come in the same order.
  return Object.assign(
    await placedView(db, r, known),
    {
      build_pack: c.build_pack,
      docker_registry_image_name: c.docker_registry_image_name,
      docker_registry_image_tag: c.docker_registry_image_tag,
      ports_exposes: c.ports_exposes,
      ports_mappings: c.ports_mappings,
      fqdn: c.fqdn,
      is_gzip_enabled: c.is_gzip_enabled ?? true,
      is_stripprefix_enabled: c.is_stripprefix_enabled ?? true,
    },
    healthCheckView(c),
    limitsView(c),
    {
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
    },
    swarmView(c),
  );
}

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
      let rows = await db.selectFrom('resources').selectAll().where('team_id', '=', caller.teamId).where('kind', '=', 'application').orderBy('id').execute();
      if (tag) rows = rows.filter((r) => (JSON.parse(r.tags) as string[]).includes(tag));
      const { items, ...rest } = pageOf(rows, p);
      return { items: await placedViews(db, items, view), ...rest };
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
      await requireFreeDomains(db, caller.teamId, c.fqdn, {}, i.force_domain_override);
      const row = await db
        .insertInto('resources')
        .values(newResourceRow({ uuid, teamId: caller.teamId, kind: 'application', place, name: i.name ?? `docker-image-${uuid}`, description: i.description, tags: i.tags }, c))
        .returningAll()
        .executeTakeFirstOrThrow();
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
      }),
    annotations: READ,
    http: { method: 'GET', path: '/api/v1/applications/{uuid}' },
    async run(ctx, { uuid }) {
      const r = await ownedResource(ctx.db, uuid, ctx.caller.teamId, ['application']);
      const v = await view(ctx.db, r);
      return { ...v, proxy_status: await domainProxyStatus(ctx, r, v.fqdn) };
    },
  }),
  defineOperation({
    name: 'update_application',
    title: 'Update an application',
    description:
      "Change an application (image, ports, domains, name, a git application's git_repository, git_branch, base_directory, dockerfile_location; Coolify's health_check_*, limits_*, custom_labels, custom_docker_run_options). Deploy afterwards to apply.",
    summary: 'Change an application; redeploy for the change to reach the running container.',
    permission: 'write',
    toolset: 'applications',
    input: () =>
      z.strictObject({
        uuid: uuidParam,
        ...appFields,
        docker_registry_image_name: imageName.optional(),
        // A git application's source, checked as on create (git-fields.ts); the build pack stays.
        git_repository: anyRepository.optional(),
        git_branch: gitBranch.optional(),
        base_directory: repoPath.optional(),
        dockerfile_location: repoPath.optional(),
        build_pack: z.string().max(64).optional(),
      }),
    output: () => z.object({ uuid: z.string() }),
    annotations: UPDATE,
    http: { method: 'PATCH', path: '/api/v1/applications/{uuid}' },
    unsupported: APPLICATION_UPDATE_FIELDS,
    async run({ db: store, caller, config: settings }, { uuid, git_repository, git_branch, base_directory, dockerfile_location, build_pack, ...i }) {
      // Read, merge and write the config in one transaction: concurrent PATCHes of different
      // fields both land.
      return atomically(store, async (db) => {
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
          c.fqdn = normalizeDomains(i.domains);
          await requireFreeDomains(db, caller.teamId, c.fqdn, { resourceId: r.id }, i.force_domain_override);
        }
        applyGitUpdate(c, { git_repository, git_branch, base_directory, dockerfile_location, build_pack }, new TargetGuard(settings.outboundAllowedTargets));
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
        return { uuid };
      });
    },
  }),
  deleteOperation('applications'),
];
