import { randomBytes, randomInt } from 'node:crypto';
import type { ComposeContainer } from './compose.js';

/**
 * Coolify's magic variables of a compose file (SERVICE_PASSWORD_DB, SERVICE_URL_APP_3000, ...) and
 * compose's `${VAR}` interpolation, for services made from a one-click template. The names and
 * what each generates follow Coolify 4 (bootstrap/helpers/shared.php); the values are berth's.
 */

const ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
/** No quote, `$`, backslash or space: a generated value survives a shell entrypoint unquoted. */
const SYMBOLS = '!#%*+,-.:=?@^_~';

function randomString(length: number, alphabet = ALNUM): string {
  let out = '';
  for (let i = 0; i < length; i++) out += alphabet[randomInt(alphabet.length)];
  return out;
}

const hex = (chars: number) => randomBytes(chars).toString('hex');
const realBase64 = (chars: number) => Buffer.from(randomString(chars)).toString('base64');

/** What each generating command makes (Coolify's BASE64_* are random letters and digits, REALBASE64_* real base64). */
const GENERATORS: Record<string, () => string> = {
  PASSWORD: () => randomString(32),
  PASSWORD_64: () => randomString(64),
  PASSWORDWITHSYMBOLS: () => randomString(32, ALNUM + SYMBOLS),
  PASSWORDWITHSYMBOLS_64: () => randomString(64, ALNUM + SYMBOLS),
  USER: () => randomString(16),
  BASE64: () => randomString(32),
  BASE64_32: () => randomString(32),
  BASE64_64: () => randomString(64),
  BASE64_128: () => randomString(128),
  REALBASE64: () => realBase64(32),
  REALBASE64_32: () => realBase64(32),
  REALBASE64_64: () => realBase64(64),
  REALBASE64_128: () => realBase64(128),
  HEX_32: () => hex(32),
  HEX_64: () => hex(64),
  HEX_128: () => hex(128),
};
/** Longest first, so SERVICE_PASSWORD_64_X is PASSWORD_64 for X, not PASSWORD for 64_X. */
const COMMANDS = [...Object.keys(GENERATORS), 'FQDN', 'URL'].sort((a, b) => b.length - a.length);

export type MagicVariable = { key: string; command: string; name: string; port: number | null };

/** A SERVICE_* name as Coolify reads it, or null when it is not a magic variable berth knows. */
export function magicVariable(key: string): MagicVariable | null {
  if (!key.startsWith('SERVICE_')) return null;
  const rest = key.slice('SERVICE_'.length);
  for (const command of COMMANDS) {
    if (!rest.startsWith(`${command}_`) || rest.length === command.length + 1) continue;
    let name = rest.slice(command.length + 1);
    let port: number | null = null;
    const m = /^(.+)_(\d{1,5})$/.exec(name);
    if ((command === 'FQDN' || command === 'URL') && m) {
      name = m[1]!;
      port = Number(m[2]);
    }
    return { key, command, name, port };
  }
  return null;
}

/** Every SERVICE_* name a compose file mentions (in values, or as bare environment keys). */
export function magicVariablesIn(yaml: string): MagicVariable[] {
  const seen = new Map<string, MagicVariable>();
  for (const m of yaml.matchAll(/\bSERVICE_[A-Za-z0-9_]+/g)) {
    const v = magicVariable(m[0]);
    if (v && !seen.has(v.key)) seen.set(v.key, v);
  }
  return [...seen.values()];
}

/**
 * The values of a compose file's magic variables for one new service: fresh secrets each time,
 * and for SERVICE_URL_/SERVICE_FQDN_ the address the container has on the service's network
 * (berth runs no proxy): `http://<service uuid>-<compose service>[:port]` and the host alone.
 * `containers` maps a variable's NAME to the compose service it belongs to.
 */
export function generateMagicValues(vars: MagicVariable[], serviceUuid: string, containerOf: (name: string) => string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const v of vars) {
    if (v.command === 'FQDN' || v.command === 'URL') {
      const host = `${serviceUuid}-${containerOf(v.name)}`;
      out[`SERVICE_FQDN_${v.name}`] = host;
      out[`SERVICE_URL_${v.name}`] = `http://${host}`;
      if (v.port !== null) {
        out[`SERVICE_FQDN_${v.name}_${v.port}`] = `${host}:${v.port}`;
        out[`SERVICE_URL_${v.name}_${v.port}`] = `http://${host}:${v.port}`;
      }
    } else out[v.key] = GENERATORS[v.command]!();
  }
  return out;
}

/**
 * The compose service a SERVICE_URL_/SERVICE_FQDN_ NAME belongs to, as Coolify binds it: the
 * service whose environment declares it, else the one whose name matches, else the first.
 */
export function magicContainerOf(containers: { name: string; environment: Record<string, string> }[]) {
  const norm = (s: string) => s.toUpperCase().replace(/[^A-Z0-9]/g, '');
  return (name: string): string => {
    const declared = containers.find((k) =>
      Object.keys(k.environment).some((key) => {
        const v = magicVariable(key);
        return v !== null && v.name === name && (v.command === 'URL' || v.command === 'FQDN');
      }),
    );
    return (declared ?? containers.find((k) => norm(k.name) === norm(name)) ?? containers[0])!.name;
  };
}

/**
 * Compose's interpolation of one value: `$$` is a literal `$`; `${VAR}`, `$VAR`, `${VAR:-default}`
 * (default when unset or empty), `${VAR-default}` (when unset), `${VAR:?err}`/`${VAR?err}` (the
 * value, or empty) read `vars`; an unset VAR is empty, as compose makes it (with a warning).
 * Names that were not set are added to `missing`.
 */
export function interpolate(value: string, vars: Record<string, string>, missing?: Set<string>): string {
  return value.replace(/\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?+])((?:[^{}]|\{[^{}]*\})*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)/g, (whole, braced?: string, op?: string, arg?: string, bare?: string) => {
    if (whole === '$$') return '$';
    const name = (braced ?? bare)!;
    const set = Object.hasOwn(vars, name);
    const v = set ? vars[name]! : '';
    switch (op) {
      case ':-':
        return v === '' ? interpolate(arg ?? '', vars, missing) : v;
      case '-':
        return set ? v : interpolate(arg ?? '', vars, missing);
      case ':+':
        return v === '' ? '' : interpolate(arg ?? '', vars, missing);
      case '+':
        return set ? interpolate(arg ?? '', vars, missing) : '';
      default:
        if (!set) missing?.add(name);
        return v;
    }
  });
}

/** A compose container with `${VAR}` resolved where compose resolves it for berth's keys: environment values, command, entrypoint, health check. */
export function interpolateContainer(k: ComposeContainer, vars: Record<string, string>, missing?: Set<string>): ComposeContainer {
  const one = (v: string) => interpolate(v, vars, missing);
  return {
    ...k,
    environment: Object.fromEntries(Object.entries(k.environment).map(([key, v]) => [key, one(v)])),
    command: k.command?.map(one) ?? null,
    entrypoint: k.entrypoint?.map(one) ?? null,
    ...(k.healthcheck ? { healthcheck: { ...k.healthcheck, test: k.healthcheck.test.map(one) } } : {}),
  };
}

/**
 * A copy's SERVICE_URL_/SERVICE_FQDN_ value: one berth generated names the source's containers
 * (`<uuid>-<service>`), which the copy must not reach; it names the copy's. Any other value (a
 * person's own URL, a secret) is kept as it is.
 */
export function copiedMagicValue(key: string, value: string | null, fromUuid: string, toUuid: string): string | null {
  const v = magicVariable(key);
  if (value === null || !v || (v.command !== 'URL' && v.command !== 'FQDN')) return value;
  const m = /^(http:\/\/)?([a-z0-9]{24})-/.exec(value);
  return m && m[2] === fromUuid ? `${m[1] ?? ''}${toUuid}-${value.slice(m[0].length)}` : value;
}
