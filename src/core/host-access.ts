import { posix } from 'node:path';

/**
 * The one check for container settings that reach past the container into its host: used where
 * a compose file is parsed (with YAML line numbers), where a destination network is chosen, at
 * migration (the target must allow what the resource needs) and by the runtime right before it
 * creates a container, whatever door the settings came through. Such settings are refused unless
 * the instance's root team turned on host access for that server (`host_access`).
 *
 * A bind mount of any host path counts: the host resolves symlinks in a bind's source, so a
 * container that may bind one harmless directory can plant a link there that a second bind
 * follows into /etc. Named volumes are the way to keep data.
 */
export interface HostSettings {
  privileged?: boolean;
  capAdd?: string[];
  devices?: string[];
  networkMode?: string | null;
  pidMode?: string | null;
  ipcMode?: string | null;
  utsMode?: string | null;
  usernsMode?: string | null;
  securityOpt?: string[];
  /** Docker's `source:target[:ro]`. */
  binds?: string[];
}

/** A setting that reaches into the host: its compose key (and list position), and why. */
export interface HostReach {
  key: 'privileged' | 'cap_add' | 'devices' | 'network_mode' | 'pid' | 'ipc' | 'uts' | 'userns_mode' | 'security_opt' | 'volumes';
  index?: number;
  why: string;
}

export const HOST_ACCESS_HINT = "Allowed only on a server where the instance's root team turned on host access (PATCH /servers/{uuid} with host_access: true, root token of the root team).";

/** Engine control sockets: a bind of one is root on the host. */
const ENGINE_SOCKETS = /(^|\/)(docker|podman|containerd|crio|dockershim)\.sock$/;
/** Paths whose bind (or the bind of a parent) hands the host over. */
const SYSTEM_PATHS = ['/etc', '/root', '/home', '/var/run', '/run', '/proc', '/sys', '/dev', '/boot', '/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32', '/var/lib', '/var/log'];

const within = (path: string, base: string) => path === base || path.startsWith(`${base}/`);

/** What a bind source is, for a message that says why it matters. */
export function bindSourceKind(source: string): 'root' | 'engine socket' | 'system path' | 'relative path' | 'host path' {
  if (!source.startsWith('/')) return 'relative path';
  const p = posix.normalize(source).replace(/\/+$/, '') || '/';
  if (p === '/') return 'root';
  if (ENGINE_SOCKETS.test(p)) return 'engine socket';
  // Inside a system path, or a parent of one (a bind of /var holds /var/run/docker.sock).
  if (SYSTEM_PATHS.some((s) => within(p, s) || within(s, p))) return 'system path';
  return 'host path';
}

const HOST_MODE = (v: string | null | undefined) => v === 'host';

export function hostReaching(s: HostSettings): HostReach[] {
  const out: HostReach[] = [];
  if (s.privileged) out.push({ key: 'privileged', why: 'privileged containers have every capability and device of the host' });
  if (s.capAdd?.length) out.push({ key: 'cap_add', why: `added capabilities (${s.capAdd.join(', ')}) lift the container's confinement` });
  if (s.devices?.length) out.push({ key: 'devices', why: 'host devices give the container direct access to host hardware' });
  if (HOST_MODE(s.networkMode)) out.push({ key: 'network_mode', why: "the host network namespace reaches every service listening on the host's loopback" });
  if (HOST_MODE(s.pidMode)) out.push({ key: 'pid', why: "the host PID namespace shows and signals the host's processes" });
  if (HOST_MODE(s.ipcMode)) out.push({ key: 'ipc', why: "the host IPC namespace shares the host's shared memory" });
  if (HOST_MODE(s.utsMode)) out.push({ key: 'uts', why: 'the host UTS namespace can rename the host' });
  if (HOST_MODE(s.usernsMode)) out.push({ key: 'userns_mode', why: 'the host user namespace turns off user remapping' });
  if (s.securityOpt?.length) out.push({ key: 'security_opt', why: 'security options can switch off seccomp, AppArmor or SELinux confinement' });
  (s.binds ?? []).forEach((b, index) => {
    const source = b.split(':')[0] ?? '';
    out.push({ key: 'volumes', index, why: bindWhy(source) });
  });
  return out;
}

function bindWhy(source: string): string {
  switch (bindSourceKind(source)) {
    case 'engine socket':
      return `"${source}" binds the engine socket, which controls every container and the host`;
    case 'system path':
      return `"${source}" binds a system path of the host`;
    case 'root':
      return `"${source}" binds the host's root directory`;
    default:
      return `"${source}" binds a host path (use a named volume to keep data)`;
  }
}

/** One line for a refusal outside compose files (runtime, migration). */
export function describeHostReach(found: HostReach[], where: string): string {
  return `${where} reaches into its host: ${found.map((f) => `${f.key}: ${f.why}`).join('; ')}. ${HOST_ACCESS_HINT}`;
}
