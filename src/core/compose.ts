import { posix } from 'node:path';
import { isMap, isSeq, LineCounter, parseDocument, type Document } from 'yaml';
import { inputProblem } from './input-guard.js';
import { z } from 'zod';
import { validationError } from './errors.js';
import { HOST_ACCESS_HINT, hostReaching, type HostReach, type HostSettings } from './host-access.js';
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
}

export interface ParsedCompose {
  yaml: string;
  containers: ComposeContainer[];
  volumes: string[];
  /** Settings that reach into the host, one message each with its line (see requireHostAccess). */
  hostReach: string[];
}

/**
 * Service keys berth honours; anything else is refused rather than silently ignored.
 * depends_on and expose change nothing here: containers start in file order on one network.
 * The second group reaches into the host and passes only the host-access check.
 */
const KNOWN = new Set([
  'image', 'environment', 'command', 'entrypoint', 'ports', 'volumes', 'restart', 'labels', 'depends_on', 'working_dir', 'user', 'expose', 'cap_drop',
  'privileged', 'cap_add', 'devices', 'network_mode', 'pid', 'ipc', 'uts', 'userns_mode', 'security_opt',
]);
/** Accepted values of the namespace keys ("host" is the host-reaching one). */
const MODES: Record<string, string[]> = { network_mode: ['host', 'none', 'bridge'], pid: ['host'], ipc: ['host', 'private', 'shareable'], uts: ['host'], userns_mode: ['host'] };
const CAPABILITY = /^(CAP_)?[A-Z_]{2,32}$|^ALL$/;
const DEVICE = /^\/dev\/[A-Za-z0-9._\/-]+(:\/dev\/[A-Za-z0-9._\/-]+)?(:[rwm]{1,3})?$/;

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

const asList = (v: unknown): string[] | null =>
  v === undefined || v === null ? null : Array.isArray(v) ? v.map(String) : typeof v === 'string' ? [v] : null;

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
export function parseCompose(raw: string): ParsedCompose {
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
    if (def !== null && !(typeof def === 'object' && Object.keys(def as object).length === 0)) problems.push(`volumes.${v}${at(['volumes', v])}: volume options are not supported by berth (it creates plain named volumes).`);
  }
  const containers: ComposeContainer[] = [];
  const hostReach: string[] = [];
  for (const [name, svcRaw] of Object.entries(services as Record<string, unknown>)) {
    const base = `services.${name}`;
    const where = (key: string, index?: number) => `${base}.${key}${at(['services', name, key, ...(index === undefined ? [] : [index])])}`;
    if (!engineName.safeParse(name).success) problems.push(`${base}${at(['services', name])}: service names use letters, digits and . _ -.`);
    const svc = (svcRaw ?? {}) as Record<string, unknown>;
    for (const key of Object.keys(svc)) if (!KNOWN.has(key)) problems.push(`${where(key)}: not supported by berth.`);
    if (typeof svc.image !== 'string' || !splitImage(svc.image)) problems.push(`${where('image')}: a valid image reference is required.`);
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
      const ok = /^(\d{1,5}:)?\d{1,5}(\/(tcp|udp))?$/.test(p);
      if (!ok) problems.push(`${where('ports')}: "${p}" is not host:container.`);
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
    const container: ComposeContainer = {
      name,
      image: String(svc.image),
      environment,
      command: asList(svc.command),
      entrypoint: asList(svc.entrypoint),
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
      securityOpt: list('security_opt', /^[A-Za-z0-9=:._\/-]+$/, 'a security option'),
    };
    const reach: HostReach[] = hostReaching({ ...container, binds: binds.map((b) => `${b.source}:${b.target}`) });
    for (const r of reach) hostReach.push(`${where(r.key, r.key === 'volumes' ? bindAt[r.index!] : undefined)}: ${r.why}. ${HOST_ACCESS_HINT}`);
    containers.push(container);
  }
  for (const v of volumes) if (!engineName.safeParse(v).success) problems.push(`volumes.${v}: not a valid volume name.`);
  if (problems.length) fail();
  return { yaml, containers, volumes: [...volumes], hostReach };
}

/** 422 naming every host-reaching setting (key and line) unless the server allows host access. */
export function requireHostAccess(compose: ParsedCompose, hostAccess: boolean): void {
  if (compose.hostReach.length && !hostAccess) throw validationError({ docker_compose_raw: compose.hostReach });
}

export const composeInput = z.string().min(1).max(200_000);
