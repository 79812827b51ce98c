/**
 * git connects to exactly what berth checked. Real git against real servers on loopback: git
 * daemon, smart HTTP (git http-backend), a redirector and plain listeners that record what
 * reaches them. The guard's resolver stands in for DNS (it is injectable for this): a name whose
 * address changes after berth's lookup is cloned from the first address, and the system
 * resolver, which does not know these names, is never asked.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TargetGuard } from '../../src/core/outbound-guard.js';
import { prepareBuildContext } from '../../src/engine/build-source.js';
import { gitDaemon, gitHttp, httpRecorder, makeRepos, type GitRepos, type Recorder } from '../helpers/git.js';

let repos: GitRepos;
let daemon: { port: number; stop(): void };
let web: Recorder;
let trap: Recorder;
beforeAll(async () => {
  repos = makeRepos();
  daemon = await gitDaemon(repos);
  web = await gitHttp(repos);
  trap = await httpRecorder();
}, 30_000);
afterAll(() => {
  daemon?.stop();
  web?.close();
  trap?.close();
  repos?.cleanup();
});

const source = (git_repository: string) => ({ git_repository, git_branch: 'main', base_directory: '/', dockerfile_location: '/Dockerfile' });

/** A guard that allows loopback, with a resolver answering `first`, then `later` on every further lookup. */
function rebinding(first: string[], later: string[]): { guard: TargetGuard; lookups: string[] } {
  const lookups: string[] = [];
  const guard = new TargetGuard('127.0.0.1', { resolve: async (host) => (lookups.push(host), lookups.length === 1 ? first : later) });
  return { guard, lookups };
}

async function cloneWith(guard: TargetGuard, url: string): Promise<{ commit: string | null; log: string[] }> {
  const log: string[] = [];
  const ctx = await prepareBuildContext(source(url), guard, async (l) => void log.push(l));
  await ctx.cleanup();
  return { commit: ctx.commit, log };
}

describe('clones connect to what the guard checked', () => {
  it('git://: the name is resolved once and the checked address is cloned from, whatever the name resolves to later', async () => {
    const { guard, lookups } = rebinding(['127.0.0.1'], ['169.254.169.254']);
    const { commit, log } = await cloneWith(guard, `git://rebind.test:${daemon.port}/app.git`);
    expect(commit).toBe(repos.commit);
    expect(lookups).toEqual(['rebind.test']);
    expect(log[0]).toContain(`from 127.0.0.1:${daemon.port}`);
  });

  it('http://: the checked address is pinned for the whole clone (no lookup by git), and every request went to it', async () => {
    const { guard, lookups } = rebinding(['127.0.0.1'], ['10.255.255.1']);
    const before = web.requests.length;
    const { commit } = await cloneWith(guard, `http://rebind.test:${web.port}/app.git`);
    expect(commit).toBe(repos.commit);
    expect(lookups).toEqual(['rebind.test']);
    // The discovery and the fetch both reached the pinned server.
    expect(web.requests.slice(before)).toEqual([
      expect.stringMatching(/^GET \/app\.git\/info\/refs\?service=git-upload-pack$/),
      expect.stringMatching(/^POST \/app\.git\/git-upload-pack$/),
      ...web.requests.slice(before + 2),
    ]);
  });

  it('a name with any refused address is not cloned, and nothing is connected to', async () => {
    const { guard } = rebinding(['127.0.0.1', '169.254.169.254'], ['127.0.0.1']);
    const before = web.requests.length;
    await expect(cloneWith(guard, `http://rebind.test:${web.port}/app.git`)).rejects.toThrow(/metadata/);
    expect(web.requests.length).toBe(before);
  });

  it('a redirect is not followed, to any host', async () => {
    const redirector = await httpRecorder((q, r) => {
      q.resume();
      r.writeHead(302, { location: `http://127.0.0.1:${trap.port}/pwn${q.url!.replace(/^\/app\.git/, '')}` }).end();
    });
    try {
      const { guard } = rebinding(['127.0.0.1'], ['127.0.0.1']);
      await expect(cloneWith(guard, `http://rebind.test:${redirector.port}/app.git`)).rejects.toThrow(/Cloning .* failed/);
      expect(redirector.requests).toEqual(['GET /app.git/info/refs?service=git-upload-pack']);
      expect(trap.requests).toEqual([]);
    } finally {
      redirector.close();
    }
  });

  it('URLs parsers read differently never reach git: the loopback listener they point at receives nothing', async () => {
    // As stored before the door refused them: the runtime reads them with the same parser.
    const guard = new TargetGuard('127.0.0.1', { resolve: async () => ['127.0.0.1'] });
    for (const url of [
      `http://public.test\\@127.0.0.1:${trap.port}/pwn`,
      `http://public.test@127.0.0.1:${trap.port}/pwn`,
      `http://public.test%40127.0.0.1:${trap.port}/pwn`,
      `git://public.test/x@[127.0.0.1]:${trap.port}/pwn`,
      `http://127.1:${trap.port}/pwn`,
    ]) {
      await expect(cloneWith(guard, url), url).rejects.toThrow(/refused to connect/);
    }
    expect(trap.requests).toEqual([]);
  });

  it('a host the guard refuses is not cloned: loopback without the operator’s allowance', async () => {
    await expect(cloneWith(new TargetGuard(''), `git://127.0.0.1:${daemon.port}/app.git`)).rejects.toThrow(/private, loopback or reserved/);
    await expect(cloneWith(new TargetGuard('', { resolve: async () => ['127.0.0.1'] }), `http://innocent.test:${web.port}/app.git`)).rejects.toThrow(/private, loopback or reserved/);
  });
});
