import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { partUuid } from '../../src/core/operations/service-parts.js';
import { newUuid } from '../../src/ids.js';
import { pathParams, type Operation } from '../../src/core/operation.js';
import { operations } from '../../src/core/operations/index.js';
import { call, startTestServer, type Reply, type TestServer } from '../helpers/server.js';
import { buildWorld, fillPath, sampleBody as bodyFor, worldParams, type Params, type World } from '../helpers/world.js';

/**
 * Team isolation over real HTTP, driven by the operation table: team B's root token, aimed at
 * team A's real uuids, must get exactly what it gets for uuids that do not exist (the same
 * status, bytes and content type), for every operation with path parameters and for every
 * reference inside a body; and nothing of team A (nor of B) may change meanwhile.
 */

const NOT_FOUND = '{"message":"Resource not found."}';

let s: TestServer;
let a: World;
let b: World;
let teamA: number;
let teamB: number;
let onlyA: string;

/**
 * Root tokens of one team, all made up front (so the team's member list does not change between
 * snapshots), used in turn below the per-user rate limit (200/min).
 */
class Pool {
  private tokens: string[] = [];
  private uses: number[] = [];
  static async of(team: number, size: number): Promise<Pool> {
    const p = new Pool();
    for (let i = 0; i < size; i++) {
      p.tokens.push((await s.token({ permissions: ['root'], role: 'admin', team })).token);
      p.uses.push(0);
    }
    return p;
  }
  token(): string {
    const i = this.uses.findIndex((n) => n < 150);
    if (i === -1) throw new Error('token pool exhausted: make it larger');
    this.uses[i]!++;
    return this.tokens[i]!;
  }
}
let poolA: Pool;
let poolB: Pool;

// ---- inputs ------------------------------------------------------------------------------------

/** Values of the same shape as real ones that name nothing. */
function randomParams(op: Operation): Params {
  return Object.fromEntries(
    pathParams(op.http.path).map((p) => [
      p,
      p === 'id' || p === 'env_id' || p === 'github_app_id' || p === 'gitlab_app_id' || p === 'pull_request_id' ? String(900_000 + Math.floor(Math.random() * 99_999)) : newUuid(),
    ]),
  );
}

async function send(op: Operation, token: string, params: Params, body: Record<string, unknown> | undefined): Promise<Reply> {
  let url = fillPath(op, params);
  let payload: unknown = body;
  if (op.http.method === 'GET' && body) {
    url += `?${new URLSearchParams(Object.entries(body).map(([k, v]): [string, string] => [k, String(v)])).toString()}`;
    payload = undefined;
  }
  return call(s.url, op.http.method, url, { token, body: payload });
}

/** Two answers that must not tell a real uuid of another team from a missing one. */
function expectIndistinguishable(real: Reply, random: Reply, what: string) {
  expect(real.status, `${what}: status (real: ${real.text}, random: ${random.text})`).toBe(random.status);
  expect(real.text, `${what}: body`).toBe(random.text);
  expect(real.headers['content-type'], `${what}: content type`).toBe(random.headers['content-type']);
  expect(real.headers['content-length'], `${what}: content length`).toBe(random.headers['content-length']);
  expect(Object.keys(real.headers).sort(), `${what}: header names`).toEqual(Object.keys(random.headers).sort());
}

/** 404 "Resource not found." — or, where a 422 for the input comes first, the same 422 for both. */
function expectMissing(r: Reply, what: string) {
  if (r.status === 422) {
    expect(r.json.message, what).toBe('Validation error.');
    return;
  }
  expect(r.status, `${what}: ${r.text}`).toBe(404);
  expect(r.text).toBe(NOT_FOUND);
  expect(r.headers['content-type']).toMatch(/^application\/json/);
}

// A GitHub app's repositories and branches need GitHub's API (.invalid here, 502 for every team): nothing to read.
// The providers' catalogues ask a provider's API (a stand-in in test/resources/cloud-providers.test.ts):
// their team scoping is the reference check of cloud_provider_token_uuid below.
const reads = operations.filter(
  (o) => o.http.method === 'GET' && !['list_github_app_repositories', 'list_github_app_branches'].includes(o.name) && !/^list_(hetzner|digitalocean|vultr)_/.test(o.name),
);
/**
 * The audit log records every refused attempt of B's, with the uuids B itself sent (A's): it grows
 * and names them by design. It is checked for what B could not have known: entries of A's callers.
 */
const AUDIT = 'list_audit_entries';

/** Every GET of a team, with its own root token (sensitive fields included). */
async function snapshot(x: World, teamId: number, pool: Pool): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const op of reads) {
    if (op.name === AUDIT) continue;
    const r = await send(op, pool.token(), worldParams(op.http.path, x, teamId), undefined);
    // An export is made anew each time: its id and time are not state.
    out[op.name] = `${r.status} ${r.text}`.replace(/"export_id":"[a-z0-9]+"/, '"export_id":"-"').replace(/"exported_at":"[^"]+"/, '"exported_at":"-"');
  }
  return out;
}

/** Waits until no deployment of the team is queued or running, so snapshots are stable. */
async function settle(pool: Pool): Promise<void> {
  for (let i = 0; i < 100; i++) {
    const r = await call(s.url, 'GET', '/api/v1/deployments', { token: pool.token() });
    if (r.status === 200 && Array.isArray(r.json) && r.json.length === 0) return;
    await new Promise((res) => setTimeout(res, 50));
  }
  throw new Error('deployments did not settle');
}

let beforeA: Record<string, string>;
let beforeB: Record<string, string>;

beforeAll(async () => {
  s = await startTestServer();
  teamA = s.rootTeamId;
  const B = await s.team('B');
  teamB = B.id;
  poolA = await Pool.of(teamA, 2);
  poolB = await Pool.of(teamB, 8);
  a = await buildWorld(s, s.rootToken, 'a');
  b = await buildWorld(s, B.rootToken, 'b');
  // An application with a tag only team A uses.
  const r = await call(s.url, 'POST', '/api/v1/applications/dockerimage', {
    token: poolA.token(),
    body: { project_uuid: a.projectUuid, server_uuid: a.serverUuid, destination_uuid: a.destinationUuid, environment_name: 'production', docker_registry_image_name: 'nginx', tags: ['only-a'] },
  });
  expect(r.status, r.text).toBe(201);
  onlyA = r.json.uuid;
  await settle(poolA);
  await settle(poolB);
  beforeA = await snapshot(a, teamA, poolA);
  beforeB = await snapshot(b, teamB, poolB);
}, 60_000);
afterAll(() => s.stop());

// ---- every operation with path parameters ------------------------------------------------------

const withParams = operations.filter((o) => pathParams(o.http.path).length > 0);
const covered = new Set<string>();
const outcomes = { notFound: 0, validation: 0, mixed: 0 };

describe("team B's root token on team A's uuids gets what it gets for uuids that do not exist", () => {
  for (const op of withParams) {
    it(`${op.name} (${op.http.method} ${op.http.path})`, async () => {
      const body = bodyFor(op.name, b);
      const real = await send(op, poolB.token(), worldParams(op.http.path, a, teamA), body);
      const random = await send(op, poolB.token(), randomParams(op), body);
      expectIndistinguishable(real, random, op.name);
      if (op.access?.rootTeamOnly) {
        expect(real.status).toBe(403);
      } else {
        expectMissing(real, op.name);
        outcomes[real.status === 404 ? 'notFound' : 'validation']++;
      }

      // A parent of B's own with a child of A's (an env or storage of A's under B's resource).
      // GitHub's owner and repository names in a path are no team's objects: only the app is; a
      // pull request id is a number within its application (B's own application's 7 is B's).
      const names = pathParams(op.http.path).filter((n) => n !== 'owner' && n !== 'repo' && n !== 'pull_request_id');
      if (names.length > 1) {
        const own = worldParams(op.http.path, b, teamB);
        const fromA = worldParams(op.http.path, a, teamA);
        const fresh = randomParams(op);
        const [parent, ...children] = names;
        const mixedReal: Params = { [parent!]: own[parent!] };
        const mixedRandom: Params = { [parent!]: own[parent!] };
        for (const c of children) {
          mixedReal[c] = fromA[c];
          mixedRandom[c] = fresh[c];
        }
        const r1 = await send(op, poolB.token(), mixedReal, body);
        const r2 = await send(op, poolB.token(), mixedRandom, body);
        expectIndistinguishable(r1, r2, `${op.name} (B's ${parent}, A's ${children.join(', ')})`);
        expectMissing(r1, op.name);
        outcomes.mixed++;
      }
      covered.add(op.name);
    });
  }

  it('covers every operation with path parameters', () => {
    expect(withParams.length).toBeGreaterThan(0);
    expect(covered.size).toBe(withParams.length);
    expect([...covered].sort()).toEqual(withParams.map((o) => o.name).sort());
    expect(outcomes.notFound + outcomes.validation).toBe(withParams.filter((o) => !o.access?.rootTeamOnly).length);
  });
});

// ---- references inside bodies ------------------------------------------------------------------

/** Body fields that name another object, and which of a world's objects each one names (for an operation). */
const REFERENCE: Record<string, (x: World, op: string) => string> = {
  project_uuid: (x) => x.projectUuid,
  server_uuid: (x) => x.serverUuid,
  destination_uuid: (x) => x.destinationUuid,
  // A create names where the resource goes; a move names where it goes next.
  environment_uuid: (x, op) => (op.startsWith('move_') ? x.stagingUuid : x.environmentUuid),
  private_key_uuid: (x) => x.keyUuid,
  // A storage of the resource the operation's path names (storages PATCH).
  storage_uuid: (x, op) => (op.includes('database') ? x.databaseStorageUuid : op.includes('service') ? x.serviceApiStorageUuid : x.appStorageUuid),
  // The service container a service volume is added to (service storages).
  resource_uuid: (x) => partUuid(x.serviceUuid, 'web'),
  s3_storage_uuid: (x) => x.s3StorageUuid,
  github_app_uuid: (x) => x.githubAppUuid,
  cloud_provider_token_uuid: (x) => x.cloudTokenUuid,
};

function referenceFields(op: Operation): string[] {
  const params = pathParams(op.http.path);
  return Object.keys(op.input.shape).filter((k) => k.endsWith('_uuid') && !params.includes(k));
}

const referencing = operations.flatMap((op) => referenceFields(op).map((field) => ({ op, field })));
const controls: { op: Operation; params: Params; body: Record<string, unknown> }[] = [];

describe("references inside bodies resolve only inside the caller's team", () => {
  it('knows every reference field of the operation table', () => {
    const unknown = referencing.filter((x) => !REFERENCE[x.field]).map((x) => `${x.op.name}.${x.field}`);
    expect(unknown, 'add the field to REFERENCE').toEqual([]);
    // create_server/update_server (key), every create of an application, database or service
    // (project, server, destination, environment), and every migrate (destination).
    expect(referencing.length).toBeGreaterThanOrEqual(2 + 4 * 7 + 3);
  });

  for (const { op, field } of referencing) {
    it(`${op.name} with team A's ${field}: 404, the same as a missing one, nothing created`, async () => {
      const params = worldParams(op.http.path, b, teamB);
      const body = bodyFor(op.name, b) ?? {};
      const real = await send(op, poolB.token(), params, { ...body, [field]: REFERENCE[field]!(a, op.name) });
      const random = await send(op, poolB.token(), params, { ...body, [field]: newUuid() });
      expectIndistinguishable(real, random, `${op.name}.${field}`);
      expect(real.status, `${op.name}.${field}: ${real.text}`).toBe(404);
      expect(real.text).toBe(NOT_FOUND);
      // B's own object in the same place: the control, run once nothing more is compared.
      // A migrate and an additional destination name another server's destination: the sample body's.
      const own = /^migrate_|^add_application_destination$/.test(op.name) ? body.destination_uuid : REFERENCE[field]!(b, op.name);
      controls.push({ op, params, body: { ...body, [field]: own } });
    });
  }

  it("deploy by team A's uuid or a tag only A uses: the same 404 as a missing one", async () => {
    const deploy = operations.find((o) => o.name === 'deploy')!;
    const t = poolB.token();
    for (const [real, random] of [
      [{ uuid: a.appUuid }, { uuid: newUuid() }],
      [{ uuid: onlyA }, { uuid: newUuid() }],
      [{ tag: 'only-a' }, { tag: 'no-such-tag' }],
    ] as const) {
      const r1 = await send(deploy, t, {}, real);
      const r2 = await send(deploy, t, {}, random);
      expectIndistinguishable(r1, r2, `deploy ${JSON.stringify(real)}`);
      expect(r1.status, r1.text).toBe(404);
      expect(r1.text).toBe(NOT_FOUND);
    }
  });
});

// ---- lists -------------------------------------------------------------------------------------

describe("team B's reads never show team A's objects", () => {
  it(`no GET of B's (${reads.length} operations) contains a uuid of A's`, async () => {
    // Shared-variable ids are small integers (Coolify's {env_id}), not uuids: the 404 checks above cover them.
    const secrets = [
      ...Object.entries(a)
        .filter(([k]) => k !== 'token' && !k.endsWith('EnvId') && k !== 'githubAppId' && k !== 'gitlabAppId')
        .map(([, v]) => v as string),
      onlyA,
      s.ownerEmail,
    ];
    for (const op of reads) {
      const r = await send(op, poolB.token(), worldParams(op.http.path, b, teamB), undefined);
      if (op.access?.rootTeamOnly) {
        expect(r.status).toBe(403);
        continue;
      }
      expect(r.status, `${op.name}: ${r.text}`).toBe(200);
      if (op.name === AUDIT) {
        expect(r.json.length, 'B sees its own refused attempts').toBeGreaterThan(0);
        expect(r.json.every((e: { user_email: string; result: string }) => e.user_email !== s.ownerEmail)).toBe(true);
        continue;
      }
      for (const v of secrets) expect(r.text, `${op.name} shows ${v} of team A`).not.toContain(v);
    }
  });

  it("the team lists hold B's own team only", async () => {
    const r = await call(s.url, 'GET', '/api/v1/teams', { token: poolB.token() });
    expect(r.json.map((t: { id: number }) => t.id)).toEqual([teamB]);
    const lists = [
      '/api/v1/applications',
      '/api/v1/databases',
      '/api/v1/services',
      '/api/v1/resources',
      '/api/v1/servers',
      '/api/v1/projects',
      '/api/v1/security/keys',
      '/api/v1/destinations',
      '/api/v1/migrations',
    ];
    for (const path of lists) {
      const mine = await call(s.url, 'GET', path, { token: poolB.token() });
      const theirs = await call(s.url, 'GET', path, { token: poolA.token() });
      const ours = new Set(mine.json.map((x: { uuid?: string; migration_uuid?: string }) => x.uuid ?? x.migration_uuid));
      for (const x of theirs.json as { uuid?: string; migration_uuid?: string }[]) expect(ours.has(x.uuid ?? x.migration_uuid), `${path}`).toBe(false);
      expect(Number(mine.headers['x-total-count']), path).toBe(mine.json.length);
    }
  });
});

// ---- afterwards --------------------------------------------------------------------------------

describe('afterwards', () => {
  it('nothing of team A changed', async () => {
    await settle(poolA);
    const after = await snapshot(a, teamA, poolA);
    for (const name of Object.keys(beforeA)) expect(after[name], name).toBe(beforeA[name]);
  });

  it('nothing of team B changed either (every call above was refused)', async () => {
    await settle(poolB);
    const after = await snapshot(b, teamB, poolB);
    for (const name of Object.keys(beforeB)) expect(after[name], name).toBe(beforeB[name]);
  });

  it("control: the same bodies with B's own references succeed", async () => {
    expect(controls.length).toBe(referencing.length);
    for (const c of controls) {
      const r = await send(c.op, poolB.token(), c.params, c.body);
      // private-github-app needs GitHub's API, Hetzner's catalogue Hetzner's (.invalid
      // addresses here): past the references, their answers say so. The world's token is Hetzner's,
      // so to DigitalOcean and Vultr it is a missing token.
      const beyond = c.op.name === 'create_private_github_app_application' ? 502 : /^list_hetzner_/.test(c.op.name) ? 502 : /^list_(digitalocean|vultr)_/.test(c.op.name) ? 404 : undefined;
      expect(r.status, `${c.op.name}: ${r.text}`).toBe(beyond ?? c.op.http.status ?? 200);
      // Detached again: the application migrates to that server in a later control.
      if (c.op.name === 'add_application_destination') {
        const detach = await call(s.url, 'DELETE', `/api/v1/applications/${c.params.uuid}/destinations/${c.body.destination_uuid}`, { token: poolB.token() });
        expect(detach.status, detach.text).toBe(200);
      }
    }
  });
});
