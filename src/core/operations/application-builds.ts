import { z } from 'zod';
import { validationError } from '../errors.js';
import { newUuid } from '../ids.js';
import { defineOperation, type OperationContext } from '../operation.js';
import { TargetGuard } from '../outbound-guard.js';
import { parseTarget } from '../target-url.js';
import { domains, description, name, portsExposes, portsMappings, tags } from '../validators.js';
import { CREATE } from './common.js';
import { queueDeployment } from './deployments.js';
import { applyRuntimeFields, normalizeDomains, runtimeFields } from './applications.js';
import { UNBUILT_TAG, type ApplicationConfig, type BuildSource } from '../model/application.js';
import { newResourceRow, placementInput, resolvePlacement } from './resource-common.js';

const shared = {
  ...placementInput,
  name: name.optional(),
  description: description.optional(),
  ports_exposes: portsExposes,
  ports_mappings: portsMappings.nullable().optional(),
  domains: domains.nullable().optional(),
  tags: tags.optional(),
  instant_deploy: z.boolean().optional(),
  ...runtimeFields(),
};

const output = z.object({ uuid: z.string(), domains: z.string().nullable(), deployment_uuid: z.string().optional() });

/** A path inside the repository, Coolify style ("/", "/app", "/Dockerfile"): no "..", no control characters. */
const repoPath = z
  .string()
  .max(255)
  .regex(/^\/?[A-Za-z0-9._@+\-/ ]*$/, 'Use letters, digits, spaces and . _ @ + - / only.')
  .refine((p) => !p.split('/').includes('..'), 'Must stay inside the repository (no "..").');

/** A branch name git accepts, never one that reads as an option. */
const gitBranch = z
  .string()
  .min(1)
  .max(255)
  .regex(/^[A-Za-z0-9._/-]+$/, 'Use letters, digits and . _ / - only.')
  .refine((b) => !b.startsWith('-') && !b.includes('..') && !b.endsWith('.lock') && !b.endsWith('/'), 'Not a valid branch name.');

/** A public repository URL: http, https or git, read by the one parser (target-url.ts): no credentials, nothing parsers disagree on. */
const gitRepository = z
  .string()
  .max(2048)
  .superRefine((u, ctx) => {
    const t = parseTarget(u, ['http', 'https', 'git'], { repository: true });
    if (typeof t === 'string') ctx.addIssue({ code: 'custom', message: `Must be a public http(s):// or git:// repository URL, without credentials. ${t}` });
  });

async function createBuilt(ctx: OperationContext, i: z.infer<z.ZodObject<typeof shared>>, source: BuildSource, fallbackName: string) {
  const { db, caller } = ctx;
  const place = await resolvePlacement(db, caller.teamId, i);
  const uuid = newUuid();
  const c: ApplicationConfig = {
    build_pack: 'dockerfile',
    source,
    docker_registry_image_name: `localhost/berth-app-${uuid}`,
    docker_registry_image_tag: UNBUILT_TAG,
    ports_exposes: i.ports_exposes,
    ports_mappings: i.ports_mappings ?? null,
    fqdn: normalizeDomains(i.domains),
  };
  await applyRuntimeFields(db, c, i, place.destinationId);
  const row = await db
    .insertInto('resources')
    .values(newResourceRow({ uuid, teamId: caller.teamId, kind: 'application', place, name: i.name ?? `${fallbackName}-${uuid}`, description: i.description, tags: i.tags }, c))
    .returningAll()
    .executeTakeFirstOrThrow();
  const deployment = i.instant_deploy ? await queueDeployment(ctx, row, 'deploy', false) : undefined;
  return { uuid, domains: c.fqdn, ...(deployment ? { deployment_uuid: deployment.uuid } : {}) };
}

export const applicationBuildOperations = [
  defineOperation({
    name: 'create_dockerfile_application',
    summary: "Create an application built from an inline Dockerfile (base64) on the server's engine at each deploy.",
    permission: 'write',
    toolset: 'applications',
    input: z.strictObject({ ...shared, dockerfile: z.string().min(1).max(200_000) }),
    output,
    annotations: CREATE,
    http: { method: 'POST', path: '/api/v1/applications/dockerfile', status: 201 },
    async run(ctx, { dockerfile, ...i }) {
      // As Coolify: base64 only, and the text inside must be a plain (ASCII) Dockerfile.
      const text = /^[A-Za-z0-9+/]+={0,2}$/.test(dockerfile.replace(/\s/g, '')) ? Buffer.from(dockerfile, 'base64').toString('latin1') : null;
      if (!text || !text.trim() || !/^[\x09\x0a\x0d\x20-\x7e]*$/.test(text)) throw validationError({ dockerfile: ['The dockerfile should be base64 encoded.'] });
      return createBuilt(ctx, i, { dockerfile: text }, 'dockerfile');
    },
  }),
  defineOperation({
    name: 'create_public_application',
    summary: "Create an application built from a public git repository's Dockerfile on the server's engine at each deploy.",
    permission: 'write',
    toolset: 'applications',
    input: z.strictObject({
      ...shared,
      git_repository: gitRepository,
      git_branch: gitBranch,
      build_pack: z.string(),
      base_directory: repoPath.optional(),
      dockerfile_location: repoPath.optional(),
    }),
    output,
    annotations: CREATE,
    http: { method: 'POST', path: '/api/v1/applications/public', status: 201 },
    async run(ctx, { git_repository, git_branch, build_pack, base_directory, dockerfile_location, ...i }) {
      if (build_pack !== 'dockerfile') throw validationError({ build_pack: [`berth builds with a Dockerfile only: use build_pack "dockerfile" (${build_pack} is not supported).`] });
      const why = new TargetGuard(ctx.config.outboundAllowedTargets).urlRefusal(git_repository, ['http', 'https', 'git']);
      if (why) throw validationError({ git_repository: [why] });
      return createBuilt(ctx, i, { git_repository, git_branch, base_directory: base_directory ?? '/', dockerfile_location: dockerfile_location ?? '/Dockerfile' }, 'public');
    },
  }),
];
