import { z } from 'zod';
import { notFound, validationError } from '../../errors.js';
import { newUuid } from '../../ids.js';
import { defineOperation, type OperationContext } from '../operation.js';
import { TargetGuard } from '../outbound-guard.js';
import { parseSshRepository } from '../ssh-repository.js';
import { domains, description, name, portsExposes, portsMappings, tags, uuidParam } from '../validators.js';
import { keyId } from './git-sources.js';
import { githubRepository, githubSession, requireRepository } from '../github-api.js';
import { CREATE } from './common.js';
import { queueDeployment } from './deployments.js';
import { requireFreeDomains } from '../domains.js';
import { atomically } from '../../store/atomic.js';
import { applyRuntimeFields, normalizeDomains, runtimeFields } from './applications.js';
import { UNBUILT_TAG, type ApplicationConfig, type BuildPack, type BuildSource } from '../model/application.js';
import { newResourceRow, placementInput, resolvePlacement } from './resource-common.js';
import { APPLICATION_FIELDS, GIT_APPLICATION_FIELDS } from './coolify-fields.js';
import { buildFields, buildInput, composeDomainsOf, gitBranch, gitRepository, sshRepository } from './git-fields.js';

const gitFields = { git_branch: gitBranch, build_pack: z.string(), ...buildInput };

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

/** Known host keys as ssh prints them ("ssh-ed25519 AAAA…"), one a line; a known_hosts line's host names are dropped. */
const hostKeys = z
  .string()
  .max(16_384)
  .transform((v, ctx) => {
    const keys = [];
    for (const line of v
      .split('\n')
      .map((l) => l.trim())
      .filter(Boolean)) {
      const m = /(?:^|\s)((?:ssh-ed25519|ssh-rsa|ecdsa-sha2-nistp(?:256|384|521)|sk-ssh-ed25519@openssh\.com|sk-ecdsa-sha2-nistp256@openssh\.com) [A-Za-z0-9+/]+={0,2})(?:\s|$)/.exec(line);
      if (!m) {
        ctx.addIssue({ code: 'custom', message: 'Each line must be a host key as ssh-keyscan prints it: "[host] type base64" (ssh-ed25519, ssh-rsa, ecdsa-sha2-nistp256…).' });
        return z.NEVER;
      }
      keys.push(m[1]!);
    }
    if (!keys.length) {
      ctx.addIssue({ code: 'custom', message: 'Give at least one host key.' });
      return z.NEVER;
    }
    return keys.join('\n');
  });

/** A create's input without its repository and build fields: what createBuilt places and names. */
function placementPart<T extends z.infer<z.ZodObject<typeof gitFields>> & { git_repository: string }>(input: T) {
  const {
    git_repository: _repository,
    git_branch: _branch,
    build_pack: _pack,
    base_directory: _base,
    dockerfile_location: _dockerfile,
    install_command: _install,
    build_command: _build,
    start_command: _start,
    publish_directory: _publish,
    docker_compose_location: _composeLocation,
    docker_compose_domains: _composeDomains,
    ...rest
  } = input;
  return rest;
}

async function createBuilt(
  ctx: OperationContext,
  i: z.infer<z.ZodObject<typeof shared>>,
  source: BuildSource,
  fallbackName: string,
  pack: BuildPack = 'dockerfile',
  composeDomains?: Record<string, string>,
) {
  const { db, caller } = ctx;
  // A dockercompose application on a swarm destination runs as a stack; its compose file is read (and checked) at each deploy.
  const place = await resolvePlacement(db, caller.teamId, i, pack === 'dockercompose' ? 'service' : 'application');
  const uuid = newUuid();
  const c: ApplicationConfig = {
    build_pack: pack,
    source,
    docker_registry_image_name: `localhost/berth-app-${uuid}`,
    docker_registry_image_tag: UNBUILT_TAG,
    ports_exposes: i.ports_exposes,
    ports_mappings: i.ports_mappings ?? null,
    fqdn: normalizeDomains(i.domains),
    ...(composeDomains && Object.keys(composeDomains).length ? { compose_domains: composeDomains } : {}),
  };
  if (pack === 'dockercompose' && c.fqdn) throw validationError({ domains: ['A dockercompose application has a domain per compose service: send docker_compose_domains ([{ name, domain }]).'] });
  await applyRuntimeFields(db, c, i, place.destinationId);
  // The check and the insert in one transaction: of two creates claiming one domain, one wins.
  const row = await atomically(db, async (trx) => {
    await requireFreeDomains(trx, caller.teamId, c.fqdn, {}, i.force_domain_override);
    for (const [part, fqdn] of Object.entries(c.compose_domains ?? {})) await requireFreeDomains(trx, caller.teamId, fqdn, { part }, i.force_domain_override);
    return trx
      .insertInto('resources')
      .values(newResourceRow({ uuid, teamId: caller.teamId, kind: 'application', place, name: i.name ?? `${fallbackName}-${uuid}`, description: i.description, tags: i.tags }, c))
      .returningAll()
      .executeTakeFirstOrThrow();
  });
  const deployment = i.instant_deploy ? await queueDeployment(ctx, row, 'deploy', false) : undefined;
  return { uuid, domains: c.fqdn, ...(deployment ? { deployment_uuid: deployment.uuid } : {}) };
}

export const applicationBuildOperations = [
  defineOperation({
    name: 'create_dockerfile_application',
    title: 'Create an application from a Dockerfile',
    description:
      "Create an application whose image is built from an inline Dockerfile (base64, as Coolify) on the server's engine at each deploy. Placement as create_application, plus ports_exposes. Deploy to build; the build output is in the deployment's logs. Runtime fields as create_application.",
    summary: "Create an application built from an inline Dockerfile (base64) on the server's engine at each deploy.",
    permission: 'write',
    toolset: 'applications',
    input: () => z.strictObject({ ...shared, dockerfile: z.string().min(1).max(200_000) }),
    output: () => output,
    annotations: CREATE,
    http: { method: 'POST', path: '/api/v1/applications/dockerfile', status: 201 },
    unsupported: APPLICATION_FIELDS,
    async run(ctx, { dockerfile, ...i }) {
      // As Coolify: base64 only, and the text inside must be a plain (ASCII) Dockerfile.
      const text = /^[A-Za-z0-9+/]+={0,2}$/.test(dockerfile.replace(/\s/g, '')) ? Buffer.from(dockerfile, 'base64').toString('latin1') : null;
      if (!text?.trim() || !/^[\x09\x0a\x0d\x20-\x7e]*$/.test(text)) throw validationError({ dockerfile: ['The dockerfile should be base64 encoded.'] });
      return createBuilt(ctx, i, { dockerfile: text }, 'dockerfile');
    },
  }),
  defineOperation({
    name: 'create_public_application',
    title: 'Create an application from a git repository',
    description:
      'Create an application built from a public git repository (git_repository, git_branch, base_directory) at each deploy. build_pack "nixpacks": Node, Python, Go or a static site detected, steps replaced by install_command, build_command, start_command; "static": files or publish_directory on port 80; "dockerfile": dockerfile_location; "dockercompose": the compose file at docker_compose_location run as a service\'s (build: sections built), domains per compose service in docker_compose_domains. A failed build leaves the running containers alone. Runtime fields as create_application.',
    summary: "Create an application built from a public git repository (nixpacks detection, static site, Dockerfile or compose file) on the server's engine at each deploy.",
    permission: 'write',
    toolset: 'applications',
    input: () => z.strictObject({ ...shared, ...gitFields, git_repository: gitRepository }),
    output: () => output,
    annotations: CREATE,
    http: { method: 'POST', path: '/api/v1/applications/public', status: 201 },
    unsupported: GIT_APPLICATION_FIELDS,
    async run(ctx, input) {
      const { git_repository, git_branch, docker_compose_domains } = input;
      const i = placementPart(input);
      const { build_pack: pack, ...build } = buildFields(input);
      const why = new TargetGuard(ctx.config.outboundAllowedTargets).urlRefusal(git_repository, ['http', 'https', 'git']);
      if (why) throw validationError({ git_repository: [why] });
      return createBuilt(ctx, i, { git_repository, git_branch, ...build }, 'public', pack, composeDomainsOf(pack, docker_compose_domains));
    },
  }),
  defineOperation({
    name: 'create_private_deploy_key_application',
    title: 'Create an application from a private repository (deploy key)',
    description:
      "Create an application built from a private git repository cloned over SSH with one of the team's private keys (private_key_uuid; its public half must be a deploy key of the repository). git_repository as git@host:owner/repo.git or ssh://user@host:port/path; git_host_key (the host's key as ssh-keyscan prints it) is checked, else the key seen at the first clone is pinned and a changed one refused. Otherwise as create_public_application.",
    summary: "Create an application built from a private repository cloned over SSH with one of the team's private keys (a deploy key).",
    permission: 'write',
    toolset: 'applications',
    input: () =>
      z.strictObject({
        ...shared,
        ...gitFields,
        private_key_uuid: uuidParam,
        git_repository: sshRepository,
        /** berth's own: the git host's key, else pinned at the first clone. */
        git_host_key: hostKeys.optional(),
      }),
    output: () => output,
    annotations: CREATE,
    http: { method: 'POST', path: '/api/v1/applications/private-deploy-key', status: 201 },
    unsupported: GIT_APPLICATION_FIELDS,
    async run(ctx, input) {
      const { git_repository, git_branch, docker_compose_domains, private_key_uuid, git_host_key } = input;
      const { private_key_uuid: _key, git_host_key: _hostKey, ...i } = placementPart(input);
      const { build_pack: pack, ...build } = buildFields(input);
      const repo = parseSshRepository(git_repository);
      const why = typeof repo === 'string' ? repo : new TargetGuard(ctx.config.outboundAllowedTargets).hostRefusal(repo.host);
      if (why) throw validationError({ git_repository: [why] });
      const keyRow = await keyId(ctx.db, ctx.caller.teamId, private_key_uuid);
      return createBuilt(
        ctx,
        i,
        { git_repository, git_branch, ...build, private_key_id: keyRow, git_host_key: git_host_key ?? null },
        'private-deploy-key',
        pack,
        composeDomainsOf(pack, docker_compose_domains),
      );
    },
  }),
  defineOperation({
    name: 'create_private_github_app_application',
    title: 'Create an application through a GitHub app',
    description:
      "Create an application built from a private repository reached through one of the team's GitHub apps (github_app_uuid): git_repository as owner/repo (or its github.com URL), checked with the app's installation token as Coolify does; each deploy mints a token and clones over HTTPS from the app's html_url. Otherwise as create_public_application.",
    summary: "Create an application built from a private repository cloned through one of the team's GitHub apps.",
    permission: 'write',
    toolset: 'applications',
    input: () => z.strictObject({ ...shared, ...gitFields, github_app_uuid: uuidParam, git_repository: z.string().max(2048) }),
    output: () => output,
    annotations: { ...CREATE, openWorld: true },
    http: { method: 'POST', path: '/api/v1/applications/private-github-app', status: 201 },
    unsupported: GIT_APPLICATION_FIELDS,
    async run(ctx, input) {
      const { git_repository, git_branch, docker_compose_domains, github_app_uuid } = input;
      const { github_app_uuid: _app, ...i } = placementPart(input);
      const repo = githubRepository(git_repository);
      if (!repo) throw validationError({ git_repository: ['A GitHub repository as owner/repo (or https://github.com/owner/repo).'] });
      const { build_pack: pack, ...build } = buildFields(input);
      // The references are the team's (the same 404 as a missing one) before GitHub is asked.
      await resolvePlacement(ctx.db, ctx.caller.teamId, i);
      const app = await ctx.db.selectFrom('github_apps').selectAll().where('uuid', '=', github_app_uuid).where('team_id', '=', ctx.caller.teamId).executeTakeFirst();
      if (!app) throw notFound();
      const guard = new TargetGuard(ctx.config.outboundAllowedTargets);
      const why = guard.urlRefusal(app.html_url, ['http', 'https']);
      if (why) throw validationError({ github_app_uuid: [`The app's html_url cannot be cloned from: ${why}`] });
      await requireRepository(await githubSession(ctx.db, guard, app), repo);
      return createBuilt(ctx, i, { git_repository: repo, git_branch, ...build, github_app_id: app.id }, 'private-github-app', pack, composeDomainsOf(pack, docker_compose_domains));
    },
  }),
];
