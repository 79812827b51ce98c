/**
 * The coverage measure of Coolify's API (scripts/coolify-coverage.mjs) on berth's own OpenAPI
 * document, built from the declarations: it reads every listed operation, matches berth's
 * routes and aliases, and never drops below what berth served when the measure was set up.
 */
import { describe, expect, it } from 'vitest';
// @ts-expect-error: a plain JavaScript script, used as it ships.
import { coolifyOperations, coverage } from '../../scripts/coolify-coverage.mjs';
import { operations } from '../../src/core/operations/index.js';
import { buildOpenApi } from '../../src/http-api/openapi.js';

/** What berth serves (raised as routes land; 97 when the measure was added, 2026-11-25; 235 once issue 27's branches are merged: tasks, deploy key, GitHub apps, cloud tokens, rollback, service storages, GitLab apps, PATCH /security/keys; 255 with issue 41: server transfer, cloud provider catalogues, POST on service application logs; 259 with the proxy's routes; 262 with additional destinations, issue 46; 264 with log drains; 265 with the preview delete, issue 41). */
const FLOOR = 265;

describe("coverage of Coolify's API", () => {
  it('reads all 275 operations of the list, grouped by area', () => {
    const ops = coolifyOperations() as Array<{ area: string; method: string; path: string }>;
    expect(ops).toHaveLength(275);
    expect(new Set(ops.map((o) => o.area))).toContain('applications');
  });

  it("matches berth's routes (aliases included) by method and path shape, and does not fall", () => {
    const r = coverage(buildOpenApi(operations)) as { covered: number; total: number; areas: Array<{ area: string; covered: number; total: number; missing: string[] }> };
    const area = (name: string) => r.areas.find((a) => a.area === name)!;
    expect(area('health')).toMatchObject({ covered: 1, total: 1 });
    expect(area('version')).toMatchObject({ covered: 1, total: 1 });
    // /team is an alias of /teams/current in berth; /team/envs are the team's shared variables.
    expect(area('team').missing).not.toContain('GET /team');
    expect(area('team').missing).not.toContain('GET /team/envs');
    for (const a of r.areas) expect(a.covered + a.missing.length).toBe(a.total);
    expect(r.covered).toBeGreaterThanOrEqual(FLOOR);
  });
});
