/**
 * Shared environment variables (Coolify's team, project, environment and server scopes) and the
 * environment routes by name or uuid, over real HTTP with real tokens: CRUD in each scope, one
 * key per scope (409), values redacted without read:sensitive, 404 for another team's scope or
 * variable exactly as for a missing one, 422 for bad input that changes nothing, 403 for a read
 * token on writes, and no variable left behind when its environment, project or server goes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dump, expectValidation, NOT_FOUND, setup, type Ctx } from './support.js';

let c: Ctx;
let other: { id: number; rootToken: string };
beforeAll(async () => {
  c = await setup();
  other = await c.s.team('Shared other');
});
afterAll(() => c.stop());

const SCOPES = {
  team: () => '/team/envs',
  project: () => `/projects/${c.w.projectUuid}/envs`,
  'environment (by name)': () => `/projects/${c.w.projectUuid}/environments/production/envs`,
  'environment (by uuid)': () => `/projects/${c.w.projectUuid}/environments/${c.w.environmentUuid}/envs`,
  server: () => `/servers/${c.w.serverUuid}/envs`,
} as const;

const sharedRows = () => c.s.db.selectFrom('shared_environment_variables').selectAll().orderBy('id').execute();

describe.each(Object.entries(SCOPES))('%s shared variables', (label, base) => {
  const key = `K_${label.replace(/\W/g, '_').toUpperCase()}`;

  it('create (201 {id}), list, update by id (201, the variable), delete (200): values only with read:sensitive', async () => {
    const created = await c.api('POST', base(), c.write, { key, value: 'first-secret', comment: 'note' });
    expect(created.status, created.text).toBe(201);
    expect(Object.keys(created.json)).toEqual(['id']);
    const id = created.json.id as number;
    expect(Number.isInteger(id)).toBe(true);

    const seen = (await c.api('GET', base(), c.sensitive)).json.find((e: { id: number }) => e.id === id);
    expect(seen).toMatchObject({ id, key, value: 'first-secret', is_shown_once: false, is_literal: false, is_multiline: false, comment: 'note' });
    expect(seen.type).toBe(label.split(' ')[0]);
    // team_id, project_id, environment_id, server_id stay hidden, as in Coolify.
    expect(Object.keys(seen).sort()).toEqual(['comment', 'created_at', 'id', 'is_literal', 'is_multiline', 'is_shown_once', 'key', 'type', 'updated_at', 'value']);
    const redacted = await c.api('GET', base(), c.read);
    expect(redacted.status).toBe(200);
    expect(redacted.text).not.toContain('first-secret');
    expect(redacted.json.find((e: { id: number }) => e.id === id)).not.toHaveProperty('value');

    const updated = await c.api('PATCH', `${base()}/${id}`, c.readWrite, { value: 'second-secret', is_literal: true });
    expect(updated.status, updated.text).toBe(201);
    expect(updated.json).toMatchObject({ id, key, is_literal: true });
    expect(updated.json).not.toHaveProperty('value');
    expect((await c.api('GET', base(), c.root)).json.find((e: { id: number }) => e.id === id).value).toBe('second-secret');

    const deleted = await c.api('DELETE', `${base()}/${id}`, c.write);
    expect(deleted.status).toBe(200);
    expect(deleted.json).toEqual({ message: 'Environment variable deleted.' });
    expect((await c.api('GET', base(), c.root)).json.some((e: { id: number }) => e.id === id)).toBe(false);
    expect((await c.api('DELETE', `${base()}/${id}`, c.write)).text).toBe(NOT_FOUND);
  });

  it('one key per scope: a second create is 409 and a PATCH onto a taken key is 409', async () => {
    const a = (await c.api('POST', base(), c.write, { key: `${key}_A`, value: '1' })).json.id;
    const again = await c.api('POST', base(), c.write, { key: `${key}_A`, value: '2' });
    expect(again.status).toBe(409);
    expect(again.json).toEqual({ message: 'Environment variable already exists. Use PATCH request to update it.' });
    const b = (await c.api('POST', base(), c.write, { key: `${key}_B` })).json.id;
    const clash = await c.api('PATCH', `${base()}/${b}`, c.write, { key: `${key}_A` });
    expect(clash.status).toBe(409);
    expect(clash.json).toEqual({ message: 'Environment variable already exists with this key.' });
    // Renaming to its own key, or to a free one, is fine.
    expect((await c.api('PATCH', `${base()}/${b}`, c.write, { key: `${key}_C` })).status).toBe(201);
    for (const id of [a, b]) expect((await c.api('DELETE', `${base()}/${id}`, c.write)).status).toBe(200);
  });

  it('is_shown_once: the value is never shown, even to root', async () => {
    const { id } = (await c.api('POST', base(), c.write, { key: `${key}_ONCE`, value: 'once-secret', is_shown_once: true })).json;
    const r = await c.api('GET', base(), c.root);
    expect(r.text).not.toContain('once-secret');
    expect(r.json.find((e: { id: number }) => e.id === id)).toMatchObject({ is_shown_once: true });
    await c.api('DELETE', `${base()}/${id}`, c.write);
  });

  it('422 for bad input, and nothing changes', async () => {
    const before = await sharedRows();
    expectValidation(await c.api('POST', base(), c.write, { key: 'not a key!', value: 'x' }), ['key']);
    expectValidation(await c.api('POST', base(), c.write, { value: 'x' }), ['key']);
    expectValidation(await c.api('POST', base(), c.write, { key: 'OK_KEY', value: 'x', is_preview: true }), ['is_preview']);
    expectValidation(await c.api('POST', base(), c.write, { key: 'OK_KEY', comment: 'c'.repeat(257) }), ['comment']);
    expectValidation(await c.api('PATCH', `${base()}/${c.w.teamEnvId}`, c.write, {}), ['body']);
    expectValidation(await c.api('PATCH', `${base()}/not-an-id`, c.write, { value: 'x' }), ['env_id']);
    expectValidation(await c.api('DELETE', `${base()}/0`, c.write), ['env_id']);
    expect(await sharedRows()).toEqual(before);
  });

  it('403 for a read token on writes, before anything is read or written', async () => {
    const before = await sharedRows();
    for (const [method, path] of [
      ['POST', base()],
      ['PATCH', `${base()}/1`],
      ['DELETE', `${base()}/1`],
    ] as const) {
      const r = await c.api(method, path, c.read, { key: 'NOPE', value: 'x' });
      expect(r.status, `${method} ${path}`).toBe(403);
      expect(r.json.missing_permissions).toEqual(['write']);
    }
    expect((await c.api('GET', base(), c.write)).status).toBe(403);
    expect(await sharedRows()).toEqual(before);
  });
});

describe('isolation between teams', () => {
  it("another team's project, environment or server is the same 404 as a missing one, for every operation", async () => {
    const w = c.w;
    const pairs: Array<[string, string]> = [
      [`/projects/${w.projectUuid}/envs`, '/projects/nosuchproject/envs'],
      [`/projects/${w.projectUuid}/environments/production/envs`, '/projects/nosuchproject/environments/production/envs'],
      [`/projects/${w.projectUuid}/environments/${w.environmentUuid}/envs`, '/projects/nosuchproject/environments/nosuchenv/envs'],
      [`/servers/${w.serverUuid}/envs`, '/servers/nosuchserver/envs'],
    ];
    const before = await dump(c.s);
    const rowsBefore = await sharedRows();
    for (const [real, missing] of pairs) {
      for (const [method, suffix, body] of [
        ['GET', '', undefined],
        ['POST', '', { key: 'INTRUDER', value: 'x' }],
        ['PATCH', '/1', { value: 'x' }],
        ['DELETE', '/1', undefined],
      ] as const) {
        const a = await c.api(method, real + suffix, other.rootToken, body);
        const b = await c.api(method, missing + suffix, other.rootToken, body);
        expect(a.status, `${method} ${real}${suffix}: ${a.text}`).toBe(404);
        expect(a.text).toBe(NOT_FOUND);
        expect(b.text).toBe(a.text);
      }
    }
    expect(await dump(c.s)).toEqual(before);
    expect(await sharedRows()).toEqual(rowsBefore);
  });

  it("a team's own scope never reaches another team's variables: list, update and delete by id", async () => {
    const mine = await c.api('GET', '/team/envs', other.rootToken);
    expect(mine.status).toBe(200);
    expect(mine.json).toEqual([]);
    // The world's team variable, by its id, from the other team: 404, and it stays.
    for (const [method, body] of [
      ['PATCH', { value: 'stolen' }],
      ['DELETE', undefined],
    ] as const) {
      const r = await c.api(method, `/team/envs/${c.w.teamEnvId}`, other.rootToken, body);
      expect(r.text).toBe(NOT_FOUND);
    }
    // And an id of one scope is not found through another scope of the same team.
    expect((await c.api('PATCH', `/projects/${c.w.projectUuid}/envs/${c.w.teamEnvId}`, c.root, { value: 'x' })).text).toBe(NOT_FOUND);
    expect((await c.api('DELETE', `/servers/${c.w.serverUuid}/envs/${c.w.projectEnvId}`, c.root)).text).toBe(NOT_FOUND);
    const team = (await c.api('GET', '/team/envs', c.sensitive)).json;
    expect(team.find((e: { id: number }) => String(e.id) === c.w.teamEnvId)).toMatchObject({ key: 'TEAM_SHARED', value: 'team_shared-secret-value' });
  });
});

describe('environments by name or uuid', () => {
  it('GET /projects/{uuid}/{name or uuid}: the environment and its resources; /environments and /envs keep their routes', async () => {
    const byName = await c.api('GET', `/projects/${c.w.projectUuid}/production`, c.read);
    expect(byName.status, byName.text).toBe(200);
    expect(byName.json).toMatchObject({ uuid: c.w.environmentUuid, name: 'production' });
    expect(byName.json.applications.map((a: { uuid: string }) => a.uuid)).toContain(c.w.appUuid);
    expect(byName.json.postgresqls.map((a: { uuid: string }) => a.uuid)).toContain(c.w.databaseUuid);
    expect(byName.json.services.map((a: { uuid: string }) => a.uuid)).toContain(c.w.serviceUuid);
    expect(byName.json.postgresqls[0].type).toBe('standalone-postgresql');
    // No secret of any resource appears.
    expect(byName.text).not.toContain('db-secret-password');
    const byUuid = await c.api('GET', `/projects/${c.w.projectUuid}/${c.w.environmentUuid}`, c.read);
    expect(byUuid.json).toEqual(byName.json);
    // The static routes are not shadowed by the parameter.
    expect(Array.isArray((await c.api('GET', `/projects/${c.w.projectUuid}/environments`, c.read)).json)).toBe(true);
    expect(Array.isArray((await c.api('GET', `/projects/${c.w.projectUuid}/envs`, c.read)).json)).toBe(true);
    expect((await c.api('GET', `/projects/${c.w.projectUuid}/nosuchenv`, c.read)).text).toBe(NOT_FOUND);
    expect((await c.api('GET', `/projects/${c.w.projectUuid}/production`, other.rootToken)).text).toBe(NOT_FOUND);
    expectValidation(await c.api('GET', `/projects/${c.w.projectUuid}/-bad-`, c.read), ['environment_name_or_uuid']);
  });

  it('PATCH renames (409 onto a taken name) and DELETE refuses while resources live there', async () => {
    const p = c.w.projectUuid;
    expect((await c.api('POST', `/projects/${p}/environments`, c.write, { name: 'staging' })).status).toBe(201);
    const renamed = await c.api('PATCH', `/projects/${p}/environments/staging`, c.write, { name: 'qa', description: 'for testing' });
    expect(renamed.status, renamed.text).toBe(200);
    expect(renamed.json).toMatchObject({ name: 'qa', description: 'for testing' });
    expect(Object.keys(renamed.json).sort()).toEqual(['description', 'name', 'uuid']);
    const taken = await c.api('PATCH', `/projects/${p}/environments/qa`, c.write, { name: 'production' });
    expect(taken.status).toBe(409);
    expect(taken.json).toEqual({ message: 'Environment with this name already exists.' });
    expectValidation(await c.api('PATCH', `/projects/${p}/environments/qa`, c.write, { name: '$(id)' }), ['name']);
    expect((await c.api('PATCH', `/projects/${p}/environments/qa`, c.read, { description: 'x' })).status).toBe(403);
    expect((await c.api('PATCH', `/projects/${p}/environments/qa`, other.rootToken, { description: 'x' })).text).toBe(NOT_FOUND);

    const busy = await c.api('DELETE', `/projects/${p}/environments/production`, c.write);
    expect(busy.status).toBe(400);
    expect(busy.json).toEqual({ message: 'Environment has resources, so it cannot be deleted.' });
    expect((await c.api('GET', `/projects/${p}/production`, c.read)).status).toBe(200);

    // An empty environment goes, and its shared variables with it.
    expect((await c.api('POST', `/projects/${p}/environments/qa/envs`, c.write, { key: 'QA_ONLY', value: 'x' })).status).toBe(201);
    expect((await c.api('DELETE', `/projects/${p}/environments/qa`, other.rootToken)).text).toBe(NOT_FOUND);
    const gone = await c.api('DELETE', `/projects/${p}/environments/qa`, c.write);
    expect(gone.status).toBe(200);
    expect(gone.json).toEqual({ message: 'Environment deleted.' });
    expect((await sharedRows()).some((e) => e.key === 'QA_ONLY')).toBe(false);
    expect((await c.api('GET', `/projects/${p}/qa`, c.read)).text).toBe(NOT_FOUND);
  });
});

describe('no orphans', () => {
  it('deleting a project, a server or a team takes their shared variables along', async () => {
    const t = await c.s.team('Shared doomed');
    const api = (method: string, path: string, body?: unknown) => c.api(method, path, t.rootToken, body);
    const project = (await api('POST', '/projects', { name: 'doomed' })).json.uuid;
    const server = (await api('POST', '/servers', { name: 'doomed', ip: '10.9.9.9' })).json.uuid;
    for (const base of ['/team', `/projects/${project}`, `/projects/${project}/environments/production`, `/servers/${server}`]) {
      expect((await api('POST', `${base}/envs`, { key: 'DOOMED', value: 'x' })).status).toBe(201);
    }
    const count = async () => (await c.s.db.selectFrom('shared_environment_variables').select('id').where('team_id', '=', t.id).execute()).length;
    expect(await count()).toBe(4);
    expect((await api('DELETE', `/projects/${project}`)).status).toBe(200);
    expect(await count()).toBe(2);
    expect((await api('DELETE', `/servers/${server}`)).status).toBe(200);
    expect(await count()).toBe(1);
    await c.s.db.deleteFrom('teams').where('id', '=', t.id).execute();
    expect(await count()).toBe(0);
  });
});
