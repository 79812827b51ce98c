import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { promisify } from 'node:util';
import { create } from 'tar';
import type { BuildSource } from '../core/model/application.js';
import { parseIp } from '../core/network-guard.js';
import type { TargetGuard } from '../core/outbound-guard.js';
import { urlHost } from '../core/target-url.js';

const run = promisify(execFile);

/** A clone larger than this is refused: a build context is sent whole to the engine. */
const MAX_CONTEXT_BYTES = 512 * 1024 * 1024;
const CLONE_TIMEOUT_MS = 120_000;

export interface BuildContext {
  /** The tar stream of the context directory (without .git). */
  tar(): Readable;
  /** The Dockerfile's path inside the context. */
  dockerfile: string;
  /** The commit a git source was built from. */
  commit: string | null;
  cleanup(): Promise<void>;
}

async function sizeOf(dir: string): Promise<number> {
  let total = 0;
  for (const e of await fs.readdir(dir, { withFileTypes: true, recursive: true })) {
    if (e.isFile()) total += (await fs.stat(path.join(e.parentPath, e.name))).size;
    if (total > MAX_CONTEXT_BYTES) break;
  }
  return total;
}

/**
 * Clones a public repository on the berth host (the engines here cannot fetch a git context
 * themselves): depth 1, one branch, no prompts, no system or user git config, the URL after `--`,
 * with a time and a size limit. git connects to exactly what berth checked: the URL is read by the
 * one parser (target-url.ts), its host resolved once by the outbound guard with every address
 * checked, and that address pinned for the whole clone (curl's resolve list for http(s), the
 * address itself in a git:// URL), so neither a parser that reads the URL otherwise nor a second
 * DNS answer can send git elsewhere. Redirects are not followed (to no host), only the URL's own
 * transport is allowed, and no credential helper, askpass, proxy or proxy command is consulted.
 */
async function clone(s: Extract<BuildSource, { git_repository: string }>, dir: string, guard: TargetGuard, log: (l: string) => Promise<void>): Promise<string> {
  const t = guard.target(s.git_repository, ['http', 'https', 'git'], { repository: true });
  const address = await guard.resolve(t.host);
  await log(`cloning ${s.git_repository} (branch ${s.git_branch}) from ${urlHost(address)}:${t.port}`);
  const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: dir, GIT_TERMINAL_PROMPT: '0', GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null', GIT_ALLOW_PROTOCOL: t.scheme, GIT_ASKPASS: '/bin/false', SSH_ASKPASS: '/bin/false' };
  const config = [
    `protocol.allow=never`,
    `protocol.${t.scheme}.allow=always`,
    'core.symlinks=false',
    'http.followRedirects=false',
    'http.proxy=',
    'core.gitProxy=',
    'credential.helper=',
    'core.askPass=/bin/false',
    ...(t.scheme !== 'git' && !parseIp(t.host) ? [`http.curloptResolve=${t.host}:${t.port}:${urlHost(address)}`] : []),
  ].flatMap((c) => ['-c', c]);
  // git:// has no resolve list: the URL names the checked address itself.
  const url = t.scheme === 'git' ? `git://${urlHost(address)}:${t.port}${t.rest}` : t.url;
  const target = path.join(dir, 'src');
  try {
    await run('git', [...config, 'clone', '--depth', '1', '--single-branch', '--no-tags', '--branch', s.git_branch, '--', url, target], { env, timeout: CLONE_TIMEOUT_MS, maxBuffer: 1024 * 1024 });
  } catch (err) {
    const stderr = String((err as { stderr?: string }).stderr ?? '').trim().split('\n').slice(-2).join(' / ');
    throw new Error(`Cloning ${s.git_repository} (branch ${s.git_branch}) failed: ${stderr || (err as Error).message}`);
  }
  const { stdout } = await run('git', ['-C', target, 'rev-parse', 'HEAD'], { env });
  if ((await sizeOf(target)) > MAX_CONTEXT_BYTES) throw new Error(`The repository is larger than ${MAX_CONTEXT_BYTES / 1024 / 1024} MiB; berth does not build it.`);
  return stdout.trim();
}

/** Where a built application's context comes from: its inline Dockerfile, or a clone of its repository. */
export async function prepareBuildContext(source: BuildSource, guard: TargetGuard, log: (l: string) => Promise<void>): Promise<BuildContext> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'berth-build-'));
  const cleanup = () => fs.rm(dir, { recursive: true, force: true });
  try {
    let contextDir: string;
    let dockerfile = 'Dockerfile';
    let commit: string | null = null;
    if ('dockerfile' in source) {
      contextDir = path.join(dir, 'src');
      await fs.mkdir(contextDir);
      await fs.writeFile(path.join(contextDir, 'Dockerfile'), source.dockerfile);
    } else {
      commit = await clone(source, dir, guard, log);
      // As Coolify: base_directory inside the repository, dockerfile_location inside that (both
      // checked at the door: no "..", no control characters).
      const rel = (p: string) => p.replace(/^\/+/, '');
      contextDir = path.join(dir, 'src', rel(source.base_directory));
      dockerfile = rel(source.dockerfile_location) || 'Dockerfile';
      await fs.stat(path.join(contextDir, dockerfile)).catch(() => {
        throw new Error(`The repository has no ${path.posix.join(source.base_directory, dockerfile)} on branch ${source.git_branch}.`);
      });
    }
    return {
      tar: () => create({ cwd: contextDir, portable: true, filter: (p) => !/^(\.\/)?\.git(\/|$)/.test(p) }, ['.']) as unknown as Readable,
      dockerfile,
      commit,
      cleanup,
    };
  } catch (err) {
    await cleanup();
    throw err;
  }
}
