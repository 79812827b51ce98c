/**
 * Two real Docker-compatible engines (podman) for tests, started by scripts/engines.sh.
 *
 *   describe.skipIf(!enginesAvailable)('…', () => {
 *     const engines = useEngines();          // beforeAll: up, afterAll: down
 *     it('…', async () => { engines.a.ping() … });
 *   });
 *
 * When podman is missing, loading this module tries `scripts/engines.sh install` once. In CI
 * (`CI` set) an engine that still cannot be had throws, so the run fails; elsewhere the engine
 * tests are skipped. With BERTH_TEST_ENGINES_DIR pointing at engines already up (started once
 * per run by test/engines-global-setup.ts), they are used as they are and left running: files
 * then share one pair, at once (two workers), so each touches only what it made (its own
 * resources, names, labels). A file that acts on a whole engine (prunes it, compares every
 * volume on it) asks for a pair of its own: `useEngines({ own: 'why' })`.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { EngineClient } from '../../src/engine/engine-client.js';

export const ENGINES_SCRIPT = path.resolve(import.meta.dirname, '../../scripts/engines.sh');
export const ENGINE_IMAGE = 'localhost/berth-busybox:latest';

function hasPodman(): boolean {
  return spawnSync('sh', ['-c', 'command -v podman && command -v runc && test -x /bin/busybox'], { stdio: 'ignore' }).status === 0;
}

function detect(): { available: boolean; reason: string } {
  if (process.platform !== 'linux') return { available: false, reason: 'engines need Linux' };
  if (!hasPodman()) {
    const r = spawnSync('bash', [ENGINES_SCRIPT, 'install'], { encoding: 'utf8', timeout: 300_000 });
    if (!hasPodman()) {
      const detail = (r.stderr || r.error?.message || '').trim().slice(-500) || `install exited ${r.status}, yet podman, runc or /bin/busybox is still missing`;
      return { available: false, reason: `podman not installable: ${detail}` };
    }
  }
  return { available: true, reason: '' };
}

const detected = detect();
if (!detected.available && process.env.CI) {
  throw new Error(`engine tests need podman in CI (${detected.reason})`);
}
/** Whether real engines can run here (false only outside CI). */
export const enginesAvailable = detected.available;
export const enginesUnavailableReason = detected.reason;

export interface TestEngines {
  dir: string;
  socketA: string;
  socketB: string;
  image: string;
  /** Clients of engine a and b (short retry delays). */
  a: EngineClient;
  b: EngineClient;
  /** Runs `podman` on engine a or b (for ground truth independent of the client under test). */
  podman(engine: 'a' | 'b', args: string[], input?: string | Buffer): string;
  /**
   * One request to engine a's or b's API with curl (ground truth too, and a fraction of a podman
   * CLI call's cost): its status and body. Libpod paths (/libpod/…) answer as the CLI does.
   */
  api(engine: 'a' | 'b', method: string, path: string): { status: number; body: string };
}

interface PodmanArgs {
  env: Record<string, string>;
  flags: string[];
}

/** The environment and global flags of podman for one engine, as engines.sh declares them. */
function podmanArgsOf(engine: 'a' | 'b', dir: string): PodmanArgs {
  const lines = execFileSync('bash', [ENGINES_SCRIPT, 'podman-args', engine, dir], { encoding: 'utf8', timeout: 60_000 }).split('\n').filter(Boolean);
  const cut = lines.indexOf('--');
  const env = Object.fromEntries(lines.slice(0, cut).map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));
  return { env, flags: lines.slice(cut + 1) };
}

function engineApi(socket: string, method: string, apiPath: string): { status: number; body: string } {
  const out = execFileSync('curl', ['-sS', '--max-time', '60', '--unix-socket', socket, '-X', method, '-w', '\n%{http_code}', `http://d/v4.0.0${apiPath}`], {
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
    timeout: 90_000,
  });
  const cut = out.lastIndexOf('\n');
  return { status: Number(out.slice(cut + 1)), body: out.slice(0, cut) };
}

export function startEngines(dir?: string): { dir: string; owned: boolean } {
  if (dir) return { dir, owned: false };
  const d = mkdtempSync(path.join(os.tmpdir(), 'berth-eng-'));
  try {
    execFileSync('bash', [ENGINES_SCRIPT, 'up', d], { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, ENGINES_QUIET: '1' }, timeout: 120_000 });
  } catch (err) {
    const stderr = (err as { stderr?: Buffer }).stderr?.toString() ?? '';
    stopEngines(d);
    throw new Error(`engines.sh up failed: ${stderr || String(err)}`);
  }
  return { dir: d, owned: true };
}

export function stopEngines(dir: string): void {
  spawnSync('bash', [ENGINES_SCRIPT, 'down', dir], { stdio: 'ignore', timeout: 120_000 });
  try {
    rmSync(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
  } catch {
    // A down cut short on a loaded machine can leave an overlay mounted: release it, then remove.
    spawnSync('sh', ['-c', `grep -F " ${dir}/" /proc/mounts | awk '{print $2}' | sort -r | xargs -r -n1 umount -l`], { stdio: 'ignore' });
    rmSync(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
  }
}

export interface UseEnginesOptions {
  /**
   * Why the file needs a pair no other file uses at the same time (it prunes an engine, or
   * asserts on everything an engine holds): then it starts and stops its own even when a shared
   * pair is up.
   */
  own?: string;
}

/** beforeAll/afterAll: two engines for the enclosing describe (or file): the run's shared pair, or its own. */
export function useEngines(opts: UseEnginesOptions = {}): TestEngines {
  const engines = {} as TestEngines;
  let owned = false;
  const podmanArgs: Partial<Record<'a' | 'b', PodmanArgs>> = {};
  beforeAll(() => {
    const started = startEngines(opts.own ? undefined : process.env.BERTH_TEST_ENGINES_DIR);
    owned = started.owned;
    const dir = started.dir;
    Object.assign(engines, {
      dir,
      socketA: path.join(dir, 'a/engine.sock'),
      socketB: path.join(dir, 'b/engine.sock'),
      image: ENGINE_IMAGE,
      a: new EngineClient({ endpoint: `unix://${path.join(dir, 'a/engine.sock')}`, retry: { baseDelayMs: 20, maxDelayMs: 200 } }),
      b: new EngineClient({ endpoint: `unix://${path.join(dir, 'b/engine.sock')}`, retry: { baseDelayMs: 20, maxDelayMs: 200 } }),
      podman: (engine: 'a' | 'b', args: string[], input?: string | Buffer) => {
        const how = (podmanArgs[engine] ??= podmanArgsOf(engine, dir));
        return execFileSync('podman', [...how.flags, ...args], {
          encoding: 'utf8',
          input,
          env: { ...process.env, ...how.env },
          maxBuffer: 64 * 1024 * 1024,
          timeout: 120_000,
        });
      },
      api: (engine: 'a' | 'b', method: string, apiPath: string) => engineApi(path.join(dir, engine, 'engine.sock'), method, apiPath),
    } satisfies TestEngines);
  }, 120_000);
  afterAll(async () => {
    await engines.a?.close();
    await engines.b?.close();
    if (owned && engines.dir) stopEngines(engines.dir);
  }, 120_000);
  return engines;
}

/** A unique, readable name for test resources. */
export function uniqueName(prefix: string): string {
  return `${prefix}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
}

let globalDir: string | undefined;

/**
 * For vitest's globalSetup (test/engines-global-setup.ts): one pair of engines for the whole
 * run, shared by every test file through BERTH_TEST_ENGINES_DIR (useEngines then neither starts
 * nor stops engines, unless asked for its own). Does nothing where engines are unavailable
 * (outside CI), or when BERTH_TEST_ENGINES_DIR already names a pair.
 */
export function setup(): void {
  if (!enginesAvailable || process.env.BERTH_TEST_ENGINES_DIR) return;
  globalDir = startEngines().dir;
  process.env.BERTH_TEST_ENGINES_DIR = globalDir;
}

export function teardown(): void {
  if (globalDir) stopEngines(globalDir);
  globalDir = undefined;
}
