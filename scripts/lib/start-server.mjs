// Spawns a Node server and resolves once a stdout line matches `ready` (its first group is the
// URL). Shared by the benchmarks and the conformance script; the tests use test/helpers/process.ts.
import { spawn } from 'node:child_process';

/**
 * @param {{ args: string[], env?: NodeJS.ProcessEnv, cwd?: string, label?: string,
 *           ready?: RegExp, timeoutMs?: number }} opts
 * @returns {Promise<{ url: string, pid: number, proc: import('node:child_process').ChildProcess,
 *           output: () => string, stop: () => Promise<void> }>}
 */
export function startServer({ args, env = process.env, cwd, label = 'server', ready = /listening on (http:\/\/\S+)/, timeoutMs = 20_000 }) {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let started = false;
    const timer = setTimeout(() => {
      proc.kill('SIGKILL');
      reject(new Error(`${label} did not start within ${timeoutMs} ms:\n${out}`));
    }, timeoutMs);
    proc.stderr.on('data', (d) => (out += d));
    proc.stdout.on('data', (d) => {
      out += d;
      const m = started ? null : ready.exec(out);
      if (!m) return;
      started = true;
      clearTimeout(timer);
      resolve({
        url: m[1],
        pid: proc.pid,
        proc,
        output: () => out,
        stop: () =>
          new Promise((done) => {
            if (proc.exitCode !== null || proc.signalCode !== null) return done();
            const kill = setTimeout(() => proc.kill('SIGKILL'), 10_000);
            proc.once('exit', () => {
              clearTimeout(kill);
              done();
            });
            proc.kill('SIGTERM');
          }),
      });
    });
    proc.once('exit', (code) => {
      clearTimeout(timer);
      if (!started) reject(new Error(`${label} exited (${code}) before listening:\n${out}`));
    });
  });
}
