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
    return pino({ level: opts.level, redact }, pretty({ destination: fd, colorize: true, sync: true }));
  }
  return pino({ level: opts.level, redact }, pino.destination({ fd, sync: false }));
}
