import { createRequire } from 'node:module';
import pino, { type Logger } from 'pino';

/** Paths pino censors wherever they appear in a log line: credentials never reach a log. */
export const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'headers.authorization',
  'authorization',
  'token',
  'secret',
  'password',
  '*.token',
  '*.secret',
  '*.password',
  '*.token_hash',
];

/**
 * Query parameters whose values may be logged: paging, flags and names of things, nothing a
 * person types as data. Every other value is replaced, whatever its name (a write's stray
 * `?value=` is as secret as `?password=`), so a new parameter is redacted until listed here.
 */
const HARMLESS_PARAM = new Set([
  'page',
  'per_page',
  'skip',
  'take',
  'lines',
  'full',
  'show_timestamps',
  'uuid',
  'tag',
  'force',
  'latest',
  'instant_deploy',
  'docker_cleanup',
  'delete_configurations',
  'delete_volumes',
  'delete_connected_networks',
  'sub_service_name',
  'status',
  'result',
  'operation',
  'toolsets',
  'revoked',
]);

/**
 * A URL as it may be logged: the password of its user part and the value of every query
 * parameter not known to be harmless are replaced. Works on a request's path-and-query as on a full URL;
 * anything that is not a string is returned as is.
 */
export function redactUrl(url: unknown): unknown {
  if (typeof url !== 'string') return url;
  let out = url.replace(/^([a-z][a-z0-9+.-]*:\/\/)([^/?#@]*):([^/?#@]*)@/i, '$1$2:[redacted]@');
  const q = out.indexOf('?');
  if (q < 0) return out;
  const hash = out.indexOf('#', q);
  const end = hash < 0 ? out.length : hash;
  const query = out
    .slice(q + 1, end)
    .split('&')
    .map((pair) => {
      const eq = pair.indexOf('=');
      const name = eq < 0 ? pair : pair.slice(0, eq);
      let decoded = name;
      try {
        decoded = decodeURIComponent(name.replace(/\+/g, ' '));
      } catch {
        /* a malformed escape: judge the raw name */
      }
      if (HARMLESS_PARAM.has(decoded)) return pair;
      // A bare key (`?ghp_…`) may itself be the secret.
      return eq >= 0 ? `${name}=[redacted]` : pair === '' ? pair : '[redacted]';
    })
    .join('&');
  out = `${out.slice(0, q + 1)}${query}${out.slice(end)}`;
  return out;
}

/** Log fields that hold URLs: written through redactUrl wherever a line carries them. */
const serializers = { url: redactUrl, webhook: redactUrl, endpoint: redactUrl, repository: redactUrl };

export interface LoggerOptions {
  level: string;
  /** stdio MCP needs stdout for JSON-RPC alone, so logs go to stderr there. */
  destination: 'stdout' | 'stderr';
}

export function createLogger(opts: LoggerOptions): Logger {
  const fd = opts.destination === 'stderr' ? 2 : 1;
  const stream = fd === 2 ? process.stderr : process.stdout;
  const redact = { paths: REDACT_PATHS, censor: '[redacted]' };
  if (stream.isTTY) {
    // A person at a terminal: pretty lines written in-process (a transport's worker thread would
    // need pino's files beside the bundle), loaded only here so no other start pays for it.
    const pretty = createRequire(import.meta.url)('pino-pretty') as (o: object) => NodeJS.WritableStream;
    return pino({ level: opts.level, redact, serializers }, pretty({ destination: fd, colorize: true, sync: true }));
  }
  return pino({ level: opts.level, redact, serializers }, pino.destination({ fd, sync: false }));
}
