/**
 * With BERTH_TEST_STORE=postgres the suite runs on a real PostgreSQL server, started here once
 * for the whole run by the project's script (Debian's package, a cluster in a temp directory).
 * In CI a server that cannot be had fails the run; elsewhere too, since the store was asked for.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from './helpers/process.js';

const SCRIPT = path.resolve(import.meta.dirname, '../scripts/postgres.sh');

export default async function setup(): Promise<(() => void) | undefined> {
  if (process.env.BERTH_TEST_STORE !== 'postgres') return undefined;
  execFileSync('bash', [SCRIPT, 'install'], { stdio: 'inherit' });
  const dir = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'berth-pg-')), 'cluster');
  const port = await freePort();
  const url = execFileSync('bash', [SCRIPT, 'up', dir, String(port)], { encoding: 'utf8' })
    .trim()
    .split('\n')
    .pop()!;
  process.env.BERTH_TEST_PG_URL = url;
  return () => {
    execFileSync('bash', [SCRIPT, 'down', dir], { stdio: 'inherit' });
    fs.rmSync(path.dirname(dir), { recursive: true, force: true });
  };
}
