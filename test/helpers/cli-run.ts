import { spawn } from 'node:child_process';
import { CLI } from './mcp.js';

export interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * The environment minus everything berth reads, so the machine's settings cannot leak in; also
 * minus NODE_EXTRA_CA_CERTS, which Node 20 loads at every start (a whole CA bundle here: ~60 ms of
 * CPU per process, and these tests run hundreds; none of them makes a TLS connection).
 */
export function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (/^(BERTH_|HOST$|PORT$|LOG_LEVEL$|TRUST_PROXY$|SMTP_|FEEDBACK_|REDIS_|API_RATE|MCP_|DATABASE_URL$|NODE_EXTRA_CA_CERTS$)/.test(k)) continue;
    env[k] = v;
  }
  return { ...env, ...extra };
}

/** The built `berth` command (dist/bundle/cli.js) as a child process in `cwd`, with exactly `env` added to a clean environment. */
export function runBerth(args: string[], opts: { cwd: string; env?: Record<string, string> }): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { cwd: opts.cwd, env: cleanEnv(opts.env), stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}
