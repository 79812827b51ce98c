import ipaddr from 'ipaddr.js';

/**
 * The one parser that decides where an outbound URL goes (scheme, host, port), for the door and
 * for the code that connects. WHATWG URL, curl and git each parse a URL their own way
 * (`http://a.test\@127.0.0.1/` is host a.test to one and 127.0.0.1 to the others), so a URL is
 * accepted only when it is written so plainly that they cannot disagree: printable ASCII (a
 * non-ASCII host name is given in punycode), no backslash, no credentials or `@` in the host part,
 * no percent-encoding there, a host of letters, digits, dots, hyphens (or a bracketed IPv6
 * address), and WHATWG URL must read the same scheme, host and port from it. A repository URL
 * (given to git) is narrower still: a plain path, no `@`, query or fragment.
 */
export type TargetScheme = 'http' | 'https' | 'git';

export interface Target {
  scheme: TargetScheme;
  /** Lower case, IPv6 without brackets. */
  host: string;
  port: number;
  /** The path (with any query), as given. */
  rest: string;
  /** The URL as given (it reads the same to every parser). */
  url: string;
}

const DEFAULT_PORT: Record<TargetScheme, number> = { http: 80, https: 443, git: 9418 };

/** The target, or why the URL is refused (a sentence for the 422). */
export function parseTarget(text: string, schemes: readonly TargetScheme[], opts: { repository?: boolean } = {}): Target | string {
  const allowed = `Must use the ${schemes.map((s) => `${s}://`).join(' or ')} scheme.`;
  if (!/^[\x21-\x7e]+$/.test(text)) return 'Must be plain ASCII without spaces or control characters (give a non-ASCII host name in punycode, xn--…).';
  if (text.includes('\\')) return 'Must not contain a backslash.';
  const m = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/([^/?#]*)(.*)$/.exec(text);
  if (!m) return 'Must be a valid URL (scheme://host/…).';
  const scheme = m[1]!.toLowerCase() as TargetScheme;
  const authority = m[2]!;
  const rest = m[3]!;
  if (!schemes.includes(scheme)) return allowed;
  if (authority.includes('@')) return 'Must not contain credentials or "@" in the host part.';
  if (authority.includes('%')) return 'Must not contain percent-encoded characters in the host part.';
  const hp = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*\.?)(?::(\d{1,5}))?$/.exec(authority);
  if (!hp) return 'Must name a host (letters, digits, dots and hyphens, or a bracketed IPv6 address) and optionally a port.';
  const bracketed = hp[1]!.startsWith('[');
  const host = bracketed ? hp[1]!.slice(1, -1).toLowerCase() : hp[1]!.toLowerCase();
  if (bracketed && !ipaddr.IPv6.isValid(host)) return 'Must name a host: the bracketed part is not an IPv6 address.';
  // A host ending in a number is an IPv4 address to resolvers (127.1, 0x7f.1, 2130706433): only
  // the four-decimal form, which reads the same everywhere.
  const last = host.replace(/\.$/, '').split('.').pop()!;
  if (!bracketed && /^(\d+|0x[0-9a-f]*)$/.test(last) && !/^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/.test(host)) {
    return 'Must be written plainly: write an IPv4 address as four decimal numbers (no leading zeros).';
  }
  const port = hp[2] === undefined ? DEFAULT_PORT[scheme] : Number(hp[2]);
  if (!Number.isInteger(port) || port < 1 || port > 65535) return 'Must use a port from 1 to 65535.';
  if (opts.repository && !/^(\/[A-Za-z0-9._~+-]*)*$/.test(rest)) return 'Must be a plain repository path: letters, digits and . _ ~ + - / only (no "@", query or fragment).';
  // The second opinion: WHATWG URL (what undici uses) must read the same target.
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return 'Must be a valid URL.';
  }
  const whatwgHost = url.hostname.replace(/^\[|\]$/g, '');
  const sameHost = bracketed ? ipaddr.IPv6.isValid(whatwgHost) && ipaddr.parse(whatwgHost).toNormalizedString() === ipaddr.parse(host).toNormalizedString() : whatwgHost.toLowerCase() === host;
  const whatwgPort = url.port === '' ? DEFAULT_PORT[scheme] : Number(url.port);
  if (url.protocol !== `${scheme}:` || !sameHost || whatwgPort !== port || url.username || url.password) {
    return 'Must be written plainly: URL parsers read a different host or port from it.';
  }
  return { scheme, host, port, rest, url: text };
}

/** The host as written in a URL's authority (IPv6 in brackets). */
export const urlHost = (host: string) => (host.includes(':') ? `[${host}]` : host);
