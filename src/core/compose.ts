import { posix } from 'node:path';
import { isMap, isSeq, LineCounter, parseDocument, type Document } from 'yaml';
import { inputProblem } from './input-guard.js';
import { z } from 'zod';
import { validationError } from '../errors.js';
import type { ContainerSpec, PortBinding } from './model/container-spec.js';
import { HOST_ACCESS_HINT, hostReaching, type HostReach, type HostSettings } from './host-access.js';
import { sizeBytes } from './runtime-fields.js';
import { splitWords } from './shell-words.js';
import { engineName, envKey, mountPath, splitImage } from './validators.js';

/** What berth runs from a compose file: its containers and the named volumes they mount. */
/** Host-reaching settings (see host-access.ts) are optional: records older than them lack them. */
export interface ComposeContainer extends Omit<HostSettings, 'binds' | 'privileged'> {
  name: string;
  image: string;
  environment: Record<string, string>;
  command: string[] | null;
  entrypoint: string[] | null;
  ports: string[];
  mounts: { volume: string; target: string; readOnly: boolean }[];
  binds: { source: string; target: string; readOnly: boolean }[];
  privileged: boolean;
  restart: 'no' | 'always' | 'unless-stopped' | 'on-failure' | null;
  user: string | null;
  workingDir: string | null;
  labels: Record<string, string>;
  capDrop?: string[];
  /** Compose's healthcheck in Docker's form (["NONE"] when disabled); absent: the image's own. */
  healthcheck?: ContainerSpec['healthcheck'];
  /** mem_limit, cpus and deploy.resources. */
  limits?: ContainerSpec['limits'];
  /** stop_grace_period, in whole seconds. */
  stopGraceS?: number;
  /** deploy.replicas: how many tasks a swarm destination runs (a standalone one runs one container). */
  replicas?: number;
  /** deploy.endpoint_mode: how a swarm destination's stack finds the service (a standalone one reaches containers by name, as dnsrr). */
  endpointMode?: 'vip' | 'dnsrr';
  /** depends_on, by compose service name; containers are stored in dependency order. */
  dependsOn?: { service: string; condition: DependencyCondition }[];
  /** A repository's compose file (dockercompose applications) only: built from the repository, relative paths. */
  build?: ComposeBuild;
}

/** Compose's `build:` of a repository's compose file: the context directory and the Dockerfile in it. */
export interface ComposeBuild {
  context: string;
  dockerfile: string;
}

export const DEPENDENCY_CONDITIONS = ['service_started', 'service_healthy', 'service_completed_successfully'] as const;
export type DependencyCondition = (typeof DEPENDENCY_CONDITIONS)[number];

export interface ParsedCompose {
  yaml: string;
  containers: ComposeContainer[];
  volumes: string[];
  /** Settings that reach into the host, one message each with its line (see requireHostAccess). */
  hostReach: string[];
}

/**
 * Service keys berth honours; anything else is refused rather than silently ignored.
 * expose changes nothing here (one network); depends_on orders the containers.
 * The second group reaches into the host and passes only the host-access check.
 */
const KNOWN = new Set([
  'image',
  'environment',
  'command',
  'entrypoint',
  'ports',
  'volumes',
  'restart',
  'labels',
  'depends_on',
  'working_dir',
  'user',
  'expose',
  'cap_drop',
  'healthcheck',
  'deploy',
  'mem_limit',
  'mem_reservation',
  'cpus',
  'stop_grace_period',
  'privileged',
  'cap_add',
  'devices',
  'network_mode',
  'pid',
  'ipc',
  'uts',
  'userns_mode',
  'security_opt',
]);
/** Accepted values of the namespace keys ("host" is the host-reaching one). */
const MODES: Record<string, string[]> = { network_mode: ['host', 'none', 'bridge'], pid: ['host'], ipc: ['host', 'private', 'shareable'], uts: ['host'], userns_mode: ['host'] };
const CAPABILITY = /^(CAP_)?[A-Z_]{2,32}$|^ALL$/;
const DEVICE = /^\/dev\/[A-Za-z0-9._/-]+(:\/dev\/[A-Za-z0-9._/-]+)?(:[rwm]{1,3})?$/;

const MAX_COMPOSE_BYTES = 100_000;

/** Coolify sends docker_compose_raw base64-encoded; plain YAML is accepted too. */
export function decodeCompose(raw: string): string {
  const trimmed = raw.trim();
  if (/^[A-Za-z0-9+/=\s]+$/.test(trimmed) && !trimmed.includes(':')) {
    const text = Buffer.from(trimmed, 'base64').toString('utf8');
    if (!text.includes('\uFFFD')) return text;
  }
  return raw;
}

const asList = (v: unknown): string[] | null => (v === undefined || v === null ? null : Array.isArray(v) ? v.map(String) : typeof v === 'string' ? [v] : null);

/** Compose's durations: "1m30s", "10s", "500ms", "1h". Seconds, or null when not one. */
export function durationSeconds(v: unknown): number | null {
  if (typeof v !== 'string' || !/^(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+$/.test(v)) return null;
  const unit: Record<string, number> = { ns: 1e-9, us: 1e-6, µs: 1e-6, ms: 1e-3, s: 1, m: 60, h: 3600 };
  let total = 0;
  for (const m of v.matchAll(/(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/g)) total += Number(m[1]) * unit[m[2]!]!;
  return total;
}

/** Compose's byte sizes: an integer, or "512m", "1g", "1.5GB". Bytes, or null when not one. */
function composeBytes(v: unknown): number | null {
  if (typeof v === 'number' && Number.isInteger(v) && v >= 0) return v;
  if (typeof v === 'string' && /^\d+(\.\d+)?([bkmgt]i?b?)?$/i.test(v)) return sizeBytes(v);
  return null;
}

/**
 * The services in an order where each comes after what it depends on (file order otherwise),
 * or the names of a cycle.
 */
export function dependencyOrder<T extends { name: string; dependsOn?: { service: string }[] }>(items: T[]): { order: T[] } | { cycle: string[] } {
  const byName = new Map(items.map((i) => [i.name, i]));
  const done = new Set<string>();
  const order: T[] = [];
  const visit = (item: T, path: string[]): string[] | null => {
    if (done.has(item.name)) return null;
    if (path.includes(item.name)) return [...path.slice(path.indexOf(item.name)), item.name];
    for (const d of item.dependsOn ?? []) {
      const dep = byName.get(d.service);
      const cycle = dep && visit(dep, [...path, item.name]);
      if (cycle) return cycle;
    }
    done.add(item.name);
    order.push(item);
    return null;
  };
  for (const item of items) {
    const cycle = visit(item, []);
    if (cycle) return { cycle };
  }
  return { order };
}

/** Line numbers of keys and list items, for messages a person can find in their file. */
function locator(doc: Document, lines: LineCounter) {
  return (path: (string | number)[]): string => {
    let node: unknown = doc.contents;
    let offset: number | undefined;
    for (const seg of path) {
      if (isMap(node)) {
        const pair = node.items.find((p) => (p.key as { value?: unknown } | null)?.value === seg);
        offset = (pair?.key as { range?: [number, number, number] } | undefined)?.range?.[0];
        node = pair?.value;
      } else if (isSeq(node) && typeof seg === 'number') {
        const item = node.items[seg] as { range?: [number, number, number] } | undefined;
        offset = item?.range?.[0];
        node = item;
      } else break;
    }
    return offset === undefined ? '' : ` (line ${lines.linePos(offset).line})`;
  };
}

/**
 * Parses and checks a compose file: every key berth does not honour, every malformed value and
 * every bind of the host's root is a 422 here. Settings that reach into the host are listed in
 * `hostReach`; whether they may stay depends on the server (requireHostAccess), known only after
 * the team-scoped lookup.
 */
export function parseCompose(raw: string, opts: { build?: boolean } = {}): ParsedCompose {
  const field = 'docker_compose_raw';
  const problems: string[] = [];
  const fail = () => {
    throw validationError({ [field]: problems });
  };
  const yaml = decodeCompose(raw);
  if (Buffer.byteLength(yaml) > MAX_COMPOSE_BYTES) {
    problems.push('The compose file is too large.');
    fail();
  }
  const lines = new LineCounter();
  const parsed = parseDocument(yaml, { lineCounter: lines, prettyErrors: false });
  let doc: unknown;
  try {
    if (parsed.errors.length) throw parsed.errors[0];
    doc = parsed.toJS({ maxAliasCount: 50 });
  } catch (e) {
    problems.push(`The compose file is not valid YAML: ${(e as Error).message.split('\n')[0]}`);
    fail();
  }
  // A key that reaches a prototype (`__proto__:`, `constructor:`) or nesting past any compose
  // file's is refused before any code walks the document by key.
  const problem = inputProblem(doc);
  if (problem) {
    problems.push(`${problem.field}: ${problem.message}`);
    fail();
  }
  const at = locator(parsed, lines);
  const services = (doc as { services?: unknown })?.services;
  if (!services || typeof services !== 'object' || Array.isArray(services) || !Object.keys(services).length) {
    problems.push('The compose file needs a non-empty "services" map.');
    fail();
  }
  const topVolumes = (doc as { volumes?: Record<string, unknown> }).volumes ?? {};
  const volumes = new Set<string>(Object.keys(topVolumes ?? {}));
  for (const [v, def] of Object.entries(topVolumes ?? {})) {
    // berth creates plain named volumes; a driver option (a local "device" bind, say) would be ignored or worse.
    if (def !== null && !(typeof def === 'object' && Object.keys(def as object).length === 0))
      problems.push(`volumes.${v}${at(['volumes', v])}: volume options are not supported by berth (it creates plain named volumes).`);
  }
  const containers: ComposeContainer[] = [];
  const hostReach: string[] = [];
  for (const [name, svcRaw] of Object.entries(services as Record<string, unknown>)) {
    const base = `services.${name}`;
    const where = (key: string, index?: number) => `${base}.${key}${at(['services', name, key, ...(index === undefined ? [] : [index])])}`;
    if (!engineName.safeParse(name).success) problems.push(`${base}${at(['services', name])}: service names use letters, digits and . _ -.`);
    const svc = (svcRaw ?? {}) as Record<string, unknown>;
    for (const key of Object.keys(svc)) if (!KNOWN.has(key) && !(opts.build && key === 'build')) problems.push(`${where(key)}: not supported by berth.`);
    const build = opts.build && svc.build !== undefined ? composeBuild(svc.build, where('build'), problems) : undefined;
    if (!(build && svc.image === undefined) && (typeof svc.image !== 'string' || !splitImage(svc.image)))
      problems.push(`${where('image')}: a valid image reference is required${opts.build ? ' (or a build section)' : ''}.`);
    const environment: Record<string, string> = {};
    const env = svc.environment;
    if (Array.isArray(env)) {
      for (const item of env) {
        const [k, ...rest] = String(item).split('=');
        if (!envKey.safeParse(k).success) problems.push(`${where('environment')}: invalid key "${k}".`);
        else environment[k!] = rest.join('=');
      }
    } else if (env && typeof env === 'object') {
      for (const [k, v] of Object.entries(env)) {
        if (!envKey.safeParse(k).success) problems.push(`${where('environment')}: invalid key "${k}".`);
        else environment[k] = v === null || v === undefined ? '' : String(v);
      }
    }
    const ports = (asList(svc.ports) ?? []).filter((p) => {
      const ok = COMPOSE_PORT.test(p);
      if (!ok) problems.push(`${where('ports')}: "${p}" is not [ip:]host:container.`);
      return ok;
    });
    const mounts: ComposeContainer['mounts'] = [];
    const binds: ComposeContainer['binds'] = [];
    /** The volumes entry each bind came from, for its line number. */
    const bindAt: number[] = [];
    ((svc.volumes as unknown[]) ?? []).forEach((v, index) => {
      let source: string | undefined;
      let target: string | undefined;
      let readOnly = false;
      let bind = false;
      if (typeof v === 'string') {
        const parts = v.split(':');
        [source, target] = parts.length === 1 ? [undefined, parts[0]] : [parts[0], parts[1]];
        readOnly = parts[2] === 'ro';
      } else if (v && typeof v === 'object') {
        const o = v as { source?: string; target?: string; read_only?: boolean; type?: string };
        if (o.type !== undefined && o.type !== 'volume' && o.type !== 'bind') problems.push(`${where('volumes', index)}: volume type "${o.type}" is not supported by berth.`);
        source = o.source;
        target = o.target;
        readOnly = o.read_only === true;
        bind = o.type === 'bind';
      }
      if (!target || !mountPath.safeParse(target).success) {
        problems.push(`${where('volumes', index)}: "${target}" is not an absolute container path.`);
        return;
      }
      if (!source) {
        problems.push(`${where('volumes', index)}: anonymous volumes are not supported; name the volume.`);
      } else if (bind || /^[/.~]/.test(source)) {
        // Normalized, so `/.`, `//` or `/srv/..` are seen for what they are: the host's root.
        const normalized = source.startsWith('/') ? posix.normalize(source) : source;
        if (normalized === '/' || normalized === '//') problems.push(`${where('volumes', index)}: mounting the host's root directory is never allowed.`);
        else if (!source.startsWith('/')) problems.push(`${where('volumes', index)}: relative host paths ("${source}") are not supported; use a named volume.`);
        else if (source.split('/').includes('..')) problems.push(`${where('volumes', index)}: host paths must not contain "..".`);
        else {
          binds.push({ source, target, readOnly });
          bindAt.push(index);
        }
      } else if (!engineName.safeParse(source).success) {
        problems.push(`${where('volumes', index)}: "${source}" is not a valid volume name.`);
      } else {
        volumes.add(source);
        mounts.push({ volume: source, target, readOnly });
      }
    });
    const restart = svc.restart === undefined ? null : String(svc.restart).replace(/:\d+$/, '');
    if (restart !== null && !['no', 'always', 'unless-stopped', 'on-failure'].includes(restart)) problems.push(`${where('restart')}: use no, always, unless-stopped or on-failure.`);
    const user = svc.user === undefined ? null : String(svc.user);
    if (user !== null && !/^[A-Za-z0-9_.-]+(:[A-Za-z0-9_.-]+)?$/.test(user)) problems.push(`${where('user')}: use a name or uid[:gid].`);
    const workingDir = svc.working_dir === undefined ? null : String(svc.working_dir);
    if (workingDir !== null && !mountPath.safeParse(workingDir).success) problems.push(`${where('working_dir')}: must be an absolute path.`);
    const labels: Record<string, string> = {};
    const rawLabels = svc.labels;
    for (const [k, v] of Array.isArray(rawLabels) ? rawLabels.map((l) => String(l).split('=')) : Object.entries(rawLabels ?? {})) {
      if (!/^[A-Za-z0-9._/-]+$/.test(String(k)) || String(k).startsWith('berth.')) problems.push(`${where('labels')}: "${k}" is not a usable label key.`);
      else labels[String(k)] = String(v ?? '');
    }
    const list = (key: string, pattern: RegExp, what: string) =>
      (asList(svc[key]) ?? []).filter((item) => {
        if (pattern.test(item)) return true;
        problems.push(`${where(key)}: "${item}" is not ${what}.`);
        return false;
      });
    const mode = (key: string) => {
      if (svc[key] === undefined) return null;
      const value = String(svc[key]);
      if (MODES[key]!.includes(value)) return value;
      problems.push(`${where(key)}: use ${MODES[key]!.join(' or ')}.`);
      return null;
    };
    if (svc.privileged !== undefined && typeof svc.privileged !== 'boolean') problems.push(`${where('privileged')}: must be true or false.`);
    // A string command or entrypoint is split into words, as compose does.
    const words = (key: 'command' | 'entrypoint'): string[] | null => {
      const v = svc[key];
      if (typeof v !== 'string') return asList(v);
      const split = splitWords(v);
      if ('words' in split) return split.words;
      problems.push(`${where(key)}: ${split.error}`);
      return null;
    };
    const runtime = runtimeSettings(svc, where, problems);
    const container: ComposeContainer = {
      name,
      // A built service's image is named at its build (its `image:`, if any, is not pushed or pulled).
      image: build ? '' : String(svc.image),
      ...(build ? { build } : {}),
      environment,
      command: words('command'),
      entrypoint: words('entrypoint'),
      ports,
      mounts,
      binds,
      privileged: svc.privileged === true,
      restart: restart as ComposeContainer['restart'],
      user,
      workingDir,
      labels,
      capAdd: list('cap_add', CAPABILITY, 'a capability name'),
      capDrop: list('cap_drop', CAPABILITY, 'a capability name'),
      devices: list('devices', DEVICE, 'a /dev path mapping'),
      networkMode: mode('network_mode'),
      pidMode: mode('pid'),
      ipcMode: mode('ipc'),
      utsMode: mode('uts'),
      usernsMode: mode('userns_mode'),
      securityOpt: list('security_opt', /^[A-Za-z0-9=:._/-]+$/, 'a security option'),
      ...runtime,
    };
    const reach: HostReach[] = hostReaching({ ...container, binds: binds.map((b) => `${b.source}:${b.target}`) });
    for (const r of reach) hostReach.push(`${where(r.key, r.key === 'volumes' ? bindAt[r.index!] : undefined)}: ${r.why}. ${HOST_ACCESS_HINT}`);
    containers.push(container);
  }
  for (const v of volumes) if (!engineName.safeParse(v).success) problems.push(`volumes.${v}: not a valid volume name.`);
  for (const k of containers) {
    for (const d of k.dependsOn ?? [])
      if (!containers.some((o) => o.name === d.service)) problems.push(`services.${k.name}.depends_on${at(['services', k.name, 'depends_on'])}: "${d.service}" is not a service of this file.`);
  }
  const ordered = dependencyOrder(containers);
  if ('cycle' in ordered) problems.push(`depends_on: the services depend on each other in a cycle (${ordered.cycle.join(' → ')}).`);
  if (problems.length) fail();
  return { yaml, containers: 'order' in ordered ? ordered.order : containers, volumes: [...volumes], hostReach };
}

/** A path inside the repository, relative as compose writes it ("." , "./api", "api/Dockerfile"). */
const REPO_RELATIVE = /^[A-Za-z0-9._@+\-/ ]+$/;
const insideRepo = (p: string) => REPO_RELATIVE.test(p) && !p.startsWith('/') && !p.split('/').includes('..');

/**
 * A `build:` section: a context (a directory of the repository, relative to the compose file's)
 * and a dockerfile in it. Everything else (args, target, a URL context, ssh, secrets) is refused
 * by name rather than ignored.
 */
function composeBuild(v: unknown, where: string, problems: string[]): ComposeBuild | undefined {
  const o = typeof v === 'string' ? { context: v } : v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
  if (!o) {
    problems.push(`${where}: must be a context directory or a map of context and dockerfile.`);
    return undefined;
  }
  for (const k of Object.keys(o)) if (k !== 'context' && k !== 'dockerfile') problems.push(`${where}: ${k} is not supported by berth (it builds a context and a dockerfile only).`);
  const context = o.context === undefined ? '.' : String(o.context);
  const dockerfile = o.dockerfile === undefined ? 'Dockerfile' : String(o.dockerfile);
  if (!insideRepo(context)) problems.push(`${where}: the context "${context}" must be a relative directory of the repository (no "..", no URL).`);
  if (!insideRepo(dockerfile)) problems.push(`${where}: the dockerfile "${dockerfile}" must be a relative path inside the context (no "..").`);
  return { context: posix.normalize(context), dockerfile: posix.normalize(dockerfile) };
}

/** healthcheck, limits, stop grace period and depends_on of one service; problems are added to the list. */
function runtimeSettings(
  svc: Record<string, unknown>,
  where: (key: string) => string,
  problems: string[],
): Pick<ComposeContainer, 'healthcheck' | 'limits' | 'stopGraceS' | 'dependsOn' | 'replicas' | 'endpointMode'> {
  const out: Pick<ComposeContainer, 'healthcheck' | 'limits' | 'stopGraceS' | 'dependsOn' | 'replicas' | 'endpointMode'> = {};
  const hc = svc.healthcheck;
  if (hc !== undefined) {
    if (!hc || typeof hc !== 'object' || Array.isArray(hc)) problems.push(`${where('healthcheck')}: must be a map (test, interval, timeout, retries, start_period, disable).`);
    else {
      const h = hc as Record<string, unknown>;
      for (const k of Object.keys(h))
        if (!['test', 'interval', 'timeout', 'retries', 'start_period', 'disable'].includes(k)) problems.push(`${where('healthcheck')}: "${k}" is not supported by berth.`);
      const seconds = (k: string): number | undefined => {
        if (h[k] === undefined) return undefined;
        const s = durationSeconds(h[k]);
        if (s === null) problems.push(`${where('healthcheck')}: ${k} must be a duration such as 10s or 1m30s.`);
        return s ?? undefined;
      };
      let test: string[] | undefined;
      if (h.disable === true) test = ['NONE'];
      else if (typeof h.test === 'string') test = ['CMD-SHELL', h.test];
      else if (Array.isArray(h.test) && h.test.length && ['NONE', 'CMD', 'CMD-SHELL'].includes(String(h.test[0]))) test = h.test.map(String);
      else problems.push(`${where('healthcheck')}: test must be a string, or a list starting with CMD, CMD-SHELL or NONE.`);
      if (h.retries !== undefined && !(Number.isInteger(h.retries) && (h.retries as number) >= 0)) problems.push(`${where('healthcheck')}: retries must be a whole number.`);
      const [intervalS, timeoutS, startPeriodS] = [seconds('interval'), seconds('timeout'), seconds('start_period')];
      if (test) {
        out.healthcheck = { test };
        if (test[0] !== 'NONE') {
          if (intervalS !== undefined) out.healthcheck.intervalS = intervalS;
          if (timeoutS !== undefined) out.healthcheck.timeoutS = timeoutS;
          if (typeof h.retries === 'number') out.healthcheck.retries = h.retries;
          if (startPeriodS !== undefined) out.healthcheck.startPeriodS = startPeriodS;
        }
      }
    }
  }
  const limits: NonNullable<ContainerSpec['limits']> = {};
  const memory = (key: string, value: unknown, set: (n: number) => void) => {
    if (value === undefined) return;
    const n = composeBytes(value);
    if (n === null || (n > 0 && n < 6 * 1024 ** 2)) problems.push(`${where(key)}: use a size of at least 6m, such as 512m or 1g.`);
    else if (n > 0) set(n);
  };
  const cpus = (key: string, value: unknown) => {
    if (value === undefined) return;
    const n = Number(value);
    if ((typeof value !== 'number' && typeof value !== 'string') || !Number.isFinite(n) || n < 0 || (n > 0 && n < 0.01)) problems.push(`${where(key)}: use a number of CPUs such as 0.5 or 2.`);
    else if (n > 0) limits.nanoCpus = Math.round(n * 1e9);
  };
  memory('mem_limit', svc.mem_limit, (n) => (limits.memory = n));
  memory('mem_reservation', svc.mem_reservation, (n) => (limits.memoryReservation = n));
  cpus('cpus', svc.cpus);
  const deploy = svc.deploy;
  if (deploy !== undefined) {
    const d = (deploy ?? {}) as Record<string, unknown>;
    const r = (d.resources ?? {}) as Record<string, unknown>;
    const lim = (r.limits ?? {}) as Record<string, unknown>;
    const res = (r.reservations ?? {}) as Record<string, unknown>;
    const known =
      Object.keys(d).every((k) => ['resources', 'replicas', 'endpoint_mode'].includes(k)) &&
      Object.keys(r).every((k) => ['limits', 'reservations'].includes(k)) &&
      Object.keys(lim).every((k) => ['memory', 'cpus'].includes(k)) &&
      Object.keys(res).every((k) => k === 'memory');
    if (!known || typeof deploy !== 'object')
      problems.push(`${where('deploy')}: berth honours deploy.replicas, deploy.endpoint_mode, deploy.resources.limits (memory, cpus) and deploy.resources.reservations.memory only.`);
    if (d.endpoint_mode !== undefined) {
      if (d.endpoint_mode === 'vip' || d.endpoint_mode === 'dnsrr') out.endpointMode = d.endpoint_mode;
      else problems.push(`${where('deploy')}: endpoint_mode must be vip or dnsrr.`);
    }
    if (d.replicas !== undefined) {
      if (Number.isInteger(d.replicas) && (d.replicas as number) >= 0 && (d.replicas as number) <= 100) out.replicas = d.replicas as number;
      else problems.push(`${where('deploy')}: replicas must be a whole number from 0 to 100.`);
    }
    memory('deploy', lim.memory, (n) => (limits.memory = n));
    memory('deploy', res.memory, (n) => (limits.memoryReservation = n));
    cpus('deploy', lim.cpus);
  }
  if (Object.keys(limits).length) out.limits = limits;
  if (svc.stop_grace_period !== undefined) {
    const s = durationSeconds(svc.stop_grace_period);
    if (s === null || s > 3600) problems.push(`${where('stop_grace_period')}: must be a duration of at most 1h, such as 30s or 1m30s.`);
    else out.stopGraceS = Math.ceil(s);
  }
  const deps = svc.depends_on;
  if (deps !== undefined) {
    const list: ComposeContainer['dependsOn'] = [];
    if (Array.isArray(deps)) for (const d of deps) list.push({ service: String(d), condition: 'service_started' });
    else if (deps && typeof deps === 'object') {
      for (const [name, v] of Object.entries(deps)) {
        const condition = (v as { condition?: unknown } | null)?.condition ?? 'service_started';
        if (!DEPENDENCY_CONDITIONS.includes(condition as DependencyCondition)) problems.push(`${where('depends_on')}: condition of "${name}" must be ${DEPENDENCY_CONDITIONS.join(', ')}.`);
        else list.push({ service: name, condition: condition as DependencyCondition });
      }
    } else problems.push(`${where('depends_on')}: must be a list of services or a map of service: {condition}.`);
    if (list.length) out.dependsOn = list;
  }
  return out;
}

/** 422 naming every host-reaching setting (key and line) unless the server allows host access. */
export function requireHostAccess(compose: ParsedCompose, hostAccess: boolean): void {
  if (compose.hostReach.length && !hostAccess) throw validationError({ docker_compose_raw: compose.hostReach });
}

export const composeInput = z.string().min(1).max(200_000);

/** A compose port: container, host:container, or an IPv4 address to publish on first (127.0.0.1:8080:80). */
const COMPOSE_PORT = /^((\d{1,3}\.){3}\d{1,3}:)?(\d{1,5}:)?\d{1,5}(\/(tcp|udp))?$/;

/** A compose port (checked by parseCompose) as the engine publishes it. */
export function composePort(p: string): PortBinding {
  const [spec, proto] = p.split('/');
  const parts = spec!.split(':');
  const containerPort = Number(parts.pop());
  const hostPort = parts.length ? Number(parts.pop()) : undefined;
  const hostIp = parts.pop();
  return { containerPort, ...(hostPort === undefined ? {} : { hostPort }), ...(hostIp ? { hostIp } : {}), ...(proto === 'udp' ? { protocol: 'udp' as const } : {}) };
}
