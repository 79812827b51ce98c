import { posix } from 'node:path';
import { parse } from 'yaml';
import { z } from 'zod';
import { validationError } from './errors.js';
import { engineName, envKey, mountPath, splitImage } from './validators.js';

/** What berth runs from a compose file: its containers and the named volumes they mount. */
export interface ComposeContainer {
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
}

export interface ParsedCompose {
  yaml: string;
  containers: ComposeContainer[];
  volumes: string[];
}

/**
 * Service keys berth honours; anything else is refused rather than silently ignored.
 * depends_on and expose change nothing here: containers start in file order on one network.
 */
const KNOWN = new Set(['image', 'environment', 'command', 'entrypoint', 'ports', 'volumes', 'restart', 'labels', 'depends_on', 'working_dir', 'user', 'expose', 'privileged']);
/** Keys that reach past the container into the host: refused for every token (privileged is the one root exception). */
const HOST_REACHING = ['cap_add', 'devices', 'network_mode', 'pid', 'ipc', 'security_opt', 'userns_mode', 'sysctls', 'cgroup_parent'];

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

/**
 * Parses and checks a compose file. Named volumes only, unless the token is root; never a bind
 * of the host's root; no privileged or host-namespace containers without root.
 */
export function parseCompose(raw: string, opts: { root: boolean }): ParsedCompose {
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
  let doc: unknown;
  try {
    doc = parse(yaml, { maxAliasCount: 50, prettyErrors: false });
  } catch (e) {
    problems.push(`The compose file is not valid YAML: ${(e as Error).message.split('\n')[0]}`);
    fail();
  }
  const services = (doc as { services?: unknown })?.services;
  if (!services || typeof services !== 'object' || Array.isArray(services) || !Object.keys(services).length) {
    problems.push('The compose file needs a non-empty "services" map.');
    fail();
  }
  const topVolumes = (doc as { volumes?: Record<string, unknown> }).volumes ?? {};
  const volumes = new Set<string>(Object.keys(topVolumes ?? {}));
  const containers: ComposeContainer[] = [];
  for (const [name, svcRaw] of Object.entries(services as Record<string, unknown>)) {
    const at = `services.${name}`;
    if (!engineName.safeParse(name).success) problems.push(`${at}: service names use letters, digits and . _ -.`);
    const svc = (svcRaw ?? {}) as Record<string, unknown>;
    for (const key of Object.keys(svc)) {
      if (HOST_REACHING.includes(key)) problems.push(`${at}.${key}: not allowed (it reaches into the host).`);
      else if (!KNOWN.has(key)) problems.push(`${at}.${key}: not supported by berth.`);
    }
    const privileged = svc.privileged === true;
    if (privileged && !opts.root) problems.push(`${at}.privileged: only a root token may run privileged containers.`);
    if (typeof svc.image !== 'string' || !splitImage(svc.image)) problems.push(`${at}.image: a valid image reference is required.`);
    const environment: Record<string, string> = {};
    const env = svc.environment;
    if (Array.isArray(env)) {
      for (const item of env) {
        const [k, ...rest] = String(item).split('=');
        if (!envKey.safeParse(k).success) problems.push(`${at}.environment: invalid key "${k}".`);
        else environment[k!] = rest.join('=');
      }
    } else if (env && typeof env === 'object') {
      for (const [k, v] of Object.entries(env)) {
        if (!envKey.safeParse(k).success) problems.push(`${at}.environment: invalid key "${k}".`);
        else environment[k] = v === null || v === undefined ? '' : String(v);
      }
    }
    const ports = (asList(svc.ports) ?? []).filter((p) => {
      const ok = /^(\d{1,5}:)?\d{1,5}(\/(tcp|udp))?$/.test(p);
      if (!ok) problems.push(`${at}.ports: "${p}" is not host:container.`);
      return ok;
    });
    const mounts: ComposeContainer['mounts'] = [];
    const binds: ComposeContainer['binds'] = [];
    for (const v of (svc.volumes as unknown[]) ?? []) {
      let source: string | undefined;
      let target: string | undefined;
      let readOnly = false;
      if (typeof v === 'string') {
        const parts = v.split(':');
        [source, target] = parts.length === 1 ? [undefined, parts[0]] : [parts[0], parts[1]];
        readOnly = parts[2] === 'ro';
      } else if (v && typeof v === 'object') {
        const o = v as { source?: string; target?: string; read_only?: boolean; type?: string };
        source = o.source;
        target = o.target;
        readOnly = o.read_only === true;
      }
      if (!target || !mountPath.safeParse(target).success) {
        problems.push(`${at}.volumes: "${target}" is not an absolute container path.`);
        continue;
      }
      if (!source) {
        problems.push(`${at}.volumes: anonymous volumes are not supported; name the volume.`);
      } else if (/^[/.~]/.test(source)) {
        // Normalized, so `/.`, `//` or `/srv/..` are seen for what they are: the host's root.
        const normalized = source.startsWith('/') ? posix.normalize(source) : source;
        if (normalized === '/') problems.push(`${at}.volumes: mounting the host's root directory is never allowed.`);
        else if (!opts.root) problems.push(`${at}.volumes: host paths ("${source}") need a root token; use a named volume.`);
        else if (source.split('/').includes('..')) problems.push(`${at}.volumes: host paths must not contain "..".`);
        else binds.push({ source, target, readOnly });
      } else if (!engineName.safeParse(source).success) {
        problems.push(`${at}.volumes: "${source}" is not a valid volume name.`);
      } else {
        volumes.add(source);
        mounts.push({ volume: source, target, readOnly });
      }
    }
    const restart = svc.restart === undefined ? null : String(svc.restart).replace(/:\d+$/, '');
    if (restart !== null && !['no', 'always', 'unless-stopped', 'on-failure'].includes(restart)) problems.push(`${at}.restart: use no, always, unless-stopped or on-failure.`);
    const user = svc.user === undefined ? null : String(svc.user);
    if (user !== null && !/^[A-Za-z0-9_.-]+(:[A-Za-z0-9_.-]+)?$/.test(user)) problems.push(`${at}.user: use a name or uid[:gid].`);
    const workingDir = svc.working_dir === undefined ? null : String(svc.working_dir);
    if (workingDir !== null && !mountPath.safeParse(workingDir).success) problems.push(`${at}.working_dir: must be an absolute path.`);
    const labels: Record<string, string> = {};
    const rawLabels = svc.labels;
    for (const [k, v] of Array.isArray(rawLabels) ? rawLabels.map((l) => String(l).split('=')) : Object.entries(rawLabels ?? {})) {
      if (!/^[A-Za-z0-9._/-]+$/.test(String(k)) || String(k).startsWith('berth.')) problems.push(`${at}.labels: "${k}" is not a usable label key.`);
      else labels[String(k)] = String(v ?? '');
    }
    containers.push({
      name,
      image: String(svc.image),
      environment,
      command: asList(svc.command),
      entrypoint: asList(svc.entrypoint),
      ports,
      mounts,
      binds,
      privileged,
      restart: restart as ComposeContainer['restart'],
      user,
      workingDir,
      labels,
    });
  }
  for (const v of volumes) if (!engineName.safeParse(v).success) problems.push(`volumes.${v}: not a valid volume name.`);
  if (problems.length) fail();
  return { yaml, containers, volumes: [...volumes] };
}

export const composeInput = z.string().min(1).max(200_000);
