import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/server.js';

/**
 * The official MCP conformance suite and the MCP Inspector CLI against a real `berth serve` and
 * `berth mcp` (the shipped dist/bundle/cli.js), through scripts/mcp-conformance.mjs. The first
 * run installs the pinned tools (scripts/mcp-conformance/, ~330 MB, ~35 s, needs the npm
 * registry); later runs take about 20 s.
 */

const ROOT = path.resolve(import.meta.dirname, '../..');
const SCRIPT = path.join(ROOT, 'scripts', 'mcp-conformance.mjs');

interface Finding {
  run: string;
  scenario: string;
  check: string;
  message?: string;
}
interface Report {
  ok: boolean;
  runs: Array<{ name: string; scenarios: Array<{ scenario: string; checks: Array<{ id: string; status: string }> }> }>;
  inspector: Array<{ label: string; ok: boolean; problems: string[] }>;
  comparison: { unexpected: Finding[]; expected: Finding[]; stale: Array<{ entry: string; why: string }>; warnings: Finding[] };
}

function runScript(jsonFile: string): Promise<{ code: number; stderr: string }> {
  return new Promise((resolve, reject) => {
    // --no-build: `npm test` builds first, like every test that drives dist/cli.js.
    const child = spawn(process.execPath, [SCRIPT, '--no-build', '--json', jsonFile], { cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? 1, stderr }));
  });
}

describe('MCP conformance suite and Inspector CLI', () => {
  it('fails no check outside test/conformance-baseline.json, over HTTP and stdio', { timeout: 240_000 }, async () => {
    const dir = tempDir('berth-conformance-report-');
    try {
      const file = path.join(dir, 'report.json');
      const { code, stderr } = await runScript(file);
      if (!fs.existsSync(file)) throw new Error(`scripts/mcp-conformance.mjs exited ${code} without a report:\n${stderr}`);
      const report = JSON.parse(fs.readFileSync(file, 'utf8')) as Report;

      // Both passes ran, and the core of the protocol is not excused by the baseline.
      expect(report.runs.map((r) => r.name)).toEqual(['spec-2025-11-25', 'requirements-2026-07-28']);
      const passed = (run: string, scenario: string) =>
        report.runs
          .find((r) => r.name === run)
          ?.scenarios.find((s) => s.scenario === scenario)
          ?.checks.every((c) => c.status !== 'FAILURE');
      expect(passed('spec-2025-11-25', 'server-initialize')).toBe(true);
      expect(passed('spec-2025-11-25', 'tools-list')).toBe(true);
      expect(passed('requirements-2026-07-28', 'tools-list')).toBe(true);
      expect(passed('requirements-2026-07-28', 'http-header-validation')).toBe(true);

      expect(report.comparison.unexpected, 'failing checks that the baseline does not list').toEqual([]);
      expect(report.comparison.stale, 'baseline entries that no longer fail').toEqual([]);
      expect(report.inspector.filter((i) => !i.ok)).toEqual([]);
      expect(report.inspector.map((i) => i.label)).toContain('stdio tools/call get_current_team');
      expect(code, stderr).toBe(0);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
