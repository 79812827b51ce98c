import { execFileSync, spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../helpers/process.js';
import { walkthroughBlocks } from '../helpers/readme.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/**
 * The README walkthrough's wait for its migration (issue 39), as a reader pastes it after an
 * earlier step failed: it must stop (an error, or the "null" uuid jq prints for a failed answer)
 * and must never `exit` the reader's shell; run as a script (`bash -euo pipefail`, as the
 * walkthrough's own test runs it) it must fail at once instead of waiting. No engines needed: the
 * application is one that does not exist, against a real berth (and against none at all).
 */

/** From the block that starts the migration, up to the end of its wait. */
function waitPart(): string {
  const block = walkthroughBlocks().find((b) => b.includes('MIGRATION=$('));
  if (!block) throw new Error('the walkthrough starts no migration');
  const lines = block.split('\n');
  const from = lines.findIndex((l) => l.startsWith('MIGRATION=$('));
  const to = lines.findIndex((l, i) => i > from && l.startsWith('done'));
  if (from === -1 || to === -1) throw new Error('the walkthrough has no wait loop after its migration');
  return lines.slice(from, to + 1).join('\n');
}

const haveTools = ['bash', 'curl', 'jq'].every((t) => {
  try {
    execFileSync('sh', ['-c', `command -v ${t}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
});

/** bash running `script` with the walkthrough's api() and what an earlier failure left (null uuids); killed after 20 s. */
function run(flags: string[], apiBase: string, token: string): Promise<{ code: number | null; stdout: string; stderr: string; killed: boolean }> {
  const prelude = [`API=${apiBase}/api/v1`, `api() { curl -sS --fail-with-body -H "Authorization: Bearer $TOKEN" -H 'content-type: application/json' "$@"; }`, 'APP=null', 'DEST_B=null'];
  const script = `${prelude.join('\n')}\n${waitPart()}\necho "the shell goes on"\n`;
  return new Promise((resolve) => {
    const proc = spawn('bash', [...flags, '-c', script], { env: { PATH: process.env.PATH, TOKEN: token } });
    let stdout = '';
    let stderr = '';
    let killed = false;
    const timer = setTimeout(() => {
      killed = true;
      proc.kill('SIGKILL');
    }, 20_000);
    proc.stdout.on('data', (d) => (stdout += d));
    proc.stderr.on('data', (d) => (stderr += d));
    proc.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr, killed });
    });
  });
}

describe.skipIf(!haveTools)("the README walkthrough's migration wait", { timeout: 60_000 }, () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
  });
  afterAll(async () => {
    await s?.stop();
  });

  it('pasted after an earlier failure, it stops and leaves the shell open (a real berth: 404s, "null" uuids)', async () => {
    const r = await run([], s.url, s.rootToken);
    expect(r.killed, `it kept waiting:\n${r.stdout}\n${r.stderr}`).toBe(false);
    expect(r.stdout).toContain('the shell goes on');
    expect(r.code).toBe(0);
  });

  it('pasted with no berth to answer (curl fails), it stops too', async () => {
    const r = await run([], `http://127.0.0.1:${await freePort()}`, s.rootToken);
    expect(r.killed, `it kept waiting:\n${r.stdout}\n${r.stderr}`).toBe(false);
    expect(r.stdout).toContain('the shell goes on');
  });

  it('run as a script (-euo pipefail), it fails at once instead of waiting', async () => {
    const r = await run(['-euo', 'pipefail'], s.url, s.rootToken);
    expect(r.killed).toBe(false);
    expect(r.code).not.toBe(0);
    expect(r.stdout).not.toContain('the shell goes on');
  });

  it('has no exit: a pasted exit closes the reader’s shell', () => {
    for (const b of walkthroughBlocks()) expect(b).not.toMatch(/(^|[;&|\s])exit(\s|;|$)/m);
  });
});
