import { z } from 'zod';
import { validationError } from '../../errors.js';
import { parseSshRepository } from '../ssh-repository.js';
import { parseTarget } from '../target-url.js';
import { githubRepository } from '../github-api.js';
import { BUILD_PACKS, DEFAULT_COMPOSE_LOCATION, type ApplicationConfig, type BuildPack, type BuildSource, type BuildSteps } from '../model/application.js';
import type { TargetGuard } from '../outbound-guard.js';
import { domains, engineName } from '../validators.js';

/**
 * The git fields of a built application, validated alike on create (application-builds.ts) and
 * on update (PATCH /applications/{uuid}, applications.ts).
 */

/** A path inside the repository, Coolify style ("/", "/app", "/Dockerfile"): no "..", no control characters. */
export const repoPath = z
  .string()
  .max(255)
  .regex(/^\/?[A-Za-z0-9._@+\-/ ]*$/, 'Use letters, digits, spaces and . _ @ + - / only.')
  .refine((p) => !p.split('/').includes('..'), 'Must stay inside the repository (no "..").');

/** A branch name git accepts, never one that reads as an option. */
export const gitBranch = z
  .string()
  .min(1)
  .max(255)
  .regex(/^[A-Za-z0-9._/-]+$/, 'Use letters, digits and . _ / - only.')
  .refine((b) => !b.startsWith('-') && !b.includes('..') && !b.endsWith('.lock') && !b.endsWith('/'), 'Not a valid branch name.');

/** A public repository URL: http, https or git, read by the one parser (target-url.ts): no credentials, nothing parsers disagree on. */
export const gitRepository = z
  .string()
  .max(2048)
  .superRefine((u, ctx) => {
    const t = parseTarget(u, ['http', 'https', 'git'], { repository: true });
    if (typeof t === 'string') ctx.addIssue({ code: 'custom', message: `Must be a public http(s):// or git:// repository URL, without credentials. ${t}` });
  });

/** A private repository's SSH address (user@host:path or ssh://user@host[:port]/path), read by the one parser (ssh-repository.ts). */
export const sshRepository = z
  .string()
  .max(2048)
  .superRefine((u, ctx) => {
    const r = parseSshRepository(u);
    if (typeof r === 'string') ctx.addIssue({ code: 'custom', message: r });
  });

/** PATCH's git_repository, before the application's source is known: a public URL or an SSH address (applyGitUpdate checks which). */
export const anyRepository = z
  .string()
  .max(2048)
  .superRefine((u, ctx) => {
    if (typeof parseSshRepository(u) !== 'string' || /^[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+$/.test(u)) return;
    const t = parseTarget(u, ['http', 'https', 'git'], { repository: true });
    if (typeof t === 'string') ctx.addIssue({ code: 'custom', message: `Must be a public http(s):// or git:// repository URL, without credentials, or a private repository's SSH address. ${t}` });
  });

/** One shell line of a generated build (it becomes a RUN or the CMD): no line breaks or control characters. */
export const step = z
  .string()
  .max(2000)
  .regex(/^[^\x00-\x1f\x7f]*$/, 'One line, without control characters.')
  .nullable()
  .meta({ 'berth.brief': true })
  .optional();

/** Coolify's docker_compose_domains: a domain (comma-separated URLs) per compose service, by name. */
export const composeDomains = z
  .array(z.strictObject({ name: engineName, domain: domains.nullable().optional() }))
  .max(100)
  .nullable()
  .meta({ 'berth.brief': true })
  .optional();

/** The fields of how a git application builds, on create and on PATCH. */
export const buildInput = {
  base_directory: repoPath.optional(),
  dockerfile_location: repoPath.optional(),
  install_command: step,
  build_command: step,
  start_command: step,
  publish_directory: repoPath.nullable().meta({ 'berth.brief': true }).optional(),
  docker_compose_location: repoPath.meta({ 'berth.brief': true }).optional(),
  docker_compose_domains: composeDomains,
};

const STEP_KEYS = ['install_command', 'build_command', 'start_command', 'publish_directory'] as const;

export type BuildInput = { build_pack: string; ports_exposes: string | null } & Partial<Record<(typeof STEP_KEYS)[number], string | null>> & {
    base_directory?: string;
    dockerfile_location?: string;
    docker_compose_location?: string;
  };

/**
 * What a git application builds with, checked together: the build pack, and the fields that
 * belong to it (the steps to nixpacks and static, dockerfile_location to dockerfile,
 * docker_compose_location to dockercompose). A field of another pack is refused by name rather
 * than ignored.
 */
export function buildFields(i: BuildInput): Pick<Extract<BuildSource, { git_repository: string }>, 'base_directory' | 'dockerfile_location' | 'steps' | 'docker_compose_location'> & {
  build_pack: BuildPack;
} {
  const pack = i.build_pack as BuildPack;
  if (!BUILD_PACKS.includes(pack))
    throw validationError({ build_pack: [`Use ${BUILD_PACKS.map((p) => `"${p}"`).join(', ')} (${i.build_pack} is not a build pack berth knows; dockerimage is create_application).`] });
  const errors: Record<string, string[]> = {};
  const steps: BuildSteps = {};
  for (const k of STEP_KEYS) {
    const v = i[k]?.trim();
    if (!v) continue;
    if (pack !== 'nixpacks' && pack !== 'static')
      errors[k] = [`Applies to build_pack "nixpacks" or "static" (this one is "${pack}": put the step in the ${pack === 'dockercompose' ? "compose file's Dockerfiles" : 'Dockerfile'}).`];
    else steps[k] = v;
  }
  if (pack === 'static' && steps.start_command) errors.start_command = ['A static site is served by the static image: it has no start command.'];
  if (pack === 'static' && (i.ports_exposes ?? '').split(',')[0]!.trim() !== '80') errors.ports_exposes = ['A static site is served on port 80: send ports_exposes "80".'];
  if (i.dockerfile_location !== undefined && pack !== 'dockerfile') errors.dockerfile_location = [`Applies to build_pack "dockerfile" (this one is "${pack}").`];
  if (i.docker_compose_location !== undefined && pack !== 'dockercompose') errors.docker_compose_location = [`Applies to build_pack "dockercompose" (this one is "${pack}").`];
  if (Object.keys(errors).length) throw validationError(errors);
  return {
    build_pack: pack,
    base_directory: i.base_directory ?? '/',
    dockerfile_location: i.dockerfile_location ?? '/Dockerfile',
    ...(Object.keys(steps).length ? { steps } : {}),
    ...(pack === 'dockercompose' ? { docker_compose_location: i.docker_compose_location ?? DEFAULT_COMPOSE_LOCATION } : {}),
  };
}

/** docker_compose_domains as berth keeps them (service name → URLs), refused on another pack; undefined: not given. */
export function composeDomainsOf(pack: string, given: z.infer<typeof composeDomains>): Record<string, string> | undefined {
  if (given === undefined || given === null || !given.length) return given === undefined ? undefined : {};
  if (pack !== 'dockercompose') throw validationError({ docker_compose_domains: [`Applies to build_pack "dockercompose" (this one is "${pack}"): use domains.`] });
  const out: Record<string, string> = {};
  for (const d of given) {
    const v = d.domain
      ?.split(',')
      .map((u) => u.trim())
      .join(',');
    if (v) out[d.name] = v;
  }
  return out;
}

/** Coolify's read-back of docker_compose_domains: a JSON object of {name: {domain}}, or null. */
export const composeDomainsView = (d: Record<string, string> | undefined): string | null =>
  d && Object.keys(d).length ? JSON.stringify(Object.fromEntries(Object.entries(d).map(([name, domain]) => [name, { domain }]))) : null;

const GIT_KEYS = ['git_repository', 'git_branch', 'base_directory', 'dockerfile_location', 'docker_compose_location', ...STEP_KEYS] as const;
export interface GitUpdate extends Partial<Record<(typeof STEP_KEYS)[number], string | null>> {
  git_repository?: string;
  git_branch?: string;
  base_directory?: string;
  dockerfile_location?: string;
  docker_compose_location?: string;
  build_pack?: string;
  /** The application's ports_exposes after the update (a static site's must stay 80). */
  ports_exposes?: string | null;
}

/**
 * The git fields of PATCH /applications/{uuid} applied to its config, checked as on create: a
 * public repository as create_public_application's (URL and outbound targets), a private one as
 * create_private_deploy_key_application's (SSH address, host allowed), a GitHub app's as owner/repo, the build pack and its
 * steps as buildFields (the steps given replace the stored ones, an empty one clears it). A
 * private repository on another host forgets the pinned host key (pinned again at the next
 * clone). A git application's build pack changes among dockerfile, nixpacks and static; an image
 * application stays one, and dockercompose (several containers) is neither taken nor left.
 * All take effect at the next deploy.
 */
export function applyGitUpdate(c: ApplicationConfig, i: GitUpdate, guard: TargetGuard): void {
  const src = c.source;
  const git = src && 'git_repository' in src ? src : null;
  const packChange = i.build_pack !== undefined && i.build_pack !== c.build_pack;
  if (packChange && !git) throw validationError({ build_pack: [`berth cannot change this application's build pack (it is "${c.build_pack}"): create a new application.`] });
  if (packChange && (c.build_pack === 'dockercompose' || i.build_pack === 'dockercompose'))
    throw validationError({ build_pack: [`berth cannot turn a "${c.build_pack}" application into a "${i.build_pack}" one (they run a different number of containers): create a new application.`] });
  const given = GIT_KEYS.filter((k) => i[k] !== undefined);
  if (!given.length && !packChange) return;
  if (!git) {
    const what = src ? 'an inline Dockerfile' : 'an image';
    throw validationError(Object.fromEntries(given.map((k) => [k, [`This application runs ${what}, not a git repository: create a git application for that.`]])));
  }
  // The pack and its fields after the change, checked together as on create.
  const stored = git.steps ?? {};
  const pack = i.build_pack ?? c.build_pack;
  // Stored steps follow to nixpacks and static; to another pack only the ones sent again (refused there).
  const keeps = pack === 'nixpacks' || pack === 'static';
  const merged = Object.fromEntries(STEP_KEYS.map((k) => [k, i[k] !== undefined ? i[k] : keeps ? (stored[k] ?? null) : null]));
  const built = buildFields({
    build_pack: pack,
    ports_exposes: i.ports_exposes !== undefined ? i.ports_exposes : c.ports_exposes,
    ...merged,
    ...(i.dockerfile_location !== undefined ? { dockerfile_location: i.dockerfile_location } : {}),
    ...(i.docker_compose_location !== undefined ? { docker_compose_location: i.docker_compose_location } : {}),
  });
  if (i.git_repository !== undefined && i.git_repository !== git.git_repository) {
    if (git.github_app_id !== undefined) {
      const repo = githubRepository(i.git_repository);
      if (!repo) throw validationError({ git_repository: ['A GitHub repository as owner/repo (this application clones through a GitHub app).'] });
      i.git_repository = repo;
    } else if (git.private_key_id !== undefined) {
      const repo = parseSshRepository(i.git_repository);
      if (typeof repo === 'string') throw validationError({ git_repository: [repo] });
      const why = guard.hostRefusal(repo.host);
      if (why) throw validationError({ git_repository: [why] });
      const before = parseSshRepository(git.git_repository);
      if (typeof before === 'string' || before.host !== repo.host || before.port !== repo.port) git.git_host_key = null;
    } else {
      const parsed = gitRepository.safeParse(i.git_repository);
      const why = parsed.success ? guard.urlRefusal(i.git_repository, ['http', 'https', 'git']) : parsed.error.issues[0]!.message;
      if (why) throw validationError({ git_repository: [why] });
    }
    git.git_repository = i.git_repository;
  }
  c.build_pack = built.build_pack;
  if (i.git_branch !== undefined) git.git_branch = i.git_branch;
  if (i.base_directory !== undefined) git.base_directory = i.base_directory;
  if (i.dockerfile_location !== undefined) git.dockerfile_location = i.dockerfile_location;
  if (built.docker_compose_location !== undefined) git.docker_compose_location = built.docker_compose_location;
  if (built.steps) git.steps = built.steps;
  else delete git.steps;
}
