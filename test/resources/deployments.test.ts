import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newUuid } from '../../src/ids.js';
import { dump, expectValidation, finished, NOT_FOUND, placeOf, settle, setup, type Ctx } from './support.js';

let c: Ctx;
beforeAll(async () => {
  c = await setup();
});
afterAll(() => c.stop());

/** A deployment row that stays queued (not on any worker queue), as if waiting behind others. */
async function parkedDeployment(resourceUuid: string, logs = ''): Promise<string> {
  const r = await c.s.db.selectFrom('resources').select(['id', 'team_id', 'destination_id']).where('uuid', '=', resourceUuid).executeTakeFirstOrThrow();
  const d = await c.s.db.selectFrom('destinations').select('server_id').where('id', '=', r.destination_id).executeTakeFirstOrThrow();
  const uuid = newUuid();
  const now = new Date().toISOString();
  await c.s.db
    .insertInto('deployments')
    .values({
      uuid,
      team_id: r.team_id,
      resource_id: r.id,
      server_id: d.server_id,
      kind: 'deploy',
      status: 'queued',
      force: 0,
      logs,
      started_at: null,
      finished_at: null,
      created_at: now,
      updated_at: now,
    })
    .execute();
  return uuid;
}

describe('POST /deploy', () => {
  it('?uuid=a,b (query) queues one deployment per resource and names them', async () => {
    const r = await c.api('POST', `/deploy?uuid=${c.w.appUuid},${c.w.databaseUuid},${c.w.serviceUuid}`, c.deploy);
    expect(r.status, r.text).toBe(200);
    expect(r.json.deployments).toHaveLength(3);
    const byResource = Object.fromEntries(r.json.deployments.map((d: { resource_uuid: string }) => [d.resource_uuid, d]));
    expect(byResource[c.w.appUuid].message).toMatch(/^Application .+ deployment queued\./);
    expect(byResource[c.w.databaseUuid].message).toMatch(/^Database .+ deployment queued\./);
    expect(byResource[c.w.serviceUuid].message).toMatch(/^Service .+ deployment queued\./);
    for (const d of r.json.deployments) {
      expect(d.deployment_uuid).toMatch(/^[a-z0-9]{24}$/);
      // Record-only runtime: the message says nothing will run on an engine, and the deployment
      // ends failed (nothing ran), never finished.
      expect(d.message).toMatch(/did not act on any engine/);
      const done = await finished(c, d.deployment_uuid);
      expect(done).toMatchObject({ status: 'failed', kind: 'deploy', resource_uuid: d.resource_uuid, server_uuid: c.w.serverUuid, finished_at: expect.any(String) });
    }
    // Nor does the resource claim to run.
    expect((await c.api('GET', `/applications/${c.w.appUuid}`, c.read)).json.status).not.toMatch(/^running/);
  });

  it('with a JSON body {uuid} and force', async () => {
    const r = await c.api('POST', '/deploy', c.deploy, { uuid: c.w.appUuid, force: true });
    expect(r.status, r.text).toBe(200);
    expect(r.json.deployments.map((d: { resource_uuid: string }) => d.resource_uuid)).toEqual([c.w.appUuid]);
    expect((await finished(c, r.json.deployments[0].deployment_uuid)).force_rebuild).toBe(true);
    const q = await c.api('POST', `/deploy?uuid=${c.w.appUuid}&force=true`, c.deploy);
    expect(q.status).toBe(200);
    await settle(c.s);
  });

  it('by tag', async () => {
    const { uuid: tagged } = (await c.api('POST', '/applications/dockerimage', c.write, { ...placeOf(c.w), docker_registry_image_name: 'nginx', tags: ['web', 'blue'] })).json;
    const r = await c.api('POST', '/deploy?tag=web', c.deploy);
    expect(r.status).toBe(200);
    expect(r.json.deployments.map((d: { resource_uuid: string }) => d.resource_uuid).sort()).toEqual([c.w.appUuid, tagged].sort());
    const two = await c.api('POST', '/deploy', c.deploy, { tag: 'blue,nothing' });
    expect(two.json.deployments.map((d: { resource_uuid: string }) => d.resource_uuid)).toEqual([tagged]);
    await settle(c.s);
    const none = await c.api('POST', '/deploy?tag=nothing-has-this', c.deploy);
    expect(none.status).toBe(404);
  });

  it('unknown uuids are skipped; only unknown (or another team’s) → 404; nothing queued', async () => {
    const mixed = await c.api('POST', `/deploy?uuid=${c.w.appUuid},doesnotexist000000000000`, c.deploy);
    expect(mixed.status).toBe(200);
    expect(mixed.json.deployments.map((d: { resource_uuid: string }) => d.resource_uuid)).toEqual([c.w.appUuid]);
    await settle(c.s);

    const other = await c.s.team('Deployers Elsewhere');
    const server = (await c.api('POST', '/servers', other.rootToken, { ip: '10.50.0.1' })).json.uuid;
    const project = (await c.api('POST', '/projects', other.rootToken, { name: 'other' })).json.uuid;
    const foreign = (
      await c.api('POST', '/applications/dockerimage', other.rootToken, { project_uuid: project, server_uuid: server, environment_name: 'production', docker_registry_image_name: 'nginx' })
    ).json.uuid;
    const before = await dump(c.s);
    for (const uuid of ['doesnotexist000000000000', foreign, `${foreign},doesnotexist000000000000`]) {
      const r = await c.api('POST', `/deploy?uuid=${uuid}`, c.deploy);
      expect(r.status).toBe(404);
      expect(r.text).toBe(NOT_FOUND);
    }
    expect(await dump(c.s)).toEqual(before);
  });

  it('uuid and tag together, neither, or malformed → 422; nothing queued', async () => {
    const before = await dump(c.s);
    expectValidation(await c.api('POST', `/deploy?uuid=${c.w.appUuid}&tag=web`, c.deploy), ['uuid']);
    expectValidation(await c.api('POST', '/deploy', c.deploy, { uuid: c.w.appUuid, tag: 'web' }), ['uuid']);
    expectValidation(await c.api('POST', '/deploy', c.deploy), ['uuid']);
    expectValidation(await c.api('POST', '/deploy', c.deploy, {}), ['uuid']);
    expectValidation(await c.api('POST', `/deploy?uuid=${encodeURIComponent(`${c.w.appUuid};id`)}`, c.deploy), ['uuid']);
    expectValidation(await c.api('POST', '/deploy', c.deploy, { uuid: `${c.w.appUuid},` }), ['uuid']);
    expectValidation(await c.api('POST', '/deploy', c.deploy, { tag: '$(id)' }), ['tag']);
    expectValidation(await c.api('POST', '/deploy', c.deploy, { uuid: c.w.appUuid, force: 'maybe' }), ['force']);
    expectValidation(await c.api('POST', '/deploy', c.deploy, { uuid: c.w.appUuid, pr: 1 }), ['pr']);
    expect(await dump(c.s)).toEqual(before);
  });

  it('needs the deploy permission (write is not enough)', async () => {
    const r = await c.api('POST', `/deploy?uuid=${c.w.appUuid}`, c.write);
    expect(r.status).toBe(403);
    expect(r.json.missing_permissions).toEqual(['deploy']);
  });
});

describe('deployments', () => {
  it('GET /deployments lists only queued and in-progress ones; GET /deployments/{uuid} any', async () => {
    await settle(c.s);
    expect((await c.api('GET', '/deployments', c.read)).json).toEqual([]);
    const parked = await parkedDeployment(c.w.appUuid);
    const list = await c.api('GET', '/deployments', c.read);
    expect(list.status).toBe(200);
    expect(list.json.map((d: { deployment_uuid: string }) => d.deployment_uuid)).toEqual([parked]);
    expect(list.headers['x-total-count']).toBe('1');
    expect(list.json[0]).toMatchObject({ status: 'queued', resource_uuid: c.w.appUuid, resource_type: 'application' });

    const one = await c.api('GET', `/deployments/${c.w.deploymentUuid}`, c.read);
    expect(one.status).toBe(200);
    expect(one.json).toMatchObject({ deployment_uuid: c.w.deploymentUuid, status: 'failed', resource_uuid: c.w.appUuid });
    expect((await c.api('GET', '/deployments/doesnotexist000000000000', c.read)).text).toBe(NOT_FOUND);

    // Cancelling the parked one answers Coolify's message and ends it.
    const cancel = await c.api('POST', `/deployments/${parked}/cancel`, c.deploy);
    expect(cancel.status).toBe(200);
    // Coolify's name for the state: cancelled-by-user.
    expect(cancel.json).toEqual({ message: 'Deployment cancelled successfully.', deployment_uuid: parked, status: 'cancelled-by-user' });
    expect((await c.api('GET', `/deployments/${parked}`, c.read)).json.status).toBe('cancelled-by-user');
    expect((await c.api('GET', '/deployments', c.read)).json).toEqual([]);
  });

  it('cancelling an ended (or cancelled) deployment is 409 with its status', async () => {
    const r = await c.api('POST', `/deployments/${c.w.deploymentUuid}/cancel`, c.deploy);
    expect(r.status).toBe(409);
    expect(r.json).toEqual({ message: 'Deployment cannot be cancelled. Current status: failed' });
    expect((await c.api('GET', `/deployments/${c.w.deploymentUuid}`, c.read)).json.status).toBe('failed');
    const parked = await parkedDeployment(c.w.appUuid);
    await c.api('POST', `/deployments/${parked}/cancel`, c.deploy);
    const again = await c.api('POST', `/deployments/${parked}/cancel`, c.deploy);
    expect(again.status).toBe(409);
    expect(again.json.message).toBe('Deployment cannot be cancelled. Current status: cancelled');
  });

  it('GET /deployments/applications/{uuid} answers Coolify’s {count, deployments}, newest first, paged by skip and take', async () => {
    const { uuid: app } = (await c.api('POST', '/applications/dockerimage', c.write, { ...placeOf(c.w), docker_registry_image_name: 'nginx' })).json;
    const made: string[] = [];
    for (const action of ['start', 'stop', 'restart', 'start']) {
      made.push((await c.api('POST', `/applications/${app}/${action}`, c.deploy)).json.deployment_uuid);
      await finished(c, made[made.length - 1]!);
    }
    const uuids = (r: { json: { deployments: { deployment_uuid: string }[] } }) => r.json.deployments.map((d) => d.deployment_uuid);
    const all = await c.api('GET', `/deployments/applications/${app}`, c.read);
    expect(all.status).toBe(200);
    expect(all.json.count).toBe(4);
    expect(uuids(all)).toEqual([...made].reverse());
    expect(all.json.deployments.map((d: { kind: string }) => d.kind)).toEqual(['start', 'restart', 'stop', 'start']);
    // skip/take: any offset, not only whole pages; count stays the total.
    const middle = await c.api('GET', `/deployments/applications/${app}?skip=1&take=2`, c.read);
    expect(middle.json).toMatchObject({ count: 4 });
    expect(uuids(middle)).toEqual([made[2], made[1]]);
    const past = await c.api('GET', `/deployments/applications/${app}?skip=9`, c.read);
    expect(past.json).toEqual({ count: 4, deployments: [] });
    // Coolify's default take is 10: eleven deployments answer ten, and count 11.
    for (let n = 0; n < 7; n++) {
      made.push((await c.api('POST', `/applications/${app}/restart`, c.deploy)).json.deployment_uuid);
      await finished(c, made[made.length - 1]!);
    }
    const first = await c.api('GET', `/deployments/applications/${app}`, c.read);
    expect(first.json.count).toBe(11);
    expect(uuids(first)).toEqual([...made].reverse().slice(0, 10));
    expectValidation(await c.api('GET', `/deployments/applications/${app}?take=0`, c.read), ['take']);
    expectValidation(await c.api('GET', `/deployments/applications/${app}?skip=-1`, c.read), ['skip']);
    expectValidation(await c.api('GET', `/deployments/applications/${app}?page=2`, c.read), ['page']);
    expect((await c.api('GET', `/deployments/applications/${c.w.databaseUuid}`, c.read)).text).toBe(NOT_FOUND);
  });

  it('logs are sensitive: absent for read (get and list), present for read:sensitive and root', async () => {
    const secret = 'deploy-log-secret-31337';
    const parked = await parkedDeployment(c.w.appUuid, `step 1\nexport TOKEN=${secret}\n`);
    for (const path of [`/deployments/${parked}`, '/deployments', `/deployments/applications/${c.w.appUuid}`]) {
      const r = await c.api('GET', path, c.read);
      expect(r.status).toBe(200);
      expect(r.text).not.toContain(secret);
      const list = Array.isArray(r.json) ? r.json : r.json.deployments;
      const one = list ? list.find((d: { deployment_uuid: string }) => d.deployment_uuid === parked) : r.json;
      expect(one).toBeDefined();
      expect(one).not.toHaveProperty('logs');
      for (const t of [c.sensitive, c.root]) expect((await c.api('GET', path, t)).text).toContain(secret);
    }
    await c.api('POST', `/deployments/${parked}/cancel`, c.deploy);
  });

  it('long logs are truncated with a marker unless full=true', async () => {
    const parked = await parkedDeployment(c.w.appUuid);
    const long = Array.from({ length: 3000 }, (_, i) => `line ${String(i).padStart(5, '0')} ${'x'.repeat(20)}`).join('\n');
    await c.s.db.updateTable('deployments').set({ logs: long }).where('uuid', '=', parked).execute();

    const short = (await c.api('GET', `/deployments/${parked}`, c.sensitive)).json;
    expect(short.logs_truncated).toBe(true);
    expect(short.logs.length).toBeLessThan(long.length);
    expect(short.logs).toMatch(/^\[… \d+ earlier characters cut; ask with full=true …\]\n/);
    expect(short.logs.endsWith('line 02999 xxxxxxxxxxxxxxxxxxxx')).toBe(true); // the newest lines are kept
    expect(short.logs).not.toContain('line 00000');

    const full = (await c.api('GET', `/deployments/${parked}?full=true`, c.sensitive)).json;
    expect(full.logs_truncated).toBe(false);
    expect(full.logs).toBe(long);
    expect((await c.api('GET', `/deployments/${parked}?full=false`, c.sensitive)).json.logs_truncated).toBe(true);
    expectValidation(await c.api('GET', `/deployments/${parked}?full=yes`, c.sensitive), ['full']);

    // Lists never carry more than the preview.
    const list = (await c.api('GET', '/deployments', c.sensitive)).json.find((d: { deployment_uuid: string }) => d.deployment_uuid === parked);
    expect(list.logs_truncated).toBe(true);
    await c.api('POST', `/deployments/${parked}/cancel`, c.deploy);
  });

  it('a deployment on a record-only server fails, and its log says nothing ran and what to do', async () => {
    const r = (await c.api('GET', `/deployments/${c.w.deploymentUuid}`, c.sensitive)).json;
    expect(r.status).toBe('failed');
    expect(r.logs).toMatch(/berth did not act on any engine\. Validate the server to manage it\./);
  });
});
