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
    return pino({
      level: opts.level,
      redact,
      transport: { target: 'pino-pretty', options: { destination: fd, colorize: true } },
    });
  }
  return pino({ level: opts.level, redact }, pino.destination({ fd, sync: false }));
}
