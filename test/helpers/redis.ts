/**
 * A real Redis on loopback for tests (redis-server from Debian's package, installed by .ci/run):
 * no persistence, its own port, stopped by the returned function.
 */
import { spawn, spawnSync } from 'node:child_process';
import { Redis } from 'ioredis';
import { freePort } from './process.js';

export const hasRedis = spawnSync('redis-server', ['--version']).status === 0;
if (!hasRedis && process.env.CI) throw new Error('redis-server is required in CI (.ci/run installs it)');

export async function startRedis(): Promise<{ url: string; stop: () => void; signal: (sig: NodeJS.Signals) => void }> {
  const port = await freePort();
  const proc = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  const url = `redis://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    const probe = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    probe.on('error', () => undefined);
    try {
      await probe.connect();
      await probe.ping();
      await probe.quit();
      break;
    } catch (err) {
      probe.disconnect();
      if (i > 100) {
        proc.kill();
        throw err;
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  return { url, stop: () => proc.kill(), signal: (sig) => proc.kill(sig) };
}
