/**
 * Shared pieces of the end-to-end migration tests: a REST client bound to one berth (in-process
 * or a spawned `berth serve`), two servers registered on the two real engines with destinations
 * on network `none`, and ground truth about volumes read with the podman CLI (busybox inside a
 * throwaway container) and engine API calls with curl, independent of berth's own code.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'vitest';
import { ENGINE_IMAGE, type TestEngines } from '../helpers/engines.js';
import { call, type Reply } from '../helpers/server.js';

/** An image whose default command keeps running and stops at once on SIGTERM (apps have no command field). */
export const SLEEPER_IMAGE = 'localhost/berth-sleeper:latest';
export const KEEP_RUNNING = `trap 'exit 0' TERM INT; while :; do sleep 3600 & wait $!; done`;

/**
 * An image whose command keeps writing to /data until SIGTERM: appends to a log, rewrites a small
 * state file, makes and removes temporary files, and rewrites 4 KiB inside /data/big.bin in place.
 */
export const WRITER_IMAGE = 'localhost/berth-writer:latest';
export const KEEP_WRITING = `trap 'exit 0' TERM INT; mkdir -p /data/logs /data/tmp; i=0; while :; do i=$((i + 1)); echo "line $i" >> /data/logs/app.log; head -c $((i % 3000 + 1)) /dev/urandom > /data/state.bin; : > /data/tmp/t$i; rm -f /data/tmp/t$((i - 5)); if [ -f /data/big.bin ] && [ $((i % 20)) -eq 0 ]; then dd if=/dev/urandom of=/data/big.bin bs=4096 count=1 seek=$((i % 1000)) conv=notrunc 2>/dev/null; fi; sleep 0.02; done`;

function importImage(engines: TestEngines, image: string, command: string): void {
  const rootfs = path.join(engines.dir, 'busybox-rootfs.tar');
  if (!existsSync(rootfs)) throw new Error(`${rootfs} missing: engines.sh up builds it`);
  for (const e of ['a', 'b'] as const) {
    try {
      engines.podman(e, ['image', 'exists', image]);
      continue;
    } catch {
      // not there yet
    }
    try {
      engines.podman(e, [
        'import',
        '--quiet',
        '--change',
        `CMD ["sh","-c",${JSON.stringify(command)}]`,
        '--change',
        'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
        rootfs,
        image,
      ]);
    } catch (err) {
      // Files share the run's engines: another one may have imported it at the same moment.
      try {
        engines.podman(e, ['image', 'exists', image]);
      } catch {
        throw err;
      }
    }
  }
}

/** An image whose command exits at once with code 3 (a crash loop under a restart policy). */
export const EXITER_IMAGE = 'localhost/berth-exiter:latest';
/** An image serving /www over HTTP on port 8080 (busybox httpd), with /www/index.html saying ok. */
export const HTTPD_IMAGE = 'localhost/berth-httpd:latest';

export function ensureExiterImage(engines: TestEngines): void {
  importImage(engines, EXITER_IMAGE, 'echo boom >&2; exit 3');
}

export function ensureHttpdImage(engines: TestEngines): void {
  importImage(engines, HTTPD_IMAGE, `mkdir -p /www; [ -e /www/index.html ] || echo ok > /www/index.html; trap 'exit 0' TERM INT; httpd -f -p 8080 -h /www & wait`);
}

/** Imports the sleeper image on both engines from the busybox rootfs engines.sh built (idempotent). */
export function ensureSleeperImage(engines: TestEngines): void {
  importImage(engines, SLEEPER_IMAGE, KEEP_RUNNING);
}

/** An image whose command says a numbered line on stdout and on stderr twice a second until SIGTERM (log drains). */
export const PRINTER_IMAGE = 'localhost/berth-printer:latest';

export function ensurePrinterImage(engines: TestEngines): void {
  importImage(engines, PRINTER_IMAGE, `trap 'exit 0' TERM INT; i=0; while :; do i=$((i + 1)); echo "drain-out $i"; echo "drain-err $i" >&2; sleep 0.5 & wait $!; done`);
}

/** Imports the writer image on both engines (idempotent). */
export function ensureWriterImage(engines: TestEngines): void {
  importImage(engines, WRITER_IMAGE, KEEP_WRITING);
}

export class Api {
  constructor(
    readonly url: string,
    readonly token: string,
  ) {}

  async req(method: string, p: string, body?: unknown): Promise<Reply> {
    // The ground-truth helpers block the event loop (podman, curl): a keep-alive connection the
    // server timed out meanwhile is closed when the loop turns, not before. One turn first, so the
    // request does not go out on it (it did once after a long volume fill: ECONNRESET).
    await new Promise((r) => setImmediate(r));
    return call(this.url, method, `/api/v1${p}`, { token: this.token, ...(body === undefined ? {} : { body }) });
  }

  /** A 2xx answer's JSON; anything else fails with the answer in the message. */
  async ok(method: string, p: string, body?: unknown): Promise<any> {
    const r = await this.req(method, p, body);
    if (r.status >= 300) throw new Error(`${method} ${p} → ${r.status} ${r.text}`);
    return r.json;
  }
}

export interface Platform {
  serverA: string;
  serverB: string;
  /** Destinations on network `none` (the engines here must not touch host networking). */
  destA: string;
  destB: string;
  project: string;
}

/** Registers both engines as servers, validates them (managed), adds a `none` destination to each, and a project. */
export async function registerEngines(api: Api, engines: TestEngines): Promise<Platform> {
  const server = async (name: string, socket: string) => {
    const { uuid } = await api.ok('POST', '/servers', { ip: '127.0.0.1', name, engine_endpoint: `unix://${socket}` });
    const v = await api.ok('POST', `/servers/${uuid}/validate`);
    expect(v, JSON.stringify(v)).toMatchObject({ is_reachable: true, is_usable: true });
    expect((await api.ok('GET', `/servers/${uuid}`)).is_managed).toBe(true);
    const dest = await api.ok('POST', `/servers/${uuid}/destinations`, { network: 'none' });
    return { uuid, dest: dest.uuid as string };
  };
  const a = await server('engine-a', engines.socketA);
  const b = await server('engine-b', engines.socketB);
  const project = (await api.ok('POST', '/projects', { name: `e2e ${Date.now()}` })).uuid as string;
  return { serverA: a.uuid, serverB: b.uuid, destA: a.dest, destB: b.dest, project };
}

export async function until<T>(what: string, fn: () => Promise<T | undefined>, timeoutMs: number, everyMs = 150): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** Polls a deployment until it ends; fails unless it ended as `expected` (finished). */
export async function deployed(api: Api, deploymentUuid: string, timeoutMs = 30_000, expected: 'finished' | 'failed' = 'finished'): Promise<any> {
  const d = await until(
    `deployment ${deploymentUuid}`,
    async () => {
      const r = await api.ok('GET', `/deployments/${deploymentUuid}`);
      return ['queued', 'in_progress'].includes(r.status) ? undefined : r;
    },
    timeoutMs,
  );
  expect(d.status, d.logs).toBe(expected);
  return d;
}

/** Polls a migration until it leaves pending/copying; returns its final JSON. */
export async function migrationEnded(api: Api, migrationUuid: string, timeoutMs = 60_000): Promise<any> {
  return until(
    `migration ${migrationUuid}`,
    async () => {
      const r = await api.ok('GET', `/migrations/${migrationUuid}`);
      return ['pending', 'copying'].includes(r.status) ? undefined : r;
    },
    timeoutMs,
  );
}

export async function volumeNames(api: Api, collection: 'applications' | 'services', uuid: string): Promise<Record<string, string>> {
  const r = await api.ok('GET', `/${collection}/${uuid}/storages`);
  return Object.fromEntries((r.persistent_storages as Array<{ name: string; volume_name: string }>).map((s) => [s.name, s.volume_name]));
}

/** How many deployments a resource has had (the records, read through the API). */
export async function deploymentCount(api: Api, appUuid: string): Promise<number> {
  const r = await api.req('GET', `/deployments/applications/${appUuid}?take=1`);
  expect(r.status).toBe(200);
  return Number(r.json.count);
}

/**
 * Files of mixed sizes in nested directories: a few MiB of random data, a file with spaces in
 * its name, an empty file, a one-byte file, a long path, a symlink, unusual owners and modes.
 * `$1` scales the large file (MiB).
 */
const LONG_DIR = 'l'.repeat(60);
const LONG_FILE = 'f'.repeat(80); // the path is longer than ustar's 100-byte name field
export const KNOWN_FILES = `
set -e
cd /data
mkdir -p 'dir one/nested/deeper' empty-dir '${LONG_DIR}'
: > empty.txt
printf 'hello world\\n' > 'file with spaces.txt'
dd if=/dev/urandom of=big.bin bs=1048576 count="\${1:-3}" 2>/dev/null
dd if=/dev/urandom of='dir one/nested/deeper/mid.bin' bs=1024 count=300 2>/dev/null
i=1; while [ $i -le 40 ]; do head -c $((i * 997)) /dev/urandom > "dir one/small $i.dat"; i=$((i + 1)); done
printf x > 'dir one/nested/one-byte'
printf 'long path\\n' > '${LONG_DIR}/${LONG_FILE}'
ln -s big.bin link-to-big
chmod 600 'file with spaces.txt'
chown 999:998 'file with spaces.txt' 'dir one'
chown 1234:1234 'dir one/nested/deeper/mid.bin'
`;

/** Runs a shell script in a throwaway busybox container with the volume at /data. */
export function writeVolume(engines: TestEngines, engine: 'a' | 'b', volume: string, script: string, args: string[] = []): void {
  engines.podman(engine, ['run', '--rm', '--network', 'none', '-v', `${volume}:/data`, ENGINE_IMAGE, 'sh', '-c', script, 'fill', ...args]);
}

export interface VolumeTruth {
  /** `path|type|size|mode|uid:gid` of every entry, sorted. */
  listing: string;
  /** `sha256  path` of every regular file, sorted by path. */
  sums: string;
  /** path → sha256 */
  hashes: Map<string, string>;
  files: number;
  bytes: number;
}

/** What a volume holds, as busybox sees it (read-only mount). */
export function volumeTruth(engines: TestEngines, engine: 'a' | 'b', volume: string): VolumeTruth {
  const out = engines.podman(engine, [
    'run',
    '--rm',
    '--network',
    'none',
    '-v',
    `${volume}:/data:ro`,
    ENGINE_IMAGE,
    'sh',
    '-c',
    'cd /data && find . -mindepth 1 -exec stat -c "%n|%F|%s|%a|%u:%g" {} + | sort && echo --- && find . -type f -exec sha256sum {} + | sort -k 2',
  ]);
  const [listing = '', sums = ''] = out.split('---\n');
  const hashes = new Map<string, string>();
  for (const line of sums.trim().split('\n').filter(Boolean)) hashes.set(line.slice(66), line.slice(0, 64));
  const bytes = listing
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((l) => l.split('|'))
    .filter(([, type]) => type!.startsWith('regular'))
    .reduce((sum, [, , size]) => sum + Number(size), 0);
  return { listing, sums, hashes, files: hashes.size, bytes };
}

/** Answers of engine `engine`'s libpod API (ground truth as the CLI gives it, at a fraction of its cost). */
function libpod(engines: TestEngines, engine: 'a' | 'b', apiPath: string, allowed: number[] = [200]): { status: number; body: string } {
  const r = engines.api(engine, 'GET', `/libpod${apiPath}`);
  if (!allowed.includes(r.status)) throw new Error(`engine ${engine}: GET /libpod${apiPath} → ${r.status} ${r.body.slice(0, 300)}`);
  return r;
}

const labelFilter = (label: string) => `filters=${encodeURIComponent(JSON.stringify({ label: [label] }))}`;

export function volumeExists(engines: TestEngines, engine: 'a' | 'b', volume: string): boolean {
  return libpod(engines, engine, `/volumes/${encodeURIComponent(volume)}/exists`, [204, 404]).status === 204;
}

/** Names of the volumes on an engine carrying a label (e.g. berth.migration=<uuid>). */
export function volumesLabelled(engines: TestEngines, engine: 'a' | 'b', label: string): string[] {
  return (JSON.parse(libpod(engines, engine, `/volumes/json?${labelFilter(label)}`).body) as Array<{ Name: string }>).map((v) => v.Name).sort();
}

/** Containers (any state) on an engine carrying a label. */
export function containersLabelled(engines: TestEngines, engine: 'a' | 'b', label: string): string[] {
  return (JSON.parse(libpod(engines, engine, `/containers/json?all=true&${labelFilter(label)}`).body) as Array<{ Names: string[] }>).map((c) => c.Names[0]!).sort();
}

export interface ContainerState {
  running: boolean;
  /** How often the engine restarted it (restart policy). */
  restarts: number;
  status: string;
  image: string;
  mounts: Array<{ Name: string; Destination: string; RW: boolean }>;
}

export function containerState(engines: TestEngines, engine: 'a' | 'b', name: string): ContainerState | null {
  const r = libpod(engines, engine, `/containers/${encodeURIComponent(name)}/json`, [200, 404]);
  if (r.status === 404) return null;
  const c = JSON.parse(r.body) as {
    State: { Running: boolean; Status: string };
    RestartCount?: number;
    ImageName: string;
    Mounts: Array<{ Type: string; Name: string; Destination: string; RW: boolean }>;
  };
  return { running: c.State.Running, restarts: c.RestartCount ?? 0, status: c.State.Status, image: c.ImageName, mounts: c.Mounts.filter((m) => m.Type === 'volume') };
}

/** sha256 of every file under a directory, computed inside a running container (podman exec). */
export function sumsInContainer(engines: TestEngines, engine: 'a' | 'b', container: string, dir: string): string {
  return engines.podman(engine, ['exec', container, 'sh', '-c', `cd ${dir} && find . -type f -exec sha256sum {} + | sort -k 2`]);
}

/**
 * A large volume of mixed file sizes, `$1` MiB in all: about half in 8 MiB files, 30 % in
 * 256 KiB files, 20 % in 1–64 KiB files (names with spaces), and an empty file.
 */
export const LARGE_MIXED = `
set -e
cd /data
total=$1
mkdir -p big/0 big/1 big/2 big/3
i=0; while [ $i -lt 32 ]; do mkdir -p "mid/$((i % 16))" "small/$i"; i=$((i + 1)); done
big=$((total / 2 / 8))
mid=$((total * 3 / 10 * 4))
i=0; while [ $i -lt $big ]; do dd if=/dev/urandom of="big/$((i % 4))/blob $i.bin" bs=1048576 count=8 2>/dev/null; i=$((i + 1)); done
i=0; while [ $i -lt $mid ]; do dd if=/dev/urandom of="mid/$((i % 16))/f$i.bin" bs=262144 count=1 2>/dev/null; i=$((i + 1)); done
rest=$((total * 1024 / 5)); sz=0; i=0
while [ $sz -lt $rest ]; do k=$((1 + (i * 37) % 64)); head -c $((k * 1024 - i % 1000)) /dev/urandom > "small/$((i % 32))/f $i.dat"; sz=$((sz + k)); i=$((i + 1)); done
: > small/empty
`;

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * An application on engine a that serves its health check only after `readyAfterS` (busybox
 * httpd from a `sh -c` entrypoint), checked every `intervalS`: until then, and within
 * `startPeriodS`, the check says starting. Not deployed.
 */
export async function slowHealthApp(api: Api, p: Platform, name: string, o: { readyAfterS: number; startPeriodS: number; intervalS?: number }): Promise<string> {
  const [repo, tag] = SLEEPER_IMAGE.split(':');
  const serve = `sleep ${o.readyAfterS}; mkdir -p /www && echo berth-ok > /www/index.html && exec httpd -f -p 8080 -h /www`;
  const { uuid } = await api.ok('POST', '/applications/dockerimage', {
    project_uuid: p.project,
    server_uuid: p.serverA,
    destination_uuid: p.destA,
    environment_name: 'production',
    name,
    docker_registry_image_name: repo,
    docker_registry_image_tag: tag,
    ports_exposes: '8080',
    health_check_enabled: true,
    health_check_path: '/index.html',
    health_check_interval: o.intervalS ?? 2,
    health_check_timeout: 5,
    health_check_retries: 3,
    health_check_start_period: o.startPeriodS,
    custom_docker_run_options: `--entrypoint "sh -c '${serve}'" --init --stop-timeout 1`,
  });
  return uuid as string;
}

/** An application from `image` with a persistent volume at /data, deployed on engine a. */
export async function deployAppWithVolume(api: Api, p: Platform, name: string, image = SLEEPER_IMAGE, expected: 'finished' | 'failed' = 'finished'): Promise<{ uuid: string; volume: string }> {
  const [repo, tag] = image.split(':');
  const { uuid } = await api.ok('POST', '/applications/dockerimage', {
    project_uuid: p.project,
    server_uuid: p.serverA,
    destination_uuid: p.destA,
    environment_name: 'production',
    name,
    docker_registry_image_name: repo,
    docker_registry_image_tag: tag,
  });
  await api.ok('POST', `/applications/${uuid}/storages`, { type: 'persistent', name: 'data', mount_path: '/data' });
  await deployed(api, (await api.ok('POST', `/deploy?uuid=${uuid}`)).deployments[0].deployment_uuid, 30_000, expected);
  return { uuid, volume: (await volumeNames(api, 'applications', uuid)).data! };
}

/** A server reached over SSH (the test sshd on loopback) whose engine is one of the test engines. */
export async function registerSshServer(
  api: Api,
  name: string,
  o: { port: number; keyUuid: string; socket: string; user?: string; validate?: boolean },
): Promise<{ uuid: string; dest: string; validation?: any }> {
  const { uuid } = await api.ok('POST', '/servers', {
    name,
    ip: '127.0.0.1',
    port: o.port,
    user: o.user ?? 'root',
    private_key_uuid: o.keyUuid,
    engine_endpoint: `ssh://${o.user ?? 'root'}@127.0.0.1:${o.port}${o.socket}`,
  });
  const validation = o.validate === false ? undefined : await api.ok('POST', `/servers/${uuid}/validate`);
  const dest = await api.ok('POST', `/servers/${uuid}/destinations`, { network: 'none' });
  return { uuid, dest: dest.uuid as string, ...(validation ? { validation } : {}) };
}
