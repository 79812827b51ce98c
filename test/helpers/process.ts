import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import { CLI } from './mcp.js';
import { storeEnv } from './store.js';

export interface ServeProcess {
  url: string;
  proc: ChildProcess;
  output: () => string;
  stop(): Promise<number | null>;
}

/**
 * Spawns `berth serve` on an ephemeral port and waits until it says where it listens. 60 s: a
 * restart says so only after its jobs' sweep, which rolls back a migration cut off by a crash
 * (engine calls); on a loaded 2-core machine that alone took over 15 s.
 */
export function spawnServe(dataDir: string, env: Record<string, string> = {}, startTimeoutMs = 60_000): Promise<ServeProcess> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, [CLI, 'serve', '--port', '0', '--data', dataDir], {
      env: { PATH: process.env.PATH, LOG_LEVEL: 'warn', ...storeEnv(dataDir), ...env },
    });
    let out = '';
    const timer = setTimeout(() => reject(new Error(`serve did not start:\n${out}`)), startTimeoutMs);
    const onData = (d: Buffer) => {
      out += d;
      const m = /berth: listening on (http:\/\/\S+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve({
          url: m[1]!,
          proc,
          output: () => out,
          stop: () =>
            new Promise((res) => {
              if (proc.exitCode !== null) return res(proc.exitCode);
              proc.once('exit', (code) => res(code));
              proc.kill('SIGTERM');
            }),
        });
      }
    };
    proc.stdout.on('data', onData);
    proc.stderr.on('data', (d: Buffer) => (out += d));
    proc.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`serve exited with ${code}:\n${out}`));
    });
  });
}

/** A free loopback TCP port (for servers that cannot pick their own, like redis-server). */
export function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}
