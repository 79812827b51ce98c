import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writePolicy } from '../../src/core/approvals.js';
import { pathParams, type Operation } from '../../src/core/operation.js';
import { operations } from '../../src/core/operations/index.js';
import { knowsPath } from '../../src/core/path-targets.js';
import { newUuid } from '../../src/ids.js';
import { errorBody, httpClient, type AnyClient } from '../helpers/mcp.js';
import { call, startTestServer, type Reply, type TestServer } from '../helpers/server.js';
import { buildWorld, fillPath, sampleBody, worldParams, type Params, type World } from '../helpers/world.js';

/**
 * Hold after checks (issue 39, item 2): a call the team's policy holds is looked up and checked
 * first, so a missing or another team's target, or input the operation refuses, gets exactly
 * the answer it gets without a policy and leaves no approval for a person to wade through.
 * Driven by the operation table: every write operation with path parameters, under a policy
 * naming every operation, against its answers before the policy was set (same team, same
 * token, same input). Runs on the store BERTH_TEST_STORE names.
 */

let s: TestServer;
let h: World;
let f: World;
let teamH: number;
let teamF: number;
let mcp: AnyClient;

/** Root tokens of team H used in turn, below the per-user rate limit (200/min). */
const pool: string[] = [];
let uses = 0;
function token(): string {
  const t = pool[Math.floor(uses++ / 150)];
  if (!t) throw new Error('token pool exhausted: make it larger');
  return t;
}

const writes = operations.filter((o) => !o.annotations.readOnly);
const withParams = writes.filter((o) => pathParams(o.http.path).length > 0);

/** Values of the same shape as real ones that name nothing (made once: both phases send the same). */
const missing = new Map<string, Params>(
  withParams.map((op) => [
    op.name,
    Object.fromEntries(pathParams(op.http.path).map((p) => [p, /^(id|env_id|github_app_id|gitlab_app_id)$/.test(p) ? String(900_000 + Math.floor(Math.random() * 99_999)) : newUuid()])),
  ]),
);
/** Each operation's one sample body, made once (its names are unique per call). */
const bodies = new Map<string, Record<string, unknown> | undefined>();
const bodyOf = (op: Operation) => bodies.get(op.name);

const send = (op: Operation, params: Params, body: Record<string, unknown> | undefined): Promise<Reply> => call(s.url, op.http.method, fillPath(op, params), { token: token(), body });

const approvals = async (): Promise<number> =>
  Number(
    (
      await s.db
        .selectFrom('approvals')
        .select((eb) => eb.fn.countAll<number | string>().as('n'))
        .where('team_id', '=', teamH)
        .executeTakeFirstOrThrow()
    ).n,
  );

/** Two answers that must be the same bytes: status, body and content type. */
function expectSame(held: Reply, plain: Reply, what: string) {
  expect(held.status, `${what}: ${held.text} (without a policy: ${plain.text})`).toBe(plain.status);
  expect(held.text, what).toBe(plain.text);
  expect(held.headers['content-type'], what).toBe(plain.headers['content-type']);
}

/** Body fields that name another object of the team, and the other team's object for each. */
const REFERENCE: Record<string, (x: World, op: string) => string> = {
  project_uuid: (x) => x.projectUuid,
  server_uuid: (x) => x.serverUuid,
  destination_uuid: (x) => x.destinationUuid,
  environment_uuid: (x, op) => (op.startsWith('move_') ? x.stagingUuid : x.environmentUuid),
  private_key_uuid: (x) => x.keyUuid,
  s3_storage_uuid: (x) => x.s3StorageUuid,
  github_app_uuid: (x) => x.githubAppUuid,
};
const referencing = writes.flatMap((op) =>
  Object.keys(op.input.shape)
    .filter((k) => REFERENCE[k] && !pathParams(op.http.path).includes(k))
    .map((field) => ({ op, field })),
);

/** What each call answered before the policy: key → reply. */
const before = new Map<string, Reply>();
const mcpBefore = new Map<string, unknown>();

/** MCP calls (a real SDK client over /mcp) compared across the policy. */
const mcpCases = (): Array<{ name: string; args: Record<string, unknown> }> => [
  { name: 'delete_tag', args: { uuid: newUuidOnce('tag') } },
  { name: 'delete_project', args: { uuid: f.projectUuid } },
  { name: 'run_server_docker_cleanup', args: { uuid: f.serverUuid } },
  { name: 'delete_application_env', args: { uuid: h.appUuid, env_uuid: f.appEnvUuid } },
  // The world's backup run failed: a restore of it is refused (422), held or not.
  { name: 'restore_database_backup_execution', args: { uuid: h.databaseUuid, scheduled_backup_uuid: h.backupUuid, execution_uuid: h.backupExecutionUuid } },
];
const once = new Map<string, string>();
const newUuidOnce = (k: string) => once.get(k) ?? (once.set(k, newUuid()), once.get(k)!);

const mcpAnswer = async (name: string, args: Record<string, unknown>) => {
  const r = await mcp.callTool(name, args);
  return { isError: r.isError, body: errorBody(r) };
};

beforeAll(async () => {
  s = await startTestServer();
  teamH = s.rootTeamId;
  const F = await s.team('F');
  teamF = F.id;
  for (let i = 0; i < 8; i++) pool.push((await s.token({ permissions: ['root'], role: 'admin' })).token);
  h = await buildWorld(s, s.rootToken, 'h');
  f = await buildWorld(s, F.rootToken, 'f');
  for (const op of writes) bodies.set(op.name, sampleBody(op.name, h));
  mcp = await httpClient('v2-modern', s.url, pool[7]!);

  // Without a policy: every answer the held calls must repeat.
  for (const op of withParams) {
    before.set(`${op.name} missing`, await send(op, missing.get(op.name)!, bodyOf(op)));
    before.set(`${op.name} foreign`, await send(op, worldParams(op.http.path, f, teamF), bodyOf(op)));
  }
  for (const { op, field } of referencing) {
    before.set(`${op.name}.${field}`, await send(op, worldParams(op.http.path, h, teamH), { ...bodyOf(op), [field]: REFERENCE[field]!(f, op.name) }));
  }
  for (const c of mcpCases()) mcpBefore.set(c.name, await mcpAnswer(c.name, c.args));

  // A policy naming every operation (arranged in the store: a policy holds its own change).
  await writePolicy(s.db, teamH, { rules: writes.map((o) => o.name), expiresInSeconds: 3600 });
}, 120_000);
afterAll(async () => {
  await mcp?.close();
  await s?.stop();
});

describe('a held call for a missing or foreign target answers as without a policy, and holds nothing', () => {
  for (const op of withParams) {
    it(`${op.name} (${op.http.method} ${op.http.path})`, async () => {
      const n = await approvals();
      const plainMissing = before.get(`${op.name} missing`)!;
      expect([404, 422], `${op.name} without a policy: ${plainMissing.text}`).toContain(plainMissing.status);
      expectSame(await send(op, missing.get(op.name)!, bodyOf(op)), plainMissing, `${op.name}, missing`);
      expectSame(await send(op, worldParams(op.http.path, f, teamF), bodyOf(op)), before.get(`${op.name} foreign`)!, `${op.name}, team F's`);
      expect(await approvals(), `${op.name} held a call for nothing`).toBe(n);
    });
  }

  it('walks every write operation with path parameters, each with a lookup the gate knows', () => {
    expect(withParams.length).toBeGreaterThan(100);
    // Store-only operations are checked by a rolled-back run of their own; every other path is in the table.
    expect(withParams.filter((o) => !o.storeOnly && !knowsPath(o.http.path)).map((o) => o.name)).toEqual([]);
  });
});

describe("a held call naming another team's object in its body answers as without a policy", () => {
  for (const { op, field } of referencing) {
    it(`${op.name} with team F's ${field}`, async () => {
      const n = await approvals();
      const plain = before.get(`${op.name}.${field}`)!;
      expect(plain.status, `${op.name}.${field} without a policy: ${plain.text}`).toBe(404);
      expectSame(await send(op, worldParams(op.http.path, h, teamH), { ...bodyOf(op), [field]: REFERENCE[field]!(f, op.name) }), plain, `${op.name}.${field}`);
      expect(await approvals()).toBe(n);
    });
  }

  it("deploy of a missing or team F's uuid, or a tag no resource of H carries: the same 404, nothing held", async () => {
    const deploy = writes.find((o) => o.name === 'deploy')!;
    const n = await approvals();
    for (const body of [{ uuid: newUuid() }, { uuid: f.appUuid }, { tag: 'no-such-tag' }]) {
      const r = await send(deploy, {}, body);
      expect(r.status, r.text).toBe(404);
      expect(r.json).toEqual({ message: 'Resource not found.' });
    }
    const both = await send(deploy, {}, { uuid: h.appUuid, tag: 'web' });
    expect(both.status).toBe(422);
    expect(await approvals()).toBe(n);
  });
});

describe('input the operation refuses is a 422, not a held call', () => {
  it('invalid input (schema), a refused restore and a store-only refusal: the same 422, nothing held', async () => {
    const n = await approvals();
    const op = (name: string) => writes.find((o) => o.name === name)!;
    // The schema's refusal came before the gate already.
    const bad = await call(s.url, 'DELETE', `/api/v1/applications/${h.appUuid}?delete_volumes=maybe`, { token: token() });
    expect(bad.status).toBe(422);
    // The operation's own refusal after its lookup: the world's backup run failed.
    const restore = op('restore_database_backup_execution');
    const r = await send(restore, worldParams(restore.http.path, h, teamH), undefined);
    expect(r.status, r.text).toBe(422);
    expect(r.json.errors).toEqual({ execution_uuid: ['Only a successful execution whose file is kept can be restored.'] });
    // A store-only operation's own check (run and rolled back): an update that changes nothing.
    const shared = await call(s.url, 'PATCH', `/api/v1/team/envs/${h.teamEnvId}`, { token: token(), body: {} });
    expect(shared.status, shared.text).toBe(422);
    expect(shared.json.errors).toEqual({ body: ['At least one field must be provided.'] });
    // A project with resources cannot be deleted (400), held or not.
    const project = await call(s.url, 'DELETE', `/api/v1/projects/${h.projectUuid}`, { token: token() });
    expect(project.status, project.text).toBe(400);
    expect(await approvals()).toBe(n);
  });
});

describe('over MCP (a real SDK client)', () => {
  it('the same tool results as without a policy, nothing held', async () => {
    const n = await approvals();
    for (const c of mcpCases()) {
      const now = await mcpAnswer(c.name, c.args);
      expect(now, c.name).toEqual(mcpBefore.get(c.name));
      expect(now.isError).toBe(true);
    }
    expect(await approvals()).toBe(n);
  });

  it('a call for a real target is still held', async () => {
    const n = await approvals();
    const r = await mcp.callTool('delete_tag', { uuid: h.tagUuid });
    expect(errorBody(r)).toMatchObject({ approval: { operation: 'delete_tag', status: 'pending', target: h.tagUuid } });
    expect(await approvals()).toBe(n + 1);
  });
});

describe('the checks are no stricter than the operations', () => {
  /**
   * Calls on team H's own objects, which run without a policy, are held (202) — except where the
   * operation itself refuses them in the world's state, the same answer held or not.
   */
  const REFUSED: Record<string, number> = {
    // The world's backup run failed: nothing to restore.
    restore_database_backup_execution: 422,
    // The project and its production environment hold resources.
    delete_project: 400,
    delete_environment: 400,
    // Store-only operations, run and rolled back: the world's key is the first server's.
    delete_private_key: 409,
    // The tag "web" is on the application only.
    remove_database_tag: 404,
    remove_service_tag: 404,
    // The world's service volume is declared in its compose file.
    delete_service_storage: 422,
    // A decision is never held: a token's approve is refused, a deny runs (src/core/approvals.ts).
    approve_approval: 403,
    deny_approval: 200,
  };

  it('every write operation with path parameters, on its own objects, is held', async () => {
    const wrong: string[] = [];
    for (const op of withParams) {
      const n = await approvals();
      const r = await send(op, worldParams(op.http.path, h, teamH), bodyOf(op));
      const want = REFUSED[op.name] ?? 202;
      if (r.status !== want || (await approvals()) !== n + (want === 202 ? 1 : 0)) wrong.push(`${op.name}: ${r.status} ${r.text.slice(0, 200)}`);
    }
    expect(wrong).toEqual([]);
  });
});
