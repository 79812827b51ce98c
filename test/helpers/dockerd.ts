/**
 * A real Docker Engine of its own (Debian's docker.io), started by scripts/dockerd.sh, for tests
 * that need bridge networks and ports published on 127.0.0.1 (the podman test engines run on
 * network none). Like test/helpers/engines.ts: installed on first use when missing; in CI a
 * daemon that cannot be had fails the run, elsewhere the tests skip.
 *
 *   describe.skipIf(!dockerdAvailable)('…', () => { const d = useDockerd(); … d.socket … });
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll } from 'vitest';

export const DOCKERD_SCRIPT = path.resolve(import.meta.dirname, '../../scripts/dockerd.sh');
export const CADDY_IMAGE = 'localhost/berth-caddy:2.6';
export const BUSYBOX_IMAGE = 'localhost/berth-busybox:latest';

const has = () => spawnSync('sh', ['-c', 'test -x /usr/sbin/dockerd && test -x /usr/bin/docker && test -x /bin/busybox'], { stdio: 'ignore' }).status === 0;

function detect(): boolean {
  if (process.platform !== 'linux') return false;
  if (!has()) spawnSync('bash', [DOCKERD_SCRIPT, 'install'], { stdio: 'ignore', timeout: 300_000 });
  return has();
}

export const dockerdAvailable = detect();
if (!dockerdAvailable && process.env.CI) throw new Error('the proxy tests need docker.io in CI (scripts/dockerd.sh install)');

export interface TestDockerd {
  dir: string;
  socket: string;
  /** Debian's docker CLI on this daemon (ground truth independent of berth's client). */
  docker(args: string[]): string;
}

/**
 * beforeAll: a daemon of this file's own, with the busybox and Caddy images (with `swarm`: a
 * one-node swarm it manages, tasks using local images without asking a registry); afterAll: down.
 */
export function useDockerd(opts: { swarm?: boolean /** A second daemon in one file: an address pool of its own (DOCKERD_ADDRESS_POOL). */; pool?: string } = {}): TestDockerd {
  const d = {} as TestDockerd;
  beforeAll(() => {
    // Short: the socket path must fit a unix socket address.
    const dir = mkdtempSync('/tmp/berth-dk-');
    const env = { ...process.env, DOCKERD_QUIET: '1', ...(opts.swarm ? { DOCKER_SERVICE_PREFER_OFFLINE_IMAGE: '1' } : {}), ...(opts.pool ? { DOCKERD_ADDRESS_POOL: opts.pool } : {}) };
    const run = (args: string[]) => execFileSync('bash', [DOCKERD_SCRIPT, ...args], { encoding: 'utf8', env, timeout: 180_000, maxBuffer: 16 * 1024 * 1024 });
    Object.assign(d, { dir, socket: path.join(dir, 'd/docker.sock'), docker: (args: string[]) => run(['docker', dir, 'd', ...args]) });
    run(['up', dir]);
    if (opts.swarm) run(['swarm-init', dir]);
    else run(['caddy-image', dir]);
  }, 240_000);
  afterAll(() => {
    if (d.dir) spawnSync('bash', [DOCKERD_SCRIPT, 'down', d.dir], { stdio: 'ignore', timeout: 120_000 });
  }, 130_000);
  return d;
}
