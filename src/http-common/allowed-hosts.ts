import type { Config } from '../config/config.js';

/**
 * Which Host names berth answers for, one rule for /mcp (DNS rebinding) and the console's mailed
 * sign-in links (a link must never point at a host the operator did not configure): the
 * MCP_ALLOWED_HOSTS list, else the loopback names when bound to loopback, else none known (null).
 */
const LOOPBACK_HOSTS = ['localhost', '127.0.0.1', '[::1]', '::1'];
const isLoopback = (host: string) => host === 'localhost' || host.startsWith('127.') || host === '::1';

export function allowedHosts(config: Pick<Config, 'host' | 'mcpAllowedHosts'>): readonly string[] | null {
  return config.mcpAllowedHosts.length ? config.mcpAllowedHosts : isLoopback(config.host) ? LOOPBACK_HOSTS : null;
}

/** Whether a Host value (name and port) names an allowed host; with no list, none does. */
export const hostAllowed = (allowed: readonly string[] | null, host: string): boolean => allowed?.includes(hostnameOf(host)) === true;

/**
 * The origin a request's Host names, when it is a plain `name[:port]` (no user, path or characters
 * that URL parsers read differently: the link must mean the same in every mail client) whose
 * port, if it has one, is the one the request came in on: a Host naming another port could send a
 * mailed link to whatever listens there. Without a port it is a proxy's name (or port 80/443).
 */
export function requestOrigin(protocol: string, host: string, localPort: number | undefined): string | null {
  let u: URL;
  try {
    u = new URL(`${protocol}://${host}`);
  } catch {
    return null;
  }
  // Read back as exactly what was sent: nothing but a name and a port (a user part, path, `\\`
  // or anything a parser rewrites makes them differ).
  if (u.host !== host.toLowerCase()) return null;
  if (u.port !== '' && Number(u.port) !== localPort) return null;
  return u.origin;
}

/**
 * The Host header's name as the URL parser reads it ('' when unparsable, which no list allows),
 * kept per header value: clients send the same one with every request.
 */
const hostnames = new Map<string, string>();
function hostnameOf(host: string): string {
  let name = hostnames.get(host);
  if (name === undefined) {
    try {
      name = new URL(`http://${host}`).hostname.toLowerCase();
    } catch {
      name = '';
    }
    // A bound, not an LRU: a flood of odd Host values only costs parsing again.
    if (hostnames.size >= 256) hostnames.clear();
    hostnames.set(host, name);
  }
  return name;
}
