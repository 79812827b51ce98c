import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { partUuid } from '../../src/core/operations/service-parts.js';
import { newUuid } from '../../src/ids.js';
import { pathParams, type Operation } from '../../src/core/operation.js';
import { operations } from '../../src/core/operations/index.js';
import * as admin from '../../src/core/admin.js';
import { nowIso } from '../../src/store/db.js';
import { call, startTestServer, type Reply, type TestServer } from '../helpers/server.js';
import {
  arrangePreview,
  buildWorld,
  heldCall,
  CLOUD_TOKEN_SAMPLE,
  COMPOSE,
  GITHUB_APP_SAMPLE,
  fillPath,
  freshKey,
  partsOf,
  S3_SAMPLE,
  sampleBody as bodyFor,
  worldParams,
  type Singular,
  type World,
} from '../helpers/world.js';

/**
 * The permission matrix over real HTTP, for every operation of the operation table (a new
 * operation is covered as soon as it is in the table): a token holding exactly one permission
 * either gets past the permission check (and, with a valid input built from a world, succeeds)
 * or gets the contract's exact 403. The order of checks around it is checked too:
 * authentication before permission, permission before validation and lookup.
 */

const GRANTS = ['read', 'read:sensitive', 'write', 'deploy', 'root'] as const;
type Grant = (typeof GRANTS)[number];

const ROOT_TEAM_ONLY = `{"message":"Only a token of the instance's root team may do this."}`;
const missing = (p: string) => JSON.stringify({ message: `Missing required permissions: ${p}`, missing_permissions: [p] });

/** The rules: root passes everything, read:sensitive also satisfies read, nothing else implies anything. */
function permits(granted: Grant, required: Operation['permission']): boolean {
  if (required === 'authenticated' || granted === 'root') return true;
  return granted === required || (required === 'read' && granted === 'read:sensitive');
}

let s: TestServer;
let w: World;
let seq = 0;

/**
 * Root tokens of one team for arranging data; each token is a user of its own, so a new one is
 * taken before the per-user rate limit (200/min) could be reached.
 */
class Pool {
  private current: string | undefined;
  private uses = 0;
  constructor(private readonly team?: number) {}
  async token(): Promise<string> {
    if (!this.current || this.uses >= 150) {
      this.current = (await s.token({ permissions: ['root'], role: 'admin', team: this.team })).token;
      this.uses = 0;
    }
    this.uses++;
    return this.current;
  }
  async ok(method: string, path: string, body?: unknown): Promise<any> {
    const r = await call(s.url, method, path, { token: await this.token(), body });
    if (r.status >= 300) throw new Error(`setup ${method} ${path} → ${r.status} ${r.text}`);
    return r.json;
  }
}
let setup: Pool;

beforeAll(async () => {
  // The sweeps below send one request per operation from one token or address: more than a
  // minute's limit now that the table has grown past 200. The limits have their own tests.
  s = await startTestServer({ apiRateLimit: 0 });
  w = await buildWorld(s);
  setup = new Pool();
});
afterAll(() => s.stop());

// ---- sample inputs, built from the world ------------------------------------------------------

async function freshResource(kind: Singular, x: World): Promise<string> {
  const place = { project_uuid: x.projectUuid, server_uuid: x.serverUuid, destination_uuid: x.destinationUuid, environment_name: 'production' };
  const i = ++seq;
  if (kind === 'application') return (await setup.ok('POST', '/api/v1/applications/dockerimage', { ...place, name: `fresh-${i}`, docker_registry_image_name: 'nginx' })).uuid;
  if (kind === 'database') return (await setup.ok('POST', '/api/v1/databases/postgresql', { ...place, name: `fresh-${i}` })).uuid;
  return (await setup.ok('POST', '/api/v1/services', { ...place, name: `fresh-${i}`, docker_compose_raw: COMPOSE })).uuid;
}

/** A deployment still queued (the worker never sees it), so that it can be cancelled. */
async function queuedDeployment(resourceUuid: string): Promise<string> {
  const r = await s.db.selectFrom('resources').select(['id', 'team_id', 'destination_id']).where('uuid', '=', resourceUuid).executeTakeFirstOrThrow();
  const d = await s.db.selectFrom('destinations').select('server_id').where('id', '=', r.destination_id).executeTakeFirstOrThrow();
  const uuid = newUuid();
  const now = nowIso();
  await s.db
    .insertInto('deployments')
    .values({
      uuid,
      team_id: r.team_id,
      resource_id: r.id,
      server_id: d.server_id,
      kind: 'deploy',
      status: 'queued',
      force: 0,
      logs: '',
      started_at: null,
      finished_at: null,
      created_at: now,
      updated_at: now,
    })
    .execute();
  return uuid;
}

/** A migration parked as waiting in the store (never queued in this process), of a fresh resource. */
async function pendingMigration(x: World): Promise<string> {
  const resource = await s.db
    .selectFrom('resources')
    .select(['id', 'team_id', 'destination_id', 'status'])
    .where('uuid', '=', await freshResource('application', x))
    .executeTakeFirstOrThrow();
  const target = await s.db.selectFrom('destinations').select('id').where('uuid', '=', x.destination2Uuid).executeTakeFirstOrThrow();
  const uuid = newUuid();
  const now = nowIso();
  await s.db
    .insertInto('migrations_jobs')
    .values({
      uuid,
      team_id: resource.team_id,
      resource_id: resource.id,
      from_destination_id: resource.destination_id,
      to_destination_id: target.id,
      migrate_volumes: 1,
      moves_data: 1,
      status: 'pending',
      progress: '{}',
      error: null,
      finished_at: null,
      previous_status: resource.status,
      downtime_ms: null,
      created_at: now,
      updated_at: now,
    })
    .execute();
  await s.db.updateTable('resources').set({ status: 'migrating' }).where('id', '=', resource.id).execute();
  return uuid;
}

// A finished execution of the world's backup, written as the runner would (the world's servers are record-only).
async function backupExecution(x: World, status: 'success' | 'failed'): Promise<string> {
  const b = await s.db.selectFrom('scheduled_database_backups').select('id').where('uuid', '=', x.backupUuid).executeTakeFirstOrThrow();
  const uuid = newUuid();
  const now = nowIso();
  await s.db
    .insertInto('scheduled_database_backup_executions')
    .values({
      uuid,
      backup_id: b.id,
      status,
      message: status,
      logs: null,
      size: 10,
      filename: `pg-dump-postgres-${uuid}.dmp`,
      database_name: 'postgres',
      scheduled_for: null,
      local_storage_deleted: 0,
      finished_at: now,
      created_at: now,
      updated_at: now,
    })
    .execute();
  return uuid;
}

type Recipe = (x: World) => Promise<Record<string, string | undefined>>;

/** Destructive operations act on an object made for the one call, so later cases keep their world. */
function freshRecipe(name: string): Recipe | undefined {
  switch (name) {
    case 'deny_approval':
      return async (x) => ({ uuid: await heldCall(s, x.token, x.projectUuid) });
    case 'delete_private_key':
      return async () => ({ uuid: (await setup.ok('POST', '/api/v1/security/keys', { private_key: freshKey() })).uuid });
    case 'delete_server':
    // Handing a server away (or trying to) stops managing it: never the world's.
    case 'complete_server_transfer':
    case 'migrate_server':
      return async () => ({ uuid: (await setup.ok('POST', '/api/v1/servers', { ip: '10.30.0.1' })).uuid });
    case 'delete_destination':
      return async (x) => ({ uuid: (await setup.ok('POST', `/api/v1/servers/${x.serverUuid}/destinations`, { network: `gone-${++seq}` })).uuid });
    case 'delete_cloud_init_script':
      return async () => ({ uuid: (await setup.ok('POST', '/api/v1/cloud-init-scripts', { name: `gone ${++seq}`, script: '#!/bin/sh\n' })).uuid });
    case 'delete_github_app':
      return async (x) => ({ github_app_id: String((await setup.ok('POST', '/api/v1/github-apps', { ...GITHUB_APP_SAMPLE, name: `gone ${++seq}`, private_key_uuid: x.keyUuid })).id) });
    case 'delete_gitlab_app':
      return async () => ({ gitlab_app_id: String((await setup.ok('POST', '/api/v1/gitlab-apps', { name: `gone ${++seq}`, html_url: 'https://gitlab.example.test' })).id) });
    case 'delete_cloud_token':
      return async () => ({ uuid: (await setup.ok('POST', '/api/v1/cloud-tokens', { ...CLOUD_TOKEN_SAMPLE, name: `gone ${++seq}` })).uuid });
    case 'delete_tag':
      return async () => ({ uuid: (await setup.ok('POST', '/api/v1/tags', { name: `gone-${++seq}` })).uuid });
    case 'delete_s3_storage':
      return async () => ({ uuid: (await setup.ok('POST', '/api/v1/s3-storages', S3_SAMPLE)).uuid });
    case 'delete_project':
      return async () => ({ uuid: (await setup.ok('POST', '/api/v1/projects', { name: `gone ${++seq}` })).uuid });
    case 'cancel_deployment':
      return async (x) => ({ uuid: await queuedDeployment(x.appUuid) });
    case 'cancel_migration':
      return async (x) => ({ uuid: await pendingMigration(x) });
    case 'delete_application_preview':
      return async (x) => ({ uuid: x.appUuid, pull_request_id: await arrangePreview(s, x.appUuid, 100 + ++seq) });
    case 'delete_database_backup':
      return async (x) => ({ uuid: x.databaseUuid, scheduled_backup_uuid: (await setup.ok('POST', `/api/v1/databases/${x.databaseUuid}/backups`, { frequency: 'daily' })).uuid });
    case 'delete_database_backup_execution':
      return async (x) => ({ uuid: x.databaseUuid, scheduled_backup_uuid: x.backupUuid, execution_uuid: await backupExecution(x, 'failed') });
    case 'restore_database_backup_execution':
      return async (x) => ({ uuid: x.databaseUuid, scheduled_backup_uuid: x.backupUuid, execution_uuid: await backupExecution(x, 'success') });
  }
  let m: RegExpExecArray | null;
  if ((m = /^remove_(application|database|service)_tag$/.exec(name))) {
    const kind = m[1] as Singular;
    return async (x) => {
      const p = partsOf(x)[kind];
      const name = `gone-${++seq}`;
      const tags = await setup.ok('POST', `/api/v1/${kind}s/${p.uuid}/tags`, { tag_name: name });
      return { uuid: p.uuid, tag_uuid: tags.find((t: { name: string }) => t.name === name).uuid };
    };
  }
  if ((m = /^(?:delete|run)_(application|database|service)_storage_backup$/.exec(name))) {
    const kind = m[1] as Singular;
    // Each call gets the schedule back first: a delete removes it, a run needs it.
    return async (x) => {
      const p = partsOf(x)[kind];
      await setup.ok('PUT', `/api/v1/${kind}s/${p.uuid}/storages/${p.storage_uuid}/backups`, { frequency: 'weekly' });
      return p;
    };
  }
  if ((m = /^(?:delete|migrate|move)_(application|database|service)$/.exec(name))) {
    const kind = m[1] as Singular;
    return async (x) => ({ uuid: await freshResource(kind, x) });
  }
  if ((m = /^delete_(application|database|service)_env$/.exec(name))) {
    const kind = m[1] as Singular;
    return async (x) => {
      const uuid = partsOf(x)[kind].uuid;
      return { uuid, env_uuid: (await setup.ok('POST', `/api/v1/${kind}s/${uuid}/envs`, { key: `GONE_${++seq}`, value: 'x' })).uuid };
    };
  }
  if ((m = /^delete_(application|service)_scheduled_task$/.exec(name))) {
    const kind = m[1] as Singular;
    return async (x) => {
      const uuid = partsOf(x)[kind].uuid;
      const body = { name: `gone ${++seq}`, command: 'true', frequency: 'yearly', ...(kind === 'service' ? { container: 'web' } : {}) };
      return { uuid, task_uuid: (await setup.ok('POST', `/api/v1/${kind}s/${uuid}/scheduled-tasks`, body)).uuid };
    };
  }
  if ((m = /^delete_(application|database|service)_storage$/.exec(name))) {
    const kind = m[1] as Singular;
    return async (x) => {
      const uuid = partsOf(x)[kind].uuid;
      const i = ++seq;
      const part = kind === 'service' ? { resource_uuid: partUuid(uuid, 'web') } : {};
      return { uuid, storage_uuid: (await setup.ok('POST', `/api/v1/${kind}s/${uuid}/storages`, { type: 'persistent', name: `gone-${i}`, mount_path: `/gone/${i}`, ...part })).uuid };
    };
  }
  if ((m = /^delete_(team|project|environment|server)_shared_env$/.exec(name))) {
    const scope = m[1]!;
    return async (x) => {
      const base = { team: '/team', project: `/projects/${x.projectUuid}`, environment: `/projects/${x.projectUuid}/environments/${x.environmentUuid}`, server: `/servers/${x.serverUuid}` }[scope]!;
      const { id } = await setup.ok('POST', `/api/v1${base}/envs`, { key: `GONE_${++seq}`, value: 'x' });
      return { uuid: scope === 'server' ? x.serverUuid : x.projectUuid, environment_name_or_uuid: x.environmentUuid, env_id: String(id) };
    };
  }
  if (name === 'add_application_destination') {
    // Detached first (an earlier token's call attached it): the call attaches it.
    return async (x) => {
      await call(s.url, 'DELETE', `/api/v1/applications/${x.appUuid}/destinations/${x.destination2Uuid}`, { token: x.token });
      return { uuid: x.appUuid };
    };
  }
  if (name === 'remove_application_destination') {
    // Attached first (again, when an earlier call removed it): the call removes it.
    return async (x) => {
      await call(s.url, 'POST', `/api/v1/applications/${x.appUuid}/destinations`, { token: x.token, body: { destination_uuid: x.destination2Uuid } });
      return { uuid: x.appUuid, destination_uuid: x.destination2Uuid };
    };
  }
  if (name === 'delete_environment') {
    return async (x) => {
      const env = `gone-${++seq}`;
      await setup.ok('POST', `/api/v1/projects/${x.projectUuid}/environments`, { name: env });
      return { uuid: x.projectUuid, environment_name_or_uuid: env };
    };
  }
  return undefined;
}

/**
 * What operations that cannot succeed on this world answer once permitted: the provider-network
 * ones a 502 naming the provider (its address is .invalid here); rollback a 422 (a record-only server keeps no images).
 */
const NEVER_SUCCEEDS_HERE: Record<string, number | Partial<Record<Grant, number>>> = {
  // The providers' APIs are .invalid here (a 502 naming them); the world holds a Hetzner token only,
  // and another provider's token is the 404 of a missing one (test/resources/cloud-providers.test.ts has a stand-in).
  ...Object.fromEntries(operations.filter((o) => /^list_(hetzner|digitalocean|vultr)_/.test(o.name)).map((o) => [o.name, o.name.startsWith('list_hetzner_') ? 502 : 404])),
  // The target instance is .invalid (422 on target_url); a write token without read:sensitive may not send secrets (403).
  migrate_server: { write: 403, root: 422 },
  // The world's GitHub app asks GitHub at an .invalid address (502; test/resources/github-app-api.test.ts has a stand-in).
  list_github_app_repositories: 502,
  list_github_app_branches: 502,
  validate_cloud_token: 502,
  create_private_github_app_application: 502,
  rollback_application: 422,
  // The world's server has no engine: the proxy cannot be restarted on it (409 naming why).
  restart_server_proxy: 409,
  // Tokens are agents: approving is a person's, in the console or the CLI (approval_not_allowed).
  approve_approval: 403,
};

/** Destructive operations whose effect is harmless or undone right after the call. */
const RESTORED = new Set(['disable_api', 'disable_mcp']);
// A cleanup of the world's server only records a failed run: it has no engine to prune.
const harmless = (name: string) => /^stop_/.test(name) || name === 'run_server_docker_cleanup';

async function send(op: Operation, token: string | undefined, params: Record<string, string | undefined>, body: Record<string, unknown> | undefined, opts: { from?: string } = {}): Promise<Reply> {
  let url = fillPath(op, params);
  let payload: unknown = body;
  if (op.http.method === 'GET' && body) {
    url += `?${new URLSearchParams(Object.entries(body).map(([k, v]): [string, string] => [k, String(v)])).toString()}`;
    payload = undefined;
  }
  return call(s.url, op.http.method, url, { token, body: payload, from: opts.from });
}

async function grantToken(g: Grant, team?: number): Promise<string> {
  return (await s.token({ permissions: [g], role: g === 'root' ? 'admin' : 'member', team })).token;
}

/** Path parameters that name nothing and are not even well formed: only validation could tell. */
function invalidParams(op: Operation): Record<string, string> {
  return Object.fromEntries(pathParams(op.http.path).map((p) => [p, p === 'id' ? 'not-a-number' : '-not-a-uuid-']));
}

/** A permission the given operation needs and the returned grant lacks. */
function refusedGrant(required: Operation['permission']): Grant {
  return required === 'read' || required === 'root' ? 'write' : 'read';
}

// ---- the matrix --------------------------------------------------------------------------------

let checked = 0;

describe('permission matrix: one token per permission, every operation (root team)', () => {
  for (const op of operations) {
    it(`${op.name} (${op.http.method} ${op.http.path}) requires ${op.permission}`, async () => {
      const recipe = freshRecipe(op.name);
      for (const g of GRANTS) {
        const token = await grantToken(g);
        const allowed = permits(g, op.permission);
        const params = allowed && recipe ? await recipe(w) : worldParams(op.http.path, w, s.rootTeamId);
        const r = await send(op, token, params, bodyFor(op.name, w));
        if (allowed) {
          const never = NEVER_SUCCEEDS_HERE[op.name];
          const expected = typeof never === 'object' ? never[g] : never;
          if (expected !== 403) expect([401, 403], `${g} on ${op.name} is refused: ${r.text}`).not.toContain(r.status);
          else expect(r.text).not.toBe(missing(op.permission));
          expect(r.status, `${g} on ${op.name} should succeed with the sample input: ${r.text}`).toBe(expected ?? op.http.status ?? 200);
        } else {
          expect(r.status, `${g} on ${op.name}: ${r.text}`).toBe(403);
          expect(r.text).toBe(missing(op.permission));
          expect(r.headers['content-type']).toMatch(/^application\/json/);
        }
        checked++;
        if (allowed && op.name === 'disable_api') await setup.ok('POST', '/api/v1/enable');
        if (allowed && op.name === 'disable_mcp') await setup.ok('POST', '/api/v1/mcp/enable');
      }
    });
  }

  it(`covers ${operations.length} operations × ${GRANTS.length} tokens`, () => {
    expect(checked).toBe(operations.length * GRANTS.length);
  });

  it('every operation requires one known permission, and root only for the instance-wide ones', () => {
    for (const op of operations) expect(['read', 'read:sensitive', 'write', 'deploy', 'root', 'authenticated'], op.name).toContain(op.permission);
    for (const op of operations) expect(op.permission === 'root', `${op.name}: root ⇔ root team only`).toBe(Boolean(op.access?.rootTeamOnly));
  });

  it('every destructive operation gets a fresh object per call (or is undone), so no case breaks a later one', () => {
    const unsafe = operations.filter((o) => o.annotations.destructive && !freshRecipe(o.name) && !RESTORED.has(o.name) && !harmless(o.name)).map((o) => o.name);
    expect(unsafe).toEqual([]);
  });

  it('write does not imply read, and read:sensitive satisfies read', async () => {
    const writer = await grantToken('write');
    const r = await call(s.url, 'GET', '/api/v1/teams', { token: writer });
    expect(r.status).toBe(403);
    expect(r.text).toBe(missing('read'));
    const sensitive = await grantToken('read:sensitive');
    expect((await call(s.url, 'GET', '/api/v1/teams', { token: sensitive })).status).toBe(200);
  });

  it('a token holding several permissions passes the checks of each', async () => {
    const t = (await s.token({ permissions: ['read', 'deploy'] })).token;
    expect((await call(s.url, 'GET', `/api/v1/applications/${w.appUuid}`, { token: t })).status).toBe(200);
    expect((await call(s.url, 'POST', `/api/v1/applications/${w.appUuid}/restart`, { token: t })).status).toBe(200);
    const r = await call(s.url, 'PATCH', `/api/v1/applications/${w.appUuid}`, { token: t, body: { description: 'x' } });
    expect(r.status).toBe(403);
    expect(r.text).toBe(missing('write'));
  });

  it('a token cannot be created without permissions', async () => {
    await expect(s.token({ permissions: [] })).rejects.toThrow();
  });
});

describe('root-team-only operations', () => {
  const rootTeamOnly = operations.filter((o) => o.access?.rootTeamOnly);

  it('exist (the API toggle and the settings)', () => {
    expect(rootTeamOnly.map((o) => o.name)).toEqual(expect.arrayContaining(['enable_api', 'disable_api']));
  });

  for (const op of rootTeamOnly) {
    it(`${op.name}: a root token of another team gets 403; a lesser token of it, the missing permission`, async () => {
      const other = await s.team(`Other ${op.name}`);
      const params = worldParams(op.http.path, w, s.rootTeamId);
      const r = await send(op, other.rootToken, params, bodyFor(op.name, w));
      expect(r.status, r.text).toBe(403);
      expect(r.text).toBe(ROOT_TEAM_ONLY);
      const reader = await grantToken('read', other.id);
      const r2 = await send(op, reader, params, bodyFor(op.name, w));
      expect(r2.status).toBe(403);
      expect(r2.text).toBe(missing(op.permission));
      // The instance is still reachable: the other team's root did not switch it off.
      expect((await call(s.url, 'GET', '/api/v1/version', { token: reader })).status).toBe(200);
    });
  }

  it('a root token of another team passes every other permission check', async () => {
    const other = await s.team('Other general');
    for (const op of operations.filter((o) => !o.access?.rootTeamOnly && pathParams(o.http.path).length === 0 && o.annotations.readOnly && !(o.name in NEVER_SUCCEEDS_HERE))) {
      const r = await send(op, other.rootToken, {}, bodyFor(op.name, w));
      expect(r.status, `${op.name}: ${r.text}`).toBe(op.http.status ?? 200);
    }
  });
});

// ---- the holder's role changed ------------------------------------------------------------------

/**
 * A token is capped by its holder's role at every use, not at creation: root only while the
 * holder is an owner or admin (ROLE_MAY_HOLD). The change is made on the store as the CLI makes
 * it, and the very next request sees it.
 */
describe("permission matrix: the holder's role changed", () => {
  const rootOps = operations.filter((o) => o.permission === 'root');
  const setRole = (email: string, role: 'owner' | 'admin' | 'member') => admin.addMember(s.db, { team: String(s.rootTeamId), email, role });
  const readKey = async (token: string) => (await call(s.url, 'GET', `/api/v1/security/keys/${w.keyUuid}`, { token })).json;

  it(`an admin's root token demoted to member loses root at the next request (${rootOps.length} root operations), and regains it when promoted`, async () => {
    expect(rootOps.map((o) => o.name)).toEqual(expect.arrayContaining(['get_settings', 'update_settings', 'disable_api', 'disable_mcp']));
    const email = `demoted-${++seq}@example.test`;
    const { token } = await s.token({ permissions: ['read', 'write', 'root'], role: 'admin', email });
    expect((await call(s.url, 'GET', '/api/v1/settings', { token })).status).toBe(200);
    expect((await readKey(token)).private_key).toContain('PRIVATE KEY');

    await setRole(email, 'member');
    for (const op of rootOps) {
      const r = await send(op, token, worldParams(op.http.path, w, s.rootTeamId), bodyFor(op.name, w));
      expect(r.status, `${op.name} after demotion: ${r.text}`).toBe(403);
      expect(r.text).toBe(missing('root'));
    }
    // What the token also lists stays: read (and write), without the secrets root showed.
    const key = await readKey(token);
    expect(key.uuid).toBe(w.keyUuid);
    expect(key).not.toHaveProperty('private_key');
    // The root-only switch on a server is refused too, naming root (write alone passes the route's check).
    const toggle = await call(s.url, 'PATCH', `/api/v1/servers/${w.serverUuid}`, { token, body: { host_access: false } });
    expect(toggle.status).toBe(403);
    expect(toggle.text).toBe(missing('root'));
    // The instance is still on: nothing the demoted token sent got through.
    expect((await call(s.url, 'GET', '/api/v1/version', { token })).status).toBe(200);

    await setRole(email, 'admin');
    expect((await call(s.url, 'GET', '/api/v1/settings', { token })).status).toBe(200);
    expect((await readKey(token)).private_key).toContain('PRIVATE KEY');
  });

  const guarded = operations.filter((o) => o.permission !== 'authenticated');
  it(`a root-only token of a demoted holder holds nothing: every permission-checked operation answers what it needs (${guarded.length} operations)`, async () => {
    const email = `demoted-${++seq}@example.test`;
    const { token } = await s.token({ permissions: ['root'], role: 'owner', email });
    // An owner demoted while another owner remains (the root team's first owner).
    await setRole(email, 'member');
    // The permission check comes before the input is read, so nothing below runs.
    for (const op of guarded) {
      const r = await send(op, token, worldParams(op.http.path, w, s.rootTeamId), bodyFor(op.name, w));
      expect(r.status, `${op.name}: ${r.text}`).toBe(403);
      expect(r.text).toBe(missing(op.permission));
    }
    await setRole(email, 'owner');
    expect((await call(s.url, 'GET', '/api/v1/settings', { token })).status).toBe(200);
  });

  it("a member's other permissions are untouched by role changes (member may hold read, read:sensitive, write, deploy)", async () => {
    const email = `member-${++seq}@example.test`;
    const { token } = await s.token({ permissions: ['read:sensitive', 'write', 'deploy'], role: 'admin', email });
    await setRole(email, 'member');
    expect((await readKey(token)).private_key).toContain('PRIVATE KEY');
    const r = await call(s.url, 'PATCH', `/api/v1/projects/${w.projectUuid}`, { token, body: { description: 'still writable' } });
    expect(r.status, r.text).toBe(201);
  });

  it('a member cannot be given a root token, and an admin can', async () => {
    await expect(s.token({ permissions: ['root'], role: 'member' })).rejects.toMatchObject({ details: { errors: { permissions: [expect.stringMatching(/root/)] } } });
    await expect(s.token({ permissions: ['root'], role: 'admin' })).resolves.toMatchObject({ token: expect.any(String) });
  });
});

// ---- order of checks ---------------------------------------------------------------------------

describe('order: authentication → permission → validation → lookup', () => {
  const guarded = operations.filter((o) => o.permission !== 'authenticated');
  const withBody = guarded.filter((o) => o.http.method !== 'GET' && o.http.method !== 'DELETE');

  it(`a refused token gets the 403 even with an invalid input naming nothing (${guarded.length} operations)`, async () => {
    const tokens = new Map<Grant, string>();
    for (const op of guarded) {
      const g = refusedGrant(op.permission);
      if (!tokens.has(g)) tokens.set(g, await grantToken(g));
      expect(permits(g, op.permission)).toBe(false);
      const r = await send(op, tokens.get(g), invalidParams(op), { not_a_field: 'x', page: -1 });
      expect(r.status, `${op.name}: ${r.text}`).toBe(403);
      expect(r.text).toBe(missing(op.permission));
    }
  });

  it('the same invalid input from a permitted token is a 422 (so the 403 above did come first)', async () => {
    const root = await grantToken('root');
    for (const op of guarded) {
      const r = await send(op, root, invalidParams(op), { not_a_field: 'x' });
      expect(r.status, `${op.name}: ${r.text}`).toBe(422);
      expect(r.json.message).toBe('Validation error.');
    }
  });

  it(`a read token posting a schema-invalid body to a write route gets 403, not 422 (${withBody.length} routes)`, async () => {
    const reader = await grantToken('read');
    for (const op of withBody.filter((o) => !permits('read', o.permission))) {
      const r = await send(op, reader, worldParams(op.http.path, w, s.rootTeamId), { name: '$(id)', not_a_field: true, private_key: 'nope' });
      expect(r.status, `${op.name}: ${r.text}`).toBe(403);
      expect(r.text).toBe(missing(op.permission));
    }
  });

  // The permission check runs before the body is read (Core.authorize), so a body that is not
  // JSON, not an object, or repeats a path parameter cannot answer 422 before the 403.
  it('a read token sending malformed JSON to a write route gets 403, not 422', async () => {
    const reader = await grantToken('read');
    for (const op of withBody.filter((o) => !permits('read', o.permission))) {
      const r = await call(s.url, op.http.method, fillPath(op, worldParams(op.http.path, w, s.rootTeamId)), { token: reader, body: '{"name": "x",' });
      expect(r.status, `${op.name}: ${r.text}`).toBe(403);
      expect(r.text).toBe(missing(op.permission));
    }
  });

  it('a read token sending a non-JSON body (text/plain, a JSON array) to a write route gets 403, not 422', async () => {
    const reader = await grantToken('read');
    for (const op of withBody.filter((o) => !permits('read', o.permission))) {
      const path = fillPath(op, worldParams(op.http.path, w, s.rootTeamId));
      const a = await call(s.url, op.http.method, path, { token: reader, body: 'name=x', headers: { 'content-type': 'text/plain' } });
      expect(a.status, `${op.name} text/plain: ${a.text}`).toBe(403);
      const b = await call(s.url, op.http.method, path, { token: reader, body: [1, 2] });
      expect(b.status, `${op.name} array: ${b.text}`).toBe(403);
    }
  });

  it('a read token repeating a path parameter in the body of a write route gets 403, not 422', async () => {
    const reader = await grantToken('read');
    for (const op of withBody.filter((o) => !permits('read', o.permission) && pathParams(o.http.path).length > 0)) {
      const params = worldParams(op.http.path, w, s.rootTeamId);
      const r = await send(op, reader, params, { ...(bodyFor(op.name, w) ?? {}), ...params });
      expect(r.status, `${op.name}: ${r.text}`).toBe(403);
    }
  });

  it(`authentication comes first: no token or a bad token gets 401 whatever the permission or input (${operations.length} operations)`, async () => {
    for (const op of operations) {
      const params = invalidParams(op);
      const none = await send(op, undefined, params, { not_a_field: 'x' }, { from: '127.0.0.21' });
      expect(none.status, `${op.name} without a token: ${none.text}`).toBe(401);
      expect(none.text).toBe('{"message":"Unauthenticated."}');
      const bad = await send(op, '999999|notARealSecret0123456789', params, { not_a_field: 'x' }, { from: '127.0.0.22' });
      expect(bad.status, `${op.name} with a bad token: ${bad.text}`).toBe(401);
      expect(bad.text).toBe('{"message":"Invalid token."}');
    }
  });
});
