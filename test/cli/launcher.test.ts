import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CLI } from '../helpers/mcp.js';

/**
 * The shipped launcher (dist/bundle/cli.js) runs the CommonJS bundle through the V8 code cache
 * that the build's training run wrote, and never trusts a cache made from other source.
 */
const BUNDLE_DIR = path.dirname(CLI);
const copies: string[] = [];
afterAll(() => {
  for (const d of copies) fs.rmSync(d, { recursive: true, force: true });
});

function run(cli: string, args: string[]) {
  const r = spawnSync(process.execPath, [cli, ...args], { env: { PATH: process.env.PATH, BERTH_CODE_CACHE_REPORT: '1' }, encoding: 'utf8' });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** A copy of the shipped files beside the original (so the externals still resolve from node_modules). */
function copyOfBundle(): string {
  const dir = fs.mkdtempSync(path.join(path.dirname(BUNDLE_DIR), 'bundle-copy-'));
  copies.push(dir);
  for (const f of ['cli.js', 'berth.cjs', 'berth.cjs.cache']) fs.cpSync(path.join(BUNDLE_DIR, f), path.join(dir, f), { preserveTimestamps: true });
  return dir;
}

describe('the shipped launcher', () => {
  it('runs the bundle through the cache the build made', () => {
    const r = run(CLI, ['--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^Usage: berth/);
    expect(r.stderr).toBe('berth: code cache used\n');
  });

  it('a copy that keeps its files as they were still uses the cache', () => {
    const r = run(path.join(copyOfBundle(), 'cli.js'), ['--help']);
    expect(r.stderr).toBe('berth: code cache used\n');
    expect(r.code).toBe(0);
  });

  it('ignores a cache made from other source, even of the same length, and still works', () => {
    const dir = copyOfBundle();
    const bundle = path.join(dir, 'berth.cjs');
    const code = fs.readFileSync(bundle, 'utf8');
    // Same length, different text: V8's own check (the length) would accept the old cache.
    expect(code).toContain('Team-scoped infrastructure management');
    fs.writeFileSync(bundle, code.replaceAll('Team-scoped infrastructure management', 'team-scoped infrastructure management'));
    const r = run(path.join(dir, 'cli.js'), ['--help']);
    expect(r.stderr).toBe('berth: code cache stale\n');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('team-scoped infrastructure management');
  });

  it('works without a cache', () => {
    const dir = copyOfBundle();
    fs.rmSync(path.join(dir, 'berth.cjs.cache'));
    const r = run(path.join(dir, 'cli.js'), ['--help']);
    expect(r.stderr).toBe('berth: code cache missing\n');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^Usage: berth/);
  });
});
