/**
 * With BERTH_TEST_STORE=postgres the suite runs on a real PostgreSQL server, started here once
 * for the whole run by the project's script (Debian's package, a cluster in a temp directory).
 * In CI a server that cannot be had fails the run; elsewhere too, since the store was asked for.
 * It also makes the migrated template store (a database there, a berth.sqlite file otherwise) that
 * test/helpers/store.ts copies for a test server's new data directory.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DATABASE_FILE, openStore } from '../src/store/db.js';
import { freePort } from './helpers/process.js';
import { PG_TEMPLATE, SQLITE_TEMPLATE_ENV } from './helpers/store.js';

const SCRIPT = path.resolve(import.meta.dirname, '../scripts/postgres.sh');

export default async function setup(): Promise<() => void> {
  if (process.env.BERTH_TEST_STORE !== 'postgres') return sqliteTemplate();
  execFileSync('bash', [SCRIPT, 'install'], { stdio: 'inherit' });
  const dir = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'berth-pg-')), 'cluster');
  const port = await freePort();
  const url = execFileSync('bash', [SCRIPT, 'up', dir, String(port)], { encoding: 'utf8' })
    .trim()
    .split('\n')
    .pop()!;
  process.env.BERTH_TEST_PG_URL = url;
  // Every test database is a copy of this one, migrated here once (the migrations run for real on
  // PostgreSQL here, and again from nothing where a test asks for an empty store). Nothing stays
  // connected to it: PostgreSQL copies a template only while no session uses it.
  execFileSync('psql', [url, '-qAt', '-v', 'ON_ERROR_STOP=1', '-c', `CREATE DATABASE ${PG_TEMPLATE}`], { stdio: 'inherit' });
  const template = await openStore(dir, url.replace(/\/[^/?]*(\?.*)?$/, `/${PG_TEMPLATE}`));
  await template.destroy();
  return () => {
    execFileSync('bash', [SCRIPT, 'down', dir], { stdio: 'inherit' });
    fs.rmSync(path.dirname(dir), { recursive: true, force: true });
  };
}

/** A migrated, empty berth.sqlite, made once per run (migrating one costs about half a second of disk writes). */
async function sqliteTemplate(): Promise<() => void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-template-'));
  const db = await openStore(dir);
  await db.destroy();
  process.env[SQLITE_TEMPLATE_ENV] = path.join(dir, DATABASE_FILE);
  return () => fs.rmSync(dir, { recursive: true, force: true });
}
