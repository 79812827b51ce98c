import ipaddr from 'ipaddr.js';
import { z } from 'zod';
import { PROTOTYPE_KEYS } from './input-guard.js';

/**
 * Field rules shared by every operation. Anything that may end up in an engine call, a path or
 * a command line is held to a narrow character set here, so shell and path tricks (`main;id`,
 * `$(id)`, `../x`) are refused at the door.
 */

/** A path parameter naming a resource by uuid. */
/** A boolean from JSON or a query string ("true"/"false"), as Coolify's query flags. */
export const flag = z.union([z.boolean(), z.enum(['true', 'false']).transform((v) => v === 'true')]);

export const UUID_PATTERN = /^[A-Za-z0-9]{1,64}$/;
export const uuidParam = z.string().regex(UUID_PATTERN, 'Must be a uuid (letters and digits).');

export const name = z
  .string()
  .trim()
  .min(1)
  .max(255)
  .regex(/^[\p{L}\p{N}][\p{L}\p{N} ._@()#,:+-]*$/u, 'Use letters, digits, spaces and . _ @ ( ) # , : + - (starting with a letter or digit).')
  .refine((v) => !v.includes('..'), 'Must not contain "..".');

/** Free text shown to people; control characters other than newlines and tabs are refused. */
export const description = z
  .string()
  .max(1000)
  .regex(/^[^\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]*$/, 'Must not contain control characters.')
  .nullable();

/** Names of volumes, networks and containers: what engines accept, and nothing a shell would read. */
export const engineName = z
  .string()
  .min(1)
  .max(128)
  .regex(/^[a-zA-Z0-9][a-zA-Z0-9_.-]*$/, 'Use letters, digits and . _ - (starting with a letter or digit).');

/** An absolute path inside a container, without `..` segments, never `/` itself. */
export const mountPath = z
  .string()
  .max(4096)
  .regex(/^\/[A-Za-z0-9._/-]*$/, 'Must be an absolute path of letters, digits and . _ - /.')
  .refine((p) => !p.split('/').includes('..'), 'Must not contain ".." segments.')
  .refine((p) => p.replace(/\/+$/, '') !== '', 'Must not be the root directory.');

const REGISTRY = '(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?(?:\\.[a-zA-Z0-9-]+)*(?::[0-9]{1,5})?/)?';
const PATH_COMPONENT = '[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*';
const IMAGE_NAME = new RegExp(`^${REGISTRY}${PATH_COMPONENT}(?:/${PATH_COMPONENT})*$`);
const TAG = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/;
const DIGEST = /^sha256:[a-f0-9]{64}$/;

/** An image reference: repository, optional `:tag` or `@sha256:…`. */
export const imageName = z
  .string()
  .min(1)
  .max(255)
  .refine((v) => splitImage(v) !== null, 'Must be an image reference such as "nginx", "library/nginx:1.27" or "ghcr.io/org/app".');

export const imageTag = z.string().regex(TAG, 'Must be an image tag (letters, digits, _ . -).');

/** Splits `repo[:tag|@digest]` into name and tag (Coolify stores them apart), or null when invalid. */
export function splitImage(ref: string): { name: string; tag: string | null } | null {
  let namepart = ref;
  let tag: string | null = null;
  const at = ref.indexOf('@');
  if (at !== -1) {
    namepart = ref.slice(0, at);
    tag = ref.slice(at + 1);
    if (!DIGEST.test(tag)) return null;
  } else {
    const lastColon = ref.lastIndexOf(':');
    if (lastColon > ref.lastIndexOf('/')) {
      namepart = ref.slice(0, lastColon);
      tag = ref.slice(lastColon + 1);
      if (!TAG.test(tag)) return null;
    }
  }
  return IMAGE_NAME.test(namepart) ? { name: namepart, tag } : null;
}

export const envKey = z
  .string()
  .trim()
  .min(1)
  .max(255)
  .regex(/^[A-Za-z_][A-Za-z0-9_.]*$/, 'Must start with a letter or _ and hold only letters, digits, _ and .')
  // Variables become object keys on their way to a container: no name that reaches a prototype.
  .refine((k) => !PROTOTYPE_KEYS.has(k), 'This name is not allowed.');

export const envValue = z
  .string()
  .max(65_536)
  .regex(/^[^\u0000]*$/, 'Must not contain NUL characters.')
  .nullable();

const port = (v: string) => /^[0-9]{1,5}$/.test(v) && Number(v) >= 1 && Number(v) <= 65535;

export const portsExposes = z
  .string()
  .regex(/^\d+(,\d+)*$/, 'Must be comma-separated port numbers, e.g. "80,443".')
  .refine((v) => v.split(',').every(port), 'Ports are 1 to 65535.');

export const portsMappings = z
  .string()
  .regex(/^\d+:\d+(,\d+:\d+)*$/, 'Must be comma-separated host:container pairs, e.g. "8080:80".')
  .refine((v) => v.split(/[,:]/).every(port), 'Ports are 1 to 65535.');

const HOSTNAME = /^(?=.{1,253}$)([a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)(\.[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)*$/;

/** A server address: an IPv4/IPv6 address or a DNS name. */
export const hostAddress = z
  .string()
  .min(1)
  .max(253)
  .refine((v) => ipaddr.isValid(v) || HOSTNAME.test(v), 'Must be an IP address or a host name.');

/** Comma-separated http(s) URLs; stored as Coolify's `fqdn`. */
export const domains = z
  .string()
  .max(4096)
  .refine(
    (v) =>
      v.split(',').every((d) => {
        try {
          const u = new URL(d.trim());
          return (u.protocol === 'http:' || u.protocol === 'https:') && HOSTNAME.test(u.hostname) && !u.username && !u.password && !/[;$`'"\\\s]/.test(d.trim());
        } catch {
          return false;
        }
      }),
    'Must be comma-separated http(s) URLs, e.g. "https://app.example.com".',
  );

export const sshUser = z
  .string()
  .min(1)
  .max(64)
  .regex(/^[a-zA-Z0-9._-]+$/, 'Use letters, digits and . _ -.');

const socketPath = (p: string) => /^\/[A-Za-z0-9._/-]+$/.test(p) && !p.split('/').includes('..');
const isHost = (h: string) => ipaddr.isValid(h.replace(/^\[|\]$/g, '')) || HOSTNAME.test(h);

/** Where berth reaches a server's Docker Engine API. */
export const engineEndpoint = z
  .string()
  .max(1024)
  .refine((v) => {
    if (v.startsWith('unix://')) return socketPath(v.slice('unix://'.length));
    const ssh = /^ssh:\/\/(?:([a-zA-Z0-9._-]{1,64})@)?([^:/@]+|\[[0-9a-fA-F:.]+\])(?::([0-9]{1,5}))?(\/[^?#]*)?$/.exec(v);
    if (ssh) return isHost(ssh[2]!) && (ssh[3] === undefined || port(ssh[3])) && (ssh[4] === undefined || socketPath(ssh[4]));
    const m = /^tcp:\/\/([^:/]+|\[[0-9a-fA-F:.]+\]):([0-9]{1,5})$/.exec(v);
    return m !== null && isHost(m[1]!) && port(m[2]!);
  }, 'Must be unix:///absolute/path.sock, tcp://host:port or ssh://user@host:port/path/to/docker.sock.');

/** An SSH host key fingerprint as `ssh-keygen -lf` prints it. */
export const hostKeyFingerprint = z.string().regex(/^SHA256:[A-Za-z0-9+/]{43}$/, 'Must be a SHA256 fingerprint as ssh-keygen -lf prints it (SHA256: and 43 base64 characters).');

const pem = (label: string) =>
  z
    .string()
    .max(20_000)
    .regex(/^-----BEGIN [A-Z ]+-----[\s\S]+-----END [A-Z ]+-----\s*$/, `Must be a PEM ${label}.`);

export const engineTls = z.strictObject({ ca: pem('certificate'), cert: pem('certificate'), key: pem('private key') });

export const privateKeyPem = z
  .string()
  .max(20_000)
  .regex(/^-----BEGIN ([A-Z]+ )?PRIVATE KEY-----[\s\S]+-----END ([A-Z]+ )?PRIVATE KEY-----\s*$/, 'Must be a PEM private key.');

export const tags = z
  .array(
    z
      .string()
      .min(2)
      .max(64)
      .regex(/^[A-Za-z0-9._-]+$/, 'Tags use letters, digits and . _ -.'),
  )
  .max(50);

/** An http(s) URL (a proxy's ACME directory, a log drain's base URI); where it may point is checked by the outbound guard. */
export const httpUrl = z
  .string()
  .max(2048)
  .refine((v) => {
    try {
      return ['http:', 'https:'].includes(new URL(v).protocol);
    } catch {
      return false;
    }
  }, 'Must be an http(s) URL.');
