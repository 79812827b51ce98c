/**
 * Where a server's Docker Engine API is reached, from its record: one decision used by the core
 * (is it managed, what does the view show) and by the runtime (how to connect).
 *
 * - `unix:///path.sock`: a socket on the berth host itself (root team only, see network-guard).
 * - `tcp://host:port`: plain or TLS (engine_tls).
 * - SSH: `ssh://user@host:port/path/to.sock`, or a server with a private key and no endpoint,
 *   which means the Docker socket at /var/run/docker.sock on `ip`:`port` as `user`.
 */

export const DEFAULT_DOCKER_SOCKET = '/var/run/docker.sock';

export type EngineTarget =
  | { transport: 'unix'; endpoint: string; socketPath: string }
  | { transport: 'tcp'; endpoint: string; host: string; port: number }
  | { transport: 'ssh'; endpoint: string; host: string; port: number; user: string; socketPath: string };

export interface ServerAddress {
  ip: string;
  port: number;
  user: string;
  engine_endpoint: string | null;
  private_key_id: number | null;
}

export interface SshEndpoint {
  user?: string;
  host: string;
  port?: number;
  socketPath?: string;
}

const stripBrackets = (h: string) => h.replace(/^\[|\]$/g, '');

/** `ssh://[user@]host[:port][/socket/path]`, or null when it is not one. */
export function parseSshEndpoint(v: string): SshEndpoint | null {
  if (!v.startsWith('ssh://')) return null;
  let url: URL;
  try {
    url = new URL(v);
  } catch {
    return null;
  }
  if (url.password || url.search || url.hash || !url.hostname) return null;
  const path = decodeURIComponent(url.pathname);
  return {
    host: stripBrackets(url.hostname),
    ...(url.username ? { user: decodeURIComponent(url.username) } : {}),
    ...(url.port ? { port: Number(url.port) } : {}),
    ...(path && path !== '/' ? { socketPath: path } : {}),
  };
}

const hostPart = (h: string) => (h.includes(':') ? `[${h}]` : h);

export function sshEndpoint(t: { user: string; host: string; port: number; socketPath: string }): string {
  return `ssh://${t.user}@${hostPart(t.host)}:${t.port}${t.socketPath}`;
}

export function engineTargetOf(s: ServerAddress): EngineTarget | null {
  const e = s.engine_endpoint;
  if (e === null) {
    if (s.private_key_id === null) return null;
    const t = { user: s.user, host: s.ip, port: s.port, socketPath: DEFAULT_DOCKER_SOCKET };
    return { transport: 'ssh', endpoint: sshEndpoint(t), ...t };
  }
  if (e.startsWith('unix://')) return { transport: 'unix', endpoint: e, socketPath: decodeURIComponent(e.slice('unix://'.length)) };
  const ssh = parseSshEndpoint(e);
  if (ssh) {
    const t = { user: ssh.user ?? s.user, host: ssh.host, port: ssh.port ?? s.port, socketPath: ssh.socketPath ?? DEFAULT_DOCKER_SOCKET };
    return { transport: 'ssh', endpoint: sshEndpoint(t), ...t };
  }
  const url = new URL(e);
  return { transport: 'tcp', endpoint: e, host: stripBrackets(url.hostname), port: Number(url.port) };
}
