/**
 * A real Docker Engine of its own (Debian's docker.io), started by scripts/dockerd.sh, for tests
 * that need bridge networks and ports published on 127.0.0.1 (the podman test engines run on
 * network none). Like test/helpers/engines.ts: installed on first use when missing; in CI a
 * daemon that cannot be had fails the run, elsewhere the tests skip.
 *
 *   describe.skipIf(!dockerdAvailable)('…', () => { const d = useDockerd(); … d.socket … });
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
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

const SLOTS = 16;

/**
 * A slot of this machine's test daemons, held while one runs: files run side by side, and daemons
 * sharing an address pool make the same bridge subnets in the host's namespace (and swarms the
 * same VXLAN port), which breaks their networks now and then. A slot gives each its own. A slot
 * whose holder died is taken over.
 */
function takeSlot(): { slot: number; release(): void } {
  for (let slot = 0; slot < SLOTS; slot++) {
    const dir = `/tmp/berth-dk-slot-${slot}`;
    try {
      mkdirSync(dir);
    } catch {
      const holder = Number(readFileSync(`${dir}/pid`, { encoding: 'utf8', flag: 'a+' }));
      if (holder && alive(holder)) continue;
      rmSync(dir, { recursive: true, force: true });
      try {
        mkdirSync(dir);
      } catch {
        continue;
      }
    }
    writeFileSync(`${dir}/pid`, String(process.pid));
    return { slot, release: () => rmSync(dir, { recursive: true, force: true }) };
  }
  throw new Error(`all ${SLOTS} test dockerd slots are held (/tmp/berth-dk-slot-*)`);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * beforeAll: a daemon of this file's own, with the busybox and Caddy images (with `swarm`: a
 * one-node swarm it manages, tasks using local images without asking a registry); afterAll: down.
 */
export function useDockerd(opts: { swarm?: boolean /** A second daemon in one file: an address pool of its own (DOCKERD_ADDRESS_POOL). */; pool?: string } = {}): TestDockerd {
  const d = {} as TestDockerd;
  let held: ReturnType<typeof takeSlot> | undefined;
  beforeAll(() => {
    // Short: the socket path must fit a unix socket address.
    const dir = mkdtempSync('/tmp/berth-dk-');
    held = takeSlot();
    const env = {
      ...process.env,
      DOCKERD_QUIET: '1',
      // Pools of this slot's own (10.120–10.151), away from the scripts' defaults (10.213, 10.214).
      DOCKERD_ADDRESS_POOL: opts.pool ?? `base=10.${120 + 2 * held.slot}.0.0/16,size=24`,
      DOCKERD_SWARM_POOL: `10.${121 + 2 * held.slot}.0.0/16`,
      DOCKERD_SWARM_DATA_PATH_PORT: String(24_000 + held.slot),
      ...(opts.swarm ? { DOCKER_SERVICE_PREFER_OFFLINE_IMAGE: '1' } : {}),
    };
    const run = (args: string[]) => execFileSync('bash', [DOCKERD_SCRIPT, ...args], { encoding: 'utf8', env, timeout: 180_000, maxBuffer: 16 * 1024 * 1024 });
    Object.assign(d, { dir, socket: path.join(dir, 'd/docker.sock'), docker: (args: string[]) => run(['docker', dir, 'd', ...args]) });
    run(['up', dir]);
    if (opts.swarm) run(['swarm-init', dir]);
    else run(['caddy-image', dir]);
  }, 240_000);
  afterAll(() => {
    if (d.dir) spawnSync('bash', [DOCKERD_SCRIPT, 'down', d.dir], { stdio: 'ignore', timeout: 120_000 });
    held?.release();
  }, 130_000);
  return d;
}
