import { z } from 'zod';
import { validationError } from '../../errors.js';
import { parseSshRepository } from '../ssh-repository.js';
import { parseTarget } from '../target-url.js';
import { githubRepository } from '../github-api.js';
import type { ApplicationConfig } from '../model/application.js';
import type { TargetGuard } from '../outbound-guard.js';

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

const GIT_KEYS = ['git_repository', 'git_branch', 'base_directory', 'dockerfile_location'] as const;
export interface GitUpdate {
  git_repository?: string;
  git_branch?: string;
  base_directory?: string;
  dockerfile_location?: string;
  build_pack?: string;
}

/**
 * The git fields of PATCH /applications/{uuid} applied to its config, checked as on create: a
 * public repository as create_public_application's (URL and outbound targets), a private one as
 * create_private_deploy_key_application's (SSH address, host allowed), a GitHub app's as owner/repo. A private repository on
 * another host forgets the pinned host key (pinned again at the next clone). The build pack
 * stays what it is: berth cannot turn an image application into a built one, or back, yet.
 */
export function applyGitUpdate(c: ApplicationConfig, i: GitUpdate, guard: TargetGuard): void {
  if (i.build_pack !== undefined && i.build_pack !== c.build_pack) {
    throw validationError({ build_pack: [`berth cannot change an application's build pack yet (this one is "${c.build_pack}"): create a new application.`] });
  }
  const given = GIT_KEYS.filter((k) => i[k] !== undefined);
  if (!given.length) return;
  const src = c.source;
  if (!src || !('git_repository' in src)) {
    const what = src ? 'an inline Dockerfile' : 'an image';
    throw validationError(Object.fromEntries(given.map((k) => [k, [`This application runs ${what}, not a git repository: create a git application for that.`]])));
  }
  if (i.git_repository !== undefined && i.git_repository !== src.git_repository) {
    if (src.github_app_id !== undefined) {
      const repo = githubRepository(i.git_repository);
      if (!repo) throw validationError({ git_repository: ['A GitHub repository as owner/repo (this application clones through a GitHub app).'] });
      i.git_repository = repo;
    } else if (src.private_key_id !== undefined) {
      const repo = parseSshRepository(i.git_repository);
      if (typeof repo === 'string') throw validationError({ git_repository: [repo] });
      const why = guard.hostRefusal(repo.host);
      if (why) throw validationError({ git_repository: [why] });
      const before = parseSshRepository(src.git_repository);
      if (typeof before === 'string' || before.host !== repo.host || before.port !== repo.port) src.git_host_key = null;
    } else {
      const parsed = gitRepository.safeParse(i.git_repository);
      const why = parsed.success ? guard.urlRefusal(i.git_repository, ['http', 'https', 'git']) : parsed.error.issues[0]!.message;
      if (why) throw validationError({ git_repository: [why] });
    }
    src.git_repository = i.git_repository;
  }
  if (i.git_branch !== undefined) src.git_branch = i.git_branch;
  if (i.base_directory !== undefined) src.base_directory = i.base_directory;
  if (i.dockerfile_location !== undefined) src.dockerfile_location = i.dockerfile_location;
}
