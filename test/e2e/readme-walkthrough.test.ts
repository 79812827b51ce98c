/**
 * The README's walkthrough, run as written: the shell blocks between its walkthrough markers are
 * extracted from README.md (never copied here) and run by bash against a real `berth serve` and
 * the two test engines, with what the README's set-up steps give a reader (the root token, the
 * engines' sockets, the helper image). If the README drifts from what works, this fails.
 */
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enginesAvailable, useEngines } from '../helpers/engines.js';
import { CLI } from '../helpers/mcp.js';
import { spawnServe, type ServeProcess } from '../helpers/process.js';
import { tempDir } from '../helpers/server.js';
import { storeEnv } from '../helpers/store.js';
import { README, walkthroughScript } from '../helpers/readme.js';
import { containersLabelled, volumesLabelled } from './support.js';

const haveTools = ['bash', 'curl', 'jq'].every((t) => {
  try {
    execFileSync('sh', ['-c', `command -v ${t}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
});
if (!haveTools && process.env.CI) throw new Error('the README walkthrough needs bash, curl and jq in CI (.ci/run installs them)');

describe.skipIf(!enginesAvailable || !haveTools)("the README's walkthrough", () => {
  const engines = useEngines();
  let serve: ServeProcess;
  let token: string;
  let dataDir: string;

  beforeAll(async () => {
    dataDir = tempDir('berth-readme-');
    const init = execFileSync(process.execPath, [CLI, 'init', '--json', '--data', dataDir], {
      encoding: 'utf8',
      env: { PATH: process.env.PATH, LOG_LEVEL: 'silent', ...storeEnv(dataDir) },
    });
    token = JSON.parse(init).token;
    // As the README says: the helper image set before `berth serve` starts.
    serve = await spawnServe(dataDir, { BERTH_HELPER_IMAGE: engines.image });
  }, 60_000);

  afterAll(async () => {
    await serve?.stop();
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('deploys, logs, migrates with the data, starts on the other engine, stops and deletes', async () => {
    const script = walkthroughScript(fs.readFileSync(README, 'utf8'));
    const cwd = tempDir('berth-readme-cwd-');
    const { code, stdout, stderr } = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      const proc = spawn('bash', ['-euo', 'pipefail', '-c', script], {
        cwd,
        env: {
          PATH: process.env.PATH,
          TOKEN: token,
          BERTH_URL: serve.url,
          ENGINE_A_SOCKET: engines.socketA,
          ENGINE_B_SOCKET: engines.socketB,
        },
      });
      let out = '';
      let err = '';
      proc.stdout.on('data', (d) => (out += d));
      proc.stderr.on('data', (d) => (err += d));
      proc.on('exit', (c) => resolve({ code: c, stdout: out, stderr: err }));
    });
    fs.rmSync(cwd, { recursive: true, force: true });
    expect(code, `walkthrough failed:\n${stdout}\n${stderr}`).toBe(0);

    const lines = stdout.trim().split('\n');
    // Both engines validated, the app ran on a and moved with its volume.
    expect(lines.filter((l) => l.startsWith('Docker-compatible engine'))).toHaveLength(2);
    expect(stdout).toContain('{"deployment_status":"finished","status":"running:unknown"}');
    expect(stdout).toMatch(/\{"status":"finished","downtime_ms":\d+\}/);
    // On engine b the start command counted the lines written on engine a: the data moved.
    const counted = /(\d+) \/data\/log/.exec(stdout);
    expect(counted, stdout).not.toBeNull();
    expect(Number(counted![1])).toBeGreaterThan(0);
    // Stopped as the engine reports it, then deleted with its volumes.
    expect(lines).toContain('exited');
    const removed = JSON.parse(lines.at(-1)!) as string[];
    expect(removed.some((r) => r.startsWith('removed container'))).toBe(true);

    // The engines agree: nothing of the application is left on either.
    const appUuid = /removed container (\S+)/.exec(removed.join('\n'))![1]!;
    for (const e of ['a', 'b'] as const) {
      expect(containersLabelled(engines, e, `berth.resource=${appUuid}`)).toEqual([]);
      expect(volumesLabelled(engines, e, `berth.resource=${appUuid}`)).toEqual([]);
    }
  }, 240_000);
});
