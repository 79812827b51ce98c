#!/usr/bin/env node
// Runs the suite on both stores side by side (SQLite, and PostgreSQL with BERTH_TEST_STORE=postgres):
// most of each run waits on engines, sshd and child processes, so two runs share the machine's
// cores well and the whole suite takes about as long as its longer half. Each line is prefixed
// with its store; the exit code fails when either run fails; the last line adds both up.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

/** /dev/shm when it is a tmpfs with 8 GiB free (what a run needs at its peak is ~2 GiB), else nothing. */
function ramDir() {
  try {
    const s = fs.statfsSync('/dev/shm');
    return s.type === 0x01021994 && s.bavail * s.bsize >= 8 * 2 ** 30 ? '/dev/shm' : '';
  } catch {
    return '';
  }
}

const runs = [
  { name: 'sqlite', env: {} },
  // One worker for the PostgreSQL half: the SQLite half holds the engine tests, which want the cores.
  { name: 'postgres', env: { BERTH_TEST_STORE: 'postgres' }, args: ['--maxWorkers=1'] },
];
// The tests never leave this machine, and Node 20 loads NODE_EXTRA_CA_CERTS (where a machine sets
// it, a whole CA bundle) at every start of every worker and child: ~60 ms of CPU each, hundreds of times.
const baseEnv = { ...process.env };
delete baseEnv.NODE_EXTRA_CA_CERTS;
// Everything the tests write (engines' storage and volumes, stores, repositories, browser
// profiles) goes to RAM when the machine has a roomy tmpfs: a run wrote ~6 GB and asked the disk
// for ~29,000 flushes (half of them podman's state database, which syncs every write), and on a
// disk with slow flushes those were a good part of the suite's time. The components are as real
// there; nothing here measures a disk. BERTH_TEST_TMPDIR names another place ('' keeps TMPDIR).
const tmpBase = process.env.BERTH_TEST_TMPDIR ?? ramDir();
const tmp = tmpBase ? fs.mkdtempSync(path.join(tmpBase, 'bt-')) : undefined;
if (tmp) {
  // As /tmp is: the tests' other users (postgres for its cluster, the SSH test account) pass through it.
  fs.chmodSync(tmp, 0o1777);
  baseEnv.TMPDIR = tmp;
}
const strip = (s) => s.replace(/\x1b\[[0-9;]*m/g, '');
const totals = { passed: 0, failed: 0, skipped: 0 };

const results = await Promise.all(
  runs.map(
    (r) =>
      new Promise((resolve) => {
        const child = spawn('npx', ['vitest', 'run', ...(r.args ?? [])], { env: { ...baseEnv, ...r.env, FORCE_COLOR: '0' }, stdio: ['ignore', 'pipe', 'pipe'] });
        let summary = '';
        const prefix = (stream, out) => {
          let rest = '';
          stream.on('data', (chunk) => {
            const lines = (rest + chunk.toString()).split('\n');
            rest = lines.pop();
            for (const l of lines) {
              out.write(`[${r.name}] ${l}\n`);
              if (/^\s*Tests\s/.test(strip(l))) summary = strip(l);
            }
          });
          stream.on('end', () => rest && out.write(`[${r.name}] ${rest}\n`));
        };
        prefix(child.stdout, process.stdout);
        prefix(child.stderr, process.stderr);
        child.on('close', (code) => {
          for (const k of Object.keys(totals)) totals[k] += Number(new RegExp(`(\\d+) ${k}`).exec(summary)?.[1] ?? 0);
          resolve({ name: r.name, code, summary });
        });
      }),
  ),
);
if (tmp) {
  try {
    fs.rmSync(tmp, { recursive: true, force: true, maxRetries: 3 });
  } catch (err) {
    // An engine's overlay still mounted there (a teardown cut short) must not fail a run that passed.
    console.error(`could not remove ${tmp}: ${err.message}`);
  }
}
for (const r of results) console.log(`${r.name}: ${r.summary.trim() || 'no summary'} (exit ${r.code})`);
console.log(`${totals.passed} passed, ${totals.failed} failed${totals.skipped ? `, ${totals.skipped} skipped` : ''}`);
process.exit(results.every((r) => r.code === 0) ? 0 : 1);
