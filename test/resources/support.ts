import { expect } from 'vitest';
import { call, startTestServer, type Reply, type TestServer } from '../helpers/server.js';
import { buildWorld, worldParams, type World } from '../helpers/world.js';

/**
 * Shared arrangement for the resource tests: a real server (rate limit off, so a file may send
 * as many requests as it needs), one of every resource built over REST, and one token per
 * permission of the root team.
 */
export interface Ctx {
  s: TestServer;
  w: World;
  root: string;
  read: string;
  sensitive: string;
  write: string;
  deploy: string;
  /** read + write: creates and reads back without seeing secrets. */
  readWrite: string;
  api(method: string, path: string, token: string, body?: unknown): Promise<Reply>;
  stop(): Promise<void>;
}

export async function setup(overrides: Parameters<typeof startTestServer>[0] = {}): Promise<Ctx> {
  const s = await startTestServer({ apiRateLimit: 0, ...overrides });
  const w = await buildWorld(s);
  const tok = async (permissions: string[]) => (await s.token({ permissions, role: permissions.includes('root') ? 'admin' : 'member' })).token;
  const [read, sensitive, write, deploy, readWrite] = await Promise.all([tok(['read']), tok(['read:sensitive']), tok(['write']), tok(['deploy']), tok(['read', 'write'])]);
  await settle(s);
  return {
    s,
    w,
    root: s.rootToken,
    read,
    sensitive,
    write,
    deploy,
    readWrite,
    api: (method, path, token, body) => call(s.url, method, `/api/v1${path}`, { token, body }),
    stop: () => s.stop(),
  };
}

/** Waits until no deployment of the store is queued or running (record-only jobs end quickly). */
export async function settle(s: TestServer, timeoutMs = 5000): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const busy = await s.db.selectFrom('deployments').select('id').where('status', 'in', ['queued', 'in_progress']).execute();
    if (!busy.length) return;
    if (Date.now() > until) throw new Error(`deployments still busy: ${busy.map((d) => d.id).join(',')}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Polls a deployment until it leaves queued/in_progress; returns its final JSON. */
export async function finished(ctx: Ctx, deploymentUuid: string, timeoutMs = 5000): Promise<any> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const r = await ctx.api('GET', `/deployments/${deploymentUuid}`, ctx.root);
    expect(r.status).toBe(200);
    if (!['queued', 'in_progress'].includes(r.json.status)) return r.json;
    if (Date.now() > until) throw new Error(`deployment ${deploymentUuid} still ${r.json.status}`);
    await new Promise((res) => setTimeout(res, 20));
  }
}

/**
 * start/stop/restart of a resource on a record-only server (the world's): each answers once its
 * deployment has ended, and since no engine acted it ended failed, saying so and what to do, with
 * the resource's status as it was (never `running`). test/e2e has the engine's side.
 */
export async function expectRecordOnlyLifecycle(ctx: Ctx, collection: 'applications' | 'databases' | 'services', uuid: string, actions: readonly ('start' | 'stop' | 'restart')[]): Promise<void> {
  const label = { applications: 'Application', databases: 'Database', services: 'Service' }[collection];
  const before = (await ctx.api('GET', `/${collection}/${uuid}`, ctx.read)).json.status;
  expect(before).not.toMatch(/^running/);
  for (const action of actions) {
    const r = await ctx.api('POST', `/${collection}/${uuid}/${action}`, ctx.deploy);
    expect(r.status, r.text).toBe(200);
    expect(r.json.message).toMatch(new RegExp(`^${label} ${action} failed: The server has no engine berth can reach .*Validate the server to manage it\\.$`));
    expect(r.json).toMatchObject({ deployment_status: 'failed', status: before, deployment_uuid: expect.stringMatching(/^[a-z0-9]{24}$/) });
    expect(await finished(ctx, r.json.deployment_uuid)).toMatchObject({ status: 'failed', kind: action, resource_uuid: uuid });
    expect((await ctx.api('GET', `/${collection}/${uuid}`, ctx.read)).json.status).toBe(before);
  }
}

const TABLES = ['private_keys', 'servers', 'destinations', 'projects', 'environments', 'resources', 'environment_variables', 'storages', 'deployments', 'migrations_jobs'] as const;

/** Every row of every platform table: equal dumps before and after mean nothing was written. */
export async function dump(s: TestServer): Promise<Record<string, unknown[]>> {
  const out: Record<string, unknown[]> = {};
  for (const t of TABLES)
    out[t] = await s.db
      .selectFrom(t as 'servers')
      .selectAll()
      .orderBy('id')
      .execute();
  return out;
}

/** X-Total-Count of the team's top-level lists, as a client sees them. */
export async function totals(ctx: Ctx, token = ctx.root): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const p of ['/security/keys', '/servers', '/destinations', '/projects', '/applications', '/databases', '/services', '/resources', '/migrations']) {
    const r = await ctx.api('GET', p, token);
    expect(r.status, p).toBe(200);
    out[p] = Number(r.headers['x-total-count']);
  }
  return out;
}

/** The contract's 422: exactly these fields carry errors, each a non-empty list of strings. */
export function expectValidation(r: Reply, fields: string[], exact = true): void {
  expect(r.status, r.text).toBe(422);
  expect(r.headers['content-type']).toMatch(/^application\/json/);
  expect(r.json.message).toBe('Validation error.');
  expect(Object.keys(r.json).sort()).toEqual(['errors', 'message']);
  const errors = r.json.errors as Record<string, unknown>;
  if (exact) expect(Object.keys(errors).sort()).toEqual([...fields].sort());
  else for (const f of fields) expect(Object.keys(errors), r.text).toContain(f);
  for (const v of Object.values(errors)) {
    expect(Array.isArray(v)).toBe(true);
    expect((v as unknown[]).length).toBeGreaterThan(0);
    for (const m of v as unknown[]) expect(typeof m).toBe('string');
  }
}

export const NOT_FOUND = '{"message":"Resource not found."}';

/** A compose file as Coolify sends it (base64). */
export const b64 = (text: string) => Buffer.from(text).toString('base64');

/** The placement body of the world's project/server. */
export const placeOf = (w: World) => ({ project_uuid: w.projectUuid, server_uuid: w.serverUuid, environment_name: 'production' });

/** Makes a server "managed" as a validated engine would: endpoint set, reachable and usable. */
export async function markManaged(s: TestServer, serverUuid: string): Promise<void> {
  await s.db
    .updateTable('servers')
    .set({ engine_endpoint: `unix:///run/berth-test/${serverUuid}.sock`, is_reachable: 1, is_usable: 1, validated_at: new Date().toISOString() })
    .where('uuid', '=', serverUuid)
    .execute();
}

/** A path with the world's objects filled in (the same choice as the operation-table tests make). */
export function fillPath(path: string, w: World, teamId: number): string {
  const params = worldParams(path, w, teamId);
  return path.replace(/^\/api\/v1/, '').replace(/\{(\w+)\}/g, (_, k: string) => params[k] ?? '');
}

/** Every key at any depth of a JSON value. */
export function keysDeep(v: unknown, out = new Set<string>()): Set<string> {
  if (Array.isArray(v)) for (const x of v) keysDeep(x, out);
  else if (v && typeof v === 'object') {
    for (const [k, x] of Object.entries(v)) {
      out.add(k);
      keysDeep(x, out);
    }
  }
  return out;
}
