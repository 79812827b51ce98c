import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { promisify } from 'node:util';
import { create } from 'tar';
import type { BuildpackImages, BuildPack, BuildSource } from '../core/model/application.js';
import { generateBuild, type GeneratedBuild } from './buildpacks.js';
import { parseIp } from '../core/network-guard.js';
import type { TargetGuard } from '../core/outbound-guard.js';
import { parseSshRepository, sshRepositoryAt } from '../core/ssh-repository.js';
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
  /** nixpacks and static: the Dockerfile berth wrote (kept in the deployment's log). */
  generated?: GeneratedBuild;
  /** The directory the context is made from (a compose file is read there). */
  dir: string;
  cleanup(): Promise<void>;
}

/** How a source becomes an image: the build pack, and for generated builds the port and the base images. */
export interface BuildPlan {
  pack: BuildPack;
  port: string | null;
  images: BuildpackImages;
}

/** The generated Dockerfile's name in the context (ignored by COPY through .dockerignore). */
const GENERATED_DOCKERFILE = '.berth.Dockerfile';

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
type GitSource = Extract<BuildSource, { git_repository: string }>;

/** What a clone over SSH needs beside the source: the team's key, and where a first-seen host key is pinned. */
export interface SshCloneSecrets {
  privateKey: string;
  /** Called with the host key(s) ssh accepted at a first clone (nothing was pinned yet). */
  pinHostKey(keys: string): Promise<void>;
}

/** A clone through a GitHub app: the app's html_url and an installation token (never logged or in argv). */
export interface GithubCloneSecrets {
  htmlUrl: string;
  token: string;
}

/** What a clone takes from the repository, for its log lines and errors. */
const refOf = (s: GitSource) => (s.git_ref ? s.git_ref : `branch ${s.git_branch}`);

/**
 * Gets the source into `target` with git's own safety settings (`config`, `env`): a shallow clone
 * of one branch, or (a pull request's preview) a shallow fetch of one ref into an empty repository,
 * checked out detached. The URL always comes after `--`; the ref is berth's own (refs/pull/N/head).
 */
async function fetchSource(config: string[], env: NodeJS.ProcessEnv, s: GitSource, url: string, target: string): Promise<void> {
  const opts = { env, timeout: CLONE_TIMEOUT_MS, maxBuffer: 1024 * 1024 };
  if (!s.git_ref) {
    await run('git', [...config, 'clone', '--depth', '1', '--single-branch', '--no-tags', '--branch', s.git_branch, '--', url, target], opts);
    return;
  }
  await run('git', [...config, 'init', '-q', '--', target], opts);
  await run('git', [...config, '-C', target, 'fetch', '-q', '--depth', '1', '--no-tags', '--', url, `+${s.git_ref}:refs/berth/source`], opts);
  await run('git', [...config, '-C', target, 'checkout', '-q', '--detach', 'refs/berth/source'], opts);
}

/** The name ssh files the git host's key under: the address it connects to changes, the pin does not. */
const HOST_ALIAS = 'berth-git-host';

/** A word for GIT_SSH_COMMAND (run by a shell): berth's own temp paths, quoted. */
const shellWord = (w: string) => {
  if (!/^[A-Za-z0-9_./=+:@-]+$/.test(w)) throw new Error(`unexpected character in ${JSON.stringify(w)}`);
  return `'${w}'`;
};

/**
 * Clones a private repository over SSH with a deploy key. As the public clone: the address read by
 * the one parser (ssh-repository.ts: nothing in it can read as an option), its host resolved
 * once by the outbound guard and git given the checked address; the positional arguments after
 * `--`. ssh runs with no config file, agent, proxy, control socket or local command, in batch
 * mode, with only the team's key (written 0600 into the clone's private temp directory, removed
 * with it) and only the git host's pinned key accepted: the key given at create or kept from the
 * first clone (accepted then, as ssh's accept-new, and stored). A changed host key is refused.
 */
async function cloneSsh(s: GitSource, dir: string, guard: TargetGuard, log: (l: string) => Promise<void>, secrets: SshCloneSecrets | undefined): Promise<string> {
  const repo = parseSshRepository(s.git_repository);
  if (typeof repo === 'string') throw new Error(`refused to connect: ${repo}`);
  if (!secrets) throw new Error('This application clones with a private key that no longer exists; give it a key of the team again.');
  const refused = guard.hostRefusal(repo.host);
  if (refused) throw new Error(`refused to connect: ${refused}`);
  const address = await guard.resolve(repo.host);
  await log(`cloning ${s.git_repository} (${refOf(s)}) over SSH from ${urlHost(address)}:${repo.port}`);
  const keyFile = path.join(dir, 'deploy-key');
  const knownHosts = path.join(dir, 'known_hosts');
  await fs.writeFile(keyFile, secrets.privateKey.endsWith('\n') ? secrets.privateKey : `${secrets.privateKey}\n`, { mode: 0o600 });
  const pinned = s.git_host_key?.trim() || null;
  await fs.writeFile(
    knownHosts,
    pinned
      ? pinned
          .split('\n')
          .map((k) => `${HOST_ALIAS} ${k}\n`)
          .join('')
      : '',
    { mode: 0o600 },
  );
  const ssh = [
    'ssh',
    '-F',
    '/dev/null',
    '-p',
    String(repo.port),
    ...[
      'BatchMode=yes',
      'IdentitiesOnly=yes',
      'IdentityAgent=none',
      'AddKeysToAgent=no',
      'ForwardAgent=no',
      'ForwardX11=no',
      'ProxyCommand=none',
      'ProxyJump=none',
      'ControlMaster=no',
      'ControlPath=none',
      'PermitLocalCommand=no',
      'PasswordAuthentication=no',
      'KbdInteractiveAuthentication=no',
      'ConnectTimeout=20',
      'ServerAliveInterval=15',
      `HostKeyAlias=${HOST_ALIAS}`,
      'CheckHostIP=no',
      'HashKnownHosts=no',
      'UpdateHostKeys=no',
      'GlobalKnownHostsFile=/dev/null',
      `UserKnownHostsFile=${knownHosts}`,
      `StrictHostKeyChecking=${pinned ? 'yes' : 'accept-new'}`,
      `IdentityFile=${keyFile}`,
    ].flatMap((o) => ['-o', o]),
  ]
    .map((w, i) => (i === 0 ? w : shellWord(w)))
    .join(' ');
  const env = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: dir,
    GIT_TERMINAL_PROMPT: '0',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_ALLOW_PROTOCOL: 'ssh',
    GIT_SSH_COMMAND: ssh,
    GIT_SSH_VARIANT: 'ssh',
    GIT_ASKPASS: '/bin/false',
    SSH_ASKPASS: '/bin/false',
  };
  const config = ['protocol.allow=never', 'protocol.ssh.allow=always', 'core.symlinks=false', 'core.gitProxy=', 'credential.helper=', 'core.askPass=/bin/false'].flatMap((c) => ['-c', c]);
  const target = path.join(dir, 'src');
  try {
    await fetchSource(config, env, s, sshRepositoryAt(repo, address), target);
  } catch (err) {
    const stderr = String((err as { stderr?: string }).stderr ?? '').trim();
    const why = /REMOTE HOST IDENTIFICATION HAS CHANGED|Host key verification failed/.test(stderr)
      ? `the git host's key is not the one pinned for this application (${pinned ? pinned.split(' ')[0] : 'none'}); berth refuses to connect (if the host was rekeyed on purpose, create the application again with the new git_host_key)`
      : /Permission denied \(publickey/.test(stderr)
        ? `the git host refused the private key (Permission denied (publickey)): add the key's public half to the repository's deploy keys`
        : stderr
            .split('\n')
            .filter((l) => !/^Warning: Permanently added/.test(l))
            .slice(-2)
            .join(' / ') || (err as Error).message;
    throw new Error(`Cloning ${s.git_repository} (${refOf(s)}) failed: ${why}`);
  } finally {
    await fs.rm(keyFile, { force: true });
  }
  if (!pinned) {
    const seen = (await fs.readFile(knownHosts, 'utf8'))
      .split('\n')
      .map((l) => l.trim().split(/\s+/))
      .filter((w) => w[0] === HOST_ALIAS && w.length >= 3)
      .map((w) => `${w[1]} ${w[2]}`);
    if (seen.length) {
      await secrets.pinHostKey(seen.join('\n'));
      await log(`pinned the git host's key (${seen[0]!.split(' ')[0]}) for the next clones`);
    }
  }
  const { stdout } = await run('git', ['-C', target, 'rev-parse', 'HEAD'], { env });
  if ((await sizeOf(target)) > MAX_CONTEXT_BYTES) throw new Error(`The repository is larger than ${MAX_CONTEXT_BYTES / 1024 / 1024} MiB; berth does not build it.`);
  return stdout.trim();
}

/**
 * A public clone, or one through a GitHub app: the repository at the app's html_url
 * (owner/repo.git, as Coolify clones it) with the installation token as x-access-token's basic
 * auth. The token goes to git in its environment (GIT_CONFIG_* http.extraHeader), not in the
 * URL or argv, so neither the process list nor git's error messages carry it.
 */
async function clone(s: GitSource, dir: string, guard: TargetGuard, log: (l: string) => Promise<void>, github?: GithubCloneSecrets): Promise<string> {
  const remote = github ? `${github.htmlUrl.replace(/\/+$/, '')}/${s.git_repository}.git` : s.git_repository;
  const t = guard.target(remote, github ? ['http', 'https'] : ['http', 'https', 'git'], { repository: true });
  const address = await guard.resolve(t.host);
  await log(`cloning ${remote} (${refOf(s)}) from ${urlHost(address)}:${t.port}${github ? ' with a GitHub app installation token' : ''}`);
  const auth = github
    ? { GIT_CONFIG_COUNT: '1', GIT_CONFIG_KEY_0: 'http.extraHeader', GIT_CONFIG_VALUE_0: `Authorization: Basic ${Buffer.from(`x-access-token:${github.token}`).toString('base64')}` }
    : {};
  const env = {
    ...auth,
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: dir,
    GIT_TERMINAL_PROMPT: '0',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_ALLOW_PROTOCOL: t.scheme,
    GIT_ASKPASS: '/bin/false',
    SSH_ASKPASS: '/bin/false',
  };
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
    await fetchSource(config, env, s, url, target);
  } catch (err) {
    const stderr = String((err as { stderr?: string }).stderr ?? '')
      .trim()
      .split('\n')
      .slice(-2)
      .join(' / ');
    const why = stderr || (err as Error).message;
    // git does not print an extra header; cut the token anyway should any message carry it.
    throw new Error(`Cloning ${remote} (${refOf(s)}) failed: ${github ? why.split(github.token).join('[token]') : why}`);
  }
  const { stdout } = await run('git', ['-C', target, 'rev-parse', 'HEAD'], { env });
  if ((await sizeOf(target)) > MAX_CONTEXT_BYTES) throw new Error(`The repository is larger than ${MAX_CONTEXT_BYTES / 1024 / 1024} MiB; berth does not build it.`);
  return stdout.trim();
}

/** A build context's tar stream: the directory without its .git. */
export const contextTar = (dir: string): Readable => create({ cwd: dir, portable: true, filter: (p) => !/^(\.\/)?\.git(\/|$)/.test(p) }, ['.']) as unknown as Readable;

/** Where a built application's context comes from: its inline Dockerfile, or a clone of its repository. */
export async function prepareBuildContext(
  source: BuildSource,
  guard: TargetGuard,
  log: (l: string) => Promise<void>,
  secrets?: SshCloneSecrets | GithubCloneSecrets,
  plan: BuildPlan = { pack: 'dockerfile', port: null, images: {} as BuildpackImages },
): Promise<BuildContext> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'berth-build-'));
  const cleanup = () => fs.rm(dir, { recursive: true, force: true });
  try {
    let contextDir: string;
    let dockerfile = 'Dockerfile';
    let commit: string | null = null;
    let generated: GeneratedBuild | undefined;
    if ('dockerfile' in source) {
      contextDir = path.join(dir, 'src');
      await fs.mkdir(contextDir);
      await fs.writeFile(path.join(contextDir, 'Dockerfile'), source.dockerfile);
    } else {
      const ssh = secrets && 'privateKey' in secrets ? secrets : undefined;
      if (source.github_app_id !== undefined && !(secrets && 'token' in secrets))
        throw new Error('This application clones through a GitHub app that no longer exists; create it again with a GitHub app of the team.');
      commit = source.private_key_id !== undefined ? await cloneSsh(source, dir, guard, log, ssh) : await clone(source, dir, guard, log, secrets && 'token' in secrets ? secrets : undefined);
      // As Coolify: base_directory inside the repository, dockerfile_location inside that (both
      // checked at the door: no "..", no control characters).
      const rel = (p: string) => p.replace(/^\/+/, '');
      contextDir = path.join(dir, 'src', rel(source.base_directory));
      const isDir = await fs.stat(contextDir).then(
        (s) => s.isDirectory(),
        () => false,
      );
      if (!isDir) throw new Error(`The repository has no directory ${source.base_directory} (base_directory) on ${refOf(source)}.`);
      if (plan.pack === 'nixpacks' || plan.pack === 'static') {
        generated = await generateBuild(plan.pack, contextDir, source.steps ?? {}, plan.port, plan.images);
        dockerfile = GENERATED_DOCKERFILE;
        await fs.writeFile(path.join(contextDir, dockerfile), generated.dockerfile);
        const ignore = await fs.readFile(path.join(contextDir, '.dockerignore'), 'utf8').catch(() => '');
        await fs.writeFile(path.join(contextDir, '.dockerignore'), `${ignore}${ignore && !ignore.endsWith('\n') ? '\n' : ''}${GENERATED_DOCKERFILE}\n`);
      } else if (plan.pack === 'dockerfile') {
        dockerfile = rel(source.dockerfile_location) || 'Dockerfile';
        await fs.stat(path.join(contextDir, dockerfile)).catch(() => {
          throw new Error(`The repository has no ${path.posix.join(source.base_directory, dockerfile)} on ${refOf(source)}.`);
        });
      }
    }
    return {
      dir: contextDir,
      ...(generated ? { generated } : {}),
      tar: () => contextTar(contextDir),
      dockerfile,
      commit,
      cleanup,
    };
  } catch (err) {
    await cleanup();
    throw err;
  }
}
