import ipaddr from 'ipaddr.js';

/**
 * The one reader of SSH repository addresses (deploy keys), for the door and for the clone:
 * `user@host:path` (scp form, as GitHub shows it) or `ssh://user@host[:port]/path`. Accepted only
 * when written so plainly that git, ssh and berth cannot read it differently or as an option: a
 * user of letters, digits, `. _ -` not starting with `-`, a host name of letters, digits, dots and
 * hyphens (or an IPv4 address, or a bracketed IPv6 address in the ssh:// form), and a path of
 * letters, digits and `. _ ~ + - /` with no part starting with `-` and no `..` part.
 */
export interface SshRepository {
  form: 'scp' | 'url';
  user: string;
  /** Lower case, IPv6 without brackets. */
  host: string;
  port: number;
  /** As given: relative to the account's home in the scp form, absolute in the ssh:// form. */
  path: string;
}

const USER = /^[A-Za-z0-9._][A-Za-z0-9._-]{0,63}$/;
const NAME = /^[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*$/;
const PATH = /^[A-Za-z0-9._~+/-]{1,1024}$/;

function checkPath(path: string): string | null {
  if (!PATH.test(path)) return 'The repository path may hold letters, digits and . _ ~ + - / only.';
  if (path.split('/').some((seg) => seg.startsWith('-'))) return 'The repository path (and no part of it) must not start with "-".';
  if (path.split('/').includes('..')) return 'The repository path must not contain "..".';
  return null;
}

function checkHost(host: string): string | null {
  if (ipaddr.IPv4.isValidFourPartDecimal(host)) return null;
  if (!NAME.test(host)) return 'The host must be a name of letters, digits, dots and hyphens, or an IP address.';
  // A name ending in a number is an address to resolvers (127.1): only four decimal parts.
  if (/^\d+$/.test(host.split('.').pop()!)) return 'Write an IPv4 address as four decimal numbers.';
  return null;
}

/** The repository, or why it is refused (a sentence for the 422). */
export function parseSshRepository(text: string): SshRepository | string {
  if (!/^[\x21-\x7e]{1,2048}$/.test(text)) return 'Must be plain ASCII without spaces or control characters.';
  let m = /^ssh:\/\/([^@/]+)@(\[[0-9A-Fa-f:.]+\]|[^:/[\]]+)(?::(\d{1,5}))?(\/.*)$/.exec(text);
  if (m) {
    const [, user, rawHost, rawPort, path] = m as unknown as [string, string, string, string | undefined, string];
    if (!USER.test(user)) return 'The user must be letters, digits, . _ - (not starting with "-").';
    const bracketed = rawHost.startsWith('[');
    const host = (bracketed ? rawHost.slice(1, -1) : rawHost).toLowerCase();
    if (bracketed ? !ipaddr.IPv6.isValid(host) : checkHost(host)) return bracketed ? 'The bracketed host is not an IPv6 address.' : checkHost(host)!;
    const port = rawPort === undefined ? 22 : Number(rawPort);
    if (port < 1 || port > 65535) return 'The port must be from 1 to 65535.';
    const why = checkPath(path);
    return why ?? { form: 'url', user, host, port, path };
  }
  m = /^([^@:/]+)@([^:/[\]]+):(.+)$/.exec(text);
  if (m) {
    const [, user, rawHost, path] = m as unknown as [string, string, string, string];
    if (!USER.test(user)) return 'The user must be letters, digits, . _ - (not starting with "-").';
    const host = rawHost.toLowerCase();
    const why = checkHost(host) ?? checkPath(path);
    return why ?? { form: 'scp', user, host, port: 22, path };
  }
  return 'Must be an SSH repository address: user@host:path (as git@github.com:owner/repo.git) or ssh://user@host[:port]/path.';
}

/** The address git is given: the checked address in place of the name, the path as given. */
export function sshRepositoryAt(r: SshRepository, address: string): string {
  const host = address.includes(':') ? `[${address}]` : address;
  return r.form === 'url' ? `ssh://${r.user}@${host}:${r.port}${r.path}` : `${r.user}@${host}:${r.path}`;
}
