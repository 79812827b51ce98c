import { posix } from 'node:path';
import type { ContainerSpec } from './model/container-spec.js';
import { validationError } from '../errors.js';
import { HOST_ACCESS_HINT, hostReaching, type HostReach, type HostSettings } from './host-access.js';
import { sizeBytes } from './runtime-fields.js';
import { splitWords } from './shell-words.js';
import { mountPath } from './validators.js';

/**
 * Coolify's `custom_docker_run_options`: a string of `docker run` options, read the way docker
 * reads them (`--opt value`, `--opt=value`, `-o value`). Options that only shape the tenant's own
 * container are accepted; options that reach into the host pass only the host-access check
 * (core/host-access.ts); everything else is a 422 that names the option, never silently dropped.
 * See docs/decisions/README.md for the list and why.
 */

/** What the options set on the container: safe settings and host-reaching ones (checked apart). */
export type RunOptions = Pick<ContainerSpec, 'entrypoint' | 'capDrop' | 'ulimits' | 'init' | 'user' | 'workingDir' | 'hostname' | 'stopTimeoutS' | 'labels' | 'tmpfs' | 'shmSize' | keyof HostSettings>;

const FIELD = 'custom_docker_run_options';
const CAPABILITY = /^(CAP_)?[A-Z_]{2,32}$|^ALL$/;
const DEVICE = /^\/dev\/[A-Za-z0-9._/-]+(:\/dev\/[A-Za-z0-9._/-]+)?(:[rwm]{1,3})?$/;
const ULIMITS = ['core', 'cpu', 'data', 'fsize', 'locks', 'memlock', 'msgqueue', 'nice', 'nofile', 'nproc', 'rss', 'rtprio', 'rttime', 'sigpending', 'stack'];
const SIZE = /^\d+(\.\d+)?([bkmgt]i?b?)?$/i;

/** Canonical names of the accepted options, and which take a value. */
const ALIASES: Record<string, string> = { '-u': '--user', '-w': '--workdir', '-h': '--hostname', '-l': '--label', '-v': '--volume', '--net': '--network' };
const FLAGS = new Set(['--init', '--privileged']);
const VALUED = new Set([
  '--entrypoint',
  '--cap-drop',
  '--ulimit',
  '--user',
  '--workdir',
  '--hostname',
  '--stop-timeout',
  '--label',
  '--tmpfs',
  '--shm-size',
  '--cap-add',
  '--device',
  '--pid',
  '--network',
  '--ipc',
  '--uts',
  '--userns',
  '--security-opt',
  '--volume',
]);

/** Options berth sets itself or takes from its own fields: the field to use instead. */
const ELSEWHERE: Record<string, string> = {
  '-e': "the application's environment variables",
  '--env': "the application's environment variables",
  '--env-file': "the application's environment variables",
  '-p': 'ports_mappings',
  '--publish': 'ports_mappings',
  '-m': 'limits_memory',
  '--memory': 'limits_memory',
  '--memory-swap': 'limits_memory_swap',
  '--memory-reservation': 'limits_memory_reservation',
  '--memory-swappiness': 'limits_memory_swappiness',
  '--cpus': 'limits_cpus',
  '--cpuset-cpus': 'limits_cpuset',
  '-c': 'limits_cpu_shares',
  '--cpu-shares': 'limits_cpu_shares',
  '--health-cmd': 'the health_check_* fields',
  '--name': 'nothing (berth names its containers)',
  '--restart': 'nothing (berth sets the restart policy)',
  '--mount': 'persistent storages',
};

const fail = (message: string): never => {
  throw validationError({ [FIELD]: [message] });
};

/** Parses and checks the options (not yet host access: see requireRunOptionsAccess). */
export function parseRunOptions(raw: string): RunOptions {
  const split = splitWords(raw);
  if ('error' in split) return fail(split.error);
  const words = split.words;
  const o: RunOptions = {};
  for (let i = 0; i < words.length; i++) {
    const word = words[i]!;
    if (!word.startsWith('-')) fail(`"${word}" is not an option: only options go here (berth runs the application's image; set its command with --entrypoint).`);
    const eq = word.startsWith('--') ? word.indexOf('=') : -1;
    let name = eq === -1 ? word : word.slice(0, eq);
    let value: string | undefined = eq === -1 ? undefined : word.slice(eq + 1);
    // A short option with its value attached: -uroot.
    if (!word.startsWith('--') && word.length > 2) [name, value] = [word.slice(0, 2), word.slice(2)];
    name = ALIASES[name] ?? name;
    if (ELSEWHERE[name]) fail(`${name} is not accepted here: use ${ELSEWHERE[name]}.`);
    if (FLAGS.has(name)) {
      if (value !== undefined && !['true', 'false'].includes(value)) fail(`${name} takes no value (or =true / =false).`);
      const on = value !== 'false';
      if (name === '--init') o.init = on;
      else o.privileged = on;
      continue;
    }
    if (!VALUED.has(name))
      fail(
        `${name} is not an option berth accepts. Accepted: --entrypoint, --cap-drop, --ulimit, --init, --user, --workdir, --hostname, --stop-timeout, --label, --tmpfs, --shm-size; with host access also --privileged, --cap-add, --device, --pid/--network/--ipc/--uts/--userns=host, --security-opt and host-path --volume.`,
      );
    if (value === undefined) {
      value = words[++i];
      if (value === undefined) fail(`${name} needs a value.`);
    }
    apply(o, name, value!);
  }
  return o;
}

function apply(o: RunOptions, name: string, v: string): void {
  const bad = (what: string) => fail(`${name} ${JSON.stringify(v)}: ${what}.`);
  switch (name) {
    case '--entrypoint': {
      // As compose (and so Coolify, which turns these options into compose) reads a string entrypoint: split into words.
      const s = splitWords(v);
      if ('error' in s) return bad(s.error.replace(/\.$/, ''));
      if (!s.words.length) return bad('must not be empty');
      o.entrypoint = s.words;
      return;
    }
    case '--cap-drop':
    case '--cap-add': {
      const cap = v.toUpperCase();
      if (!CAPABILITY.test(cap)) return bad('not a capability name');
      if (name === '--cap-drop') o.capDrop = [...(o.capDrop ?? []), cap];
      else o.capAdd = [...(o.capAdd ?? []), cap];
      return;
    }
    case '--ulimit': {
      const m = /^([a-z]+)=(-?\d+)(?::(-?\d+))?$/.exec(v);
      if (!m || !ULIMITS.includes(m[1]!)) return bad(`use name=soft[:hard] with a name among ${ULIMITS.join(', ')}`);
      const soft = Number(m[2]);
      const hard = m[3] === undefined ? soft : Number(m[3]);
      if (soft < -1 || hard < -1 || (hard !== -1 && soft > hard)) return bad('the soft limit must not be above the hard one');
      o.ulimits = [...(o.ulimits ?? []).filter((u) => u.name !== m[1]), { name: m[1]!, soft, hard }];
      return;
    }
    case '--user':
      if (!/^[A-Za-z0-9_.-]+(:[A-Za-z0-9_.-]+)?$/.test(v)) return bad('use a name or uid[:gid]');
      o.user = v;
      return;
    case '--workdir':
      if (!mountPath.safeParse(v).success && v !== '/') return bad('must be an absolute path');
      o.workingDir = v;
      return;
    case '--hostname':
      if (!/^[A-Za-z0-9]([A-Za-z0-9.-]{0,62})$/.test(v)) return bad('not a host name');
      o.hostname = v;
      return;
    case '--stop-timeout':
      if (!/^\d{1,4}$/.test(v) || Number(v) > 3600) return bad('use seconds, 0 to 3600');
      o.stopTimeoutS = Number(v);
      return;
    case '--label': {
      const [k, ...rest] = v.split('=');
      const problem = labelProblem(k!, rest.join('='));
      if (problem) return bad(problem);
      o.labels = { ...o.labels, [k!]: rest.join('=') };
      return;
    }
    case '--tmpfs': {
      const [path, opts = ''] = v.split(/:(.*)/s);
      if (!mountPath.safeParse(path).success) return bad('use /path[:options] with an absolute container path');
      if (!/^[a-z0-9=,.]*$/i.test(opts)) return bad('the mount options are letters, digits and = , . only');
      o.tmpfs = { ...o.tmpfs, [path!]: opts };
      return;
    }
    case '--shm-size':
      if (!SIZE.test(v) || !sizeBytes(v)) return bad('use a size such as 64m');
      o.shmSize = sizeBytes(v);
      return;
    case '--device':
      if (!DEVICE.test(v)) return bad('use /dev/path[:/dev/path][:rwm]');
      o.devices = [...(o.devices ?? []), v];
      return;
    case '--security-opt':
      if (!/^[A-Za-z0-9=:._/-]+$/.test(v)) return bad('not a security option');
      o.securityOpt = [...(o.securityOpt ?? []), v];
      return;
    case '--pid':
    case '--network':
    case '--ipc':
    case '--uts':
    case '--userns': {
      // Only "host" is a setting berth knows how to judge; container:<id> would join another container (maybe another team's).
      if (v !== 'host')
        return bad(
          name === '--network' ? 'berth attaches the container to its destination network; only "host" may be asked for (with host access)' : 'only "host" may be asked for (with host access)',
        );
      const key = ({ '--pid': 'pidMode', '--network': 'networkMode', '--ipc': 'ipcMode', '--uts': 'utsMode', '--userns': 'usernsMode' } as const)[name];
      o[key] = 'host';
      return;
    }
    case '--volume': {
      const [source = '', target = '', mode, ...extra] = v.split(':');
      if (!source.startsWith('/')) return bad("named volumes are the application's persistent storages; here only a host path may be bound (with host access)");
      if (posix.normalize(source) === '/' || source.split('/').includes('..')) return bad('binding the host\'s root, or a path with "..", is never allowed');
      if (!mountPath.safeParse(target).success || extra.length || (mode !== undefined && !['ro', 'rw'].includes(mode))) return bad('use /host/path:/container/path[:ro]');
      o.binds = [...(o.binds ?? []), `${source}:${target}${mode === 'ro' ? ':ro' : ''}`];
      return;
    }
  }
}

/** Why a label key may not be set by a tenant, or null. berth's own labels are how it finds its containers. */
export function labelProblem(key: string, value: string): string | null {
  if (!/^[A-Za-z0-9][A-Za-z0-9._/@-]*$/.test(key) || key.length > 255) return `"${key}" is not a label key (letters, digits and . _ / @ -)`;
  if (key === 'berth' || key.startsWith('berth.')) return `"${key}": berth.* labels are berth's own and cannot be set`;
  if (!/^[^\u0000-\u001f\u007f]*$/.test(value) || value.length > 4096) return `the value of "${key}" has control characters or is too long`;
  return null;
}

const OPTION_OF: Record<HostReach['key'], string> = {
  privileged: '--privileged',
  cap_add: '--cap-add',
  devices: '--device',
  network_mode: '--network=host',
  pid: '--pid=host',
  ipc: '--ipc=host',
  uts: '--uts=host',
  userns_mode: '--userns=host',
  security_opt: '--security-opt',
  volumes: '--volume',
};

/** 422 naming every host-reaching option unless the server allows host access. */
export function requireRunOptionsAccess(o: RunOptions, hostAccess: boolean): void {
  if (hostAccess) return;
  const found = hostReaching(o);
  if (found.length) throw validationError({ [FIELD]: found.map((f) => `${OPTION_OF[f.key]}: ${f.why}. ${HOST_ACCESS_HINT}`) });
}
