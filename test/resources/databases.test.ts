import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dump, expectRecordOnlyLifecycle, expectValidation, NOT_FOUND, placeOf, setup, type Ctx } from './support.js';

let c: Ctx;
beforeAll(async () => {
  c = await setup();
});
afterAll(() => c.stop());

/** Per type: a body with explicit secrets, what GET shows, and Coolify's defaults. */
const TYPES = {
  postgresql: {
    body: { postgres_user: 'app', postgres_password: 'pg-secret-1234', postgres_db: 'shop' },
    passwords: ['postgres_password'],
    url: /^postgres:\/\/app:pg-secret-1234@[a-z0-9]{24}:5432\/shop$/,
    image: 'postgres:16-alpine',
    dataDir: '/var/lib/postgresql/data',
    defaults: { postgres_user: 'postgres', postgres_db: 'postgres' },
  },
  mysql: {
    body: { mysql_root_password: 'my-root-secret-1', mysql_user: 'app', mysql_password: 'my-secret-1234', mysql_database: 'shop' },
    passwords: ['mysql_root_password', 'mysql_password'],
    url: /^mysql:\/\/app:my-secret-1234@[a-z0-9]{24}:3306\/shop$/,
    image: 'mysql:8',
    dataDir: '/var/lib/mysql',
    defaults: { mysql_user: 'mysql', mysql_database: 'default' },
  },
  mariadb: {
    body: { mariadb_root_password: 'ma-root-secret-1', mariadb_user: 'app', mariadb_password: 'ma-secret-1234', mariadb_database: 'shop' },
    passwords: ['mariadb_root_password', 'mariadb_password'],
    url: /^mysql:\/\/app:ma-secret-1234@[a-z0-9]{24}:3306\/shop$/,
    image: 'mariadb:11',
    dataDir: '/var/lib/mysql',
    defaults: { mariadb_user: 'mariadb', mariadb_database: 'default' },
  },
  redis: {
    body: { redis_password: 'redis-secret-1234' },
    passwords: ['redis_password'],
    url: /^redis:\/\/default:redis-secret-1234@[a-z0-9]{24}:6379\/0$/,
    image: 'redis:7.2',
    dataDir: '/data',
    defaults: {},
  },
  mongodb: {
    body: { mongo_initdb_root_username: 'admin', mongo_initdb_root_password: 'mongo-secret-1234', mongo_initdb_database: 'shop' },
    passwords: ['mongo_initdb_root_password'],
    url: /^mongodb:\/\/admin:mongo-secret-1234@[a-z0-9]{24}:27017\/\?directConnection=true$/,
    image: 'mongo:7',
    dataDir: '/data/db',
    defaults: { mongo_initdb_root_username: 'root', mongo_initdb_database: 'default' },
  },
  clickhouse: {
    body: { clickhouse_admin_user: 'admin', clickhouse_admin_password: 'ch-secret-1234' },
    passwords: ['clickhouse_admin_password'],
    url: /^clickhouse:\/\/admin:ch-secret-1234@[a-z0-9]{24}:9000\/default$/,
    image: 'clickhouse/clickhouse-server:25.11',
    dataDir: '/var/lib/clickhouse',
    defaults: { clickhouse_admin_user: 'default' },
  },
  dragonfly: {
    body: { dragonfly_password: 'df-secret-1234' },
    passwords: ['dragonfly_password'],
    url: /^redis:\/\/:df-secret-1234@[a-z0-9]{24}:6379\/0$/,
    image: 'docker.dragonflydb.io/dragonflydb/dragonfly',
    dataDir: '/data',
    defaults: {},
  },
  keydb: {
    body: { keydb_password: 'keydb-secret-1234' },
    passwords: ['keydb_password'],
    url: /^redis:\/\/:keydb-secret-1234@[a-z0-9]{24}:6379\/0$/,
    image: 'eqalpha/keydb:latest',
    dataDir: '/data',
    defaults: {},
  },
} as const;

type Kind = keyof typeof TYPES;
const KINDS = Object.keys(TYPES) as Kind[];
const created: Partial<Record<Kind, string>> = {};

describe.each(KINDS)('%s', (kind) => {
  const t = TYPES[kind];

  it('create → 201 {uuid, internal_db_url} (the URL only for sensitive readers); GET has Coolify’s fields', async () => {
    const r = await c.api('POST', `/databases/${kind}`, c.root, { ...placeOf(c.w), name: `${kind}-main`, ...t.body });
    expect(r.status, r.text).toBe(201);
    expect(Object.keys(r.json).sort()).toEqual(['internal_db_url', 'uuid']);
    expect(r.json.internal_db_url).toMatch(t.url);
    expect(r.json.internal_db_url).toContain(r.json.uuid);
    created[kind] = r.json.uuid;

    const got = await c.api('GET', `/databases/${r.json.uuid}`, c.sensitive);
    expect(got.status).toBe(200);
    expect(got.json).toMatchObject({
      uuid: r.json.uuid,
      name: `${kind}-main`,
      database_type: `standalone-${kind}`,
      image: t.image,
      status: 'exited',
      is_public: false,
      public_port: null,
      internal_db_url: r.json.internal_db_url,
      ...t.body,
      server_uuid: c.w.serverUuid,
      destination_uuid: c.w.destinationUuid,
      project_uuid: c.w.projectUuid,
    });
    // A persistent volume for the data directory comes with it.
    const st = await c.api('GET', `/databases/${r.json.uuid}/storages`, c.read);
    expect(st.json.persistent_storages).toEqual([expect.objectContaining({ name: 'data', mount_path: t.dataDir, volume_name: `${r.json.uuid}-data` })]);
  });

  it('a write token gets {uuid} without the URL; defaults are Coolify’s and passwords random', async () => {
    const r = await c.api('POST', `/databases/${kind}`, c.write, placeOf(c.w));
    expect(r.status).toBe(201);
    expect(r.json).toEqual({ uuid: expect.stringMatching(/^[a-z0-9]{24}$/) });
    const got = (await c.api('GET', `/databases/${r.json.uuid}`, c.root)).json;
    expect(got).toMatchObject({ name: `${kind}-database-${r.json.uuid}`, image: t.image, ...t.defaults });
    for (const p of t.passwords) expect(got[p]).toMatch(/^[A-Za-z0-9]{32}$/);
    expect(got.internal_db_url).toContain(got[t.passwords[t.passwords.length - 1]!]);
  });

  it('passwords and internal_db_url are absent for read, in every view', async () => {
    const uuid = created[kind]!;
    const secrets = [...t.passwords.map((p) => (t.body as Record<string, string>)[p]!)];
    for (const path of [`/databases/${uuid}`, '/databases', '/resources', `/servers/${c.w.serverUuid}/resources`]) {
      const r = await c.api('GET', path, c.read);
      expect(r.status).toBe(200);
      for (const s of secrets) expect(r.text, path).not.toContain(s);
      expect(r.text).not.toContain('internal_db_url');
      const one = Array.isArray(r.json) ? r.json.find((x: { uuid: string }) => x.uuid === uuid) : r.json;
      for (const p of t.passwords) expect(one).not.toHaveProperty(p);
    }
    const list = await c.api('GET', '/databases', c.sensitive);
    const one = list.json.find((x: { uuid: string }) => x.uuid === uuid);
    for (const p of t.passwords) expect(one[p]).toBe((t.body as Record<string, string>)[p]);
    expect(one.internal_db_url).toMatch(t.url);
  });

  it('PATCH → 200 {"message":"Database updated."}; another type’s fields are 422', async () => {
    const uuid = created[kind]!;
    const pw = t.passwords[0]!;
    const p = await c.api('PATCH', `/databases/${uuid}`, c.write, {
      name: `${kind}-renamed`,
      [pw]: 'rotated-secret-99',
      image: `${t.image.split(':')[0]}:latest`,
      public_port: 15432,
      is_public: true,
    });
    expect(p.status, p.text).toBe(200);
    expect(p.json).toEqual({ message: 'Database updated.' });
    const got = (await c.api('GET', `/databases/${uuid}`, c.root)).json;
    expect(got).toMatchObject({ name: `${kind}-renamed`, [pw]: 'rotated-secret-99', is_public: true, public_port: 15432 });
    const foreignField = kind === 'redis' ? 'postgres_password' : 'redis_password';
    const before = await dump(c.s);
    expectValidation(await c.api('PATCH', `/databases/${uuid}`, c.write, { [foreignField]: 'whatever-123' }), [foreignField]);
    expect(await dump(c.s)).toEqual(before);
  });

  it('start, stop, restart on a record-only server: failed deployments, status unchanged (deploy permission)', async () => {
    await expectRecordOnlyLifecycle(c, 'databases', created[kind]!, ['start', 'stop', 'restart']);
  });
});

describe('databases: common rules', () => {
  it('list is a bare array of all five types with their database_type', async () => {
    const r = await c.api('GET', '/databases', c.read);
    expect(r.status).toBe(200);
    expect(Number(r.headers['x-total-count'])).toBe(r.json.length);
    const types = new Set(r.json.map((d: { database_type: string }) => d.database_type));
    for (const k of KINDS) expect(types).toContain(`standalone-${k}`);
    const res = await c.api('GET', '/resources', c.read);
    for (const k of KINDS) expect(res.json.find((x: { uuid: string }) => x.uuid === created[k])?.type).toBe(`standalone-${k}`);
  });

  it('injection and unknown fields are rejected; nothing stored', async () => {
    const before = await dump(c.s);
    const base = placeOf(c.w);
    const cases: [string, Record<string, unknown>, string[]][] = [
      ['postgresql', { ...base, name: 'main;id' }, ['name']],
      ['postgresql', { ...base, postgres_password: "pa'ss word" }, ['postgres_password']],
      ['postgresql', { ...base, postgres_password: '$(id)xxxxxx' }, ['postgres_password']],
      ['postgresql', { ...base, postgres_password: '' }, ['postgres_password']],
      ['postgresql', { ...base, postgres_user: 'u;id' }, ['postgres_user']],
      ['postgresql', { ...base, postgres_db: '../x' }, ['postgres_db']],
      ['postgresql', { ...base, image: 'postgres:16;id' }, ['image']],
      ['postgresql', { ...base, image: 'postgres $(id)' }, ['image']],
      ['postgresql', { ...base, public_port: 80 }, ['public_port']],
      ['postgresql', { ...base, mysql_password: 'not-for-postgres' }, ['mysql_password']],
      ['redis', { ...base, redis_conf: 'bWF4bWVtb3J5IDEwMG1i' }, ['redis_conf']],
      ['mysql', { ...base, uuid: 'x', team_id: 1, id: 1 }, ['uuid', 'team_id', 'id']],
      ['mongodb', { ...base, mongo_initdb_root_username: 'a b' }, ['mongo_initdb_root_username']],
      ['mariadb', { ...base, mariadb_password: 'with"quote' }, ['mariadb_password']],
      ['keydb', { ...base, keydb_password: 'has space 123' }, ['keydb_password']],
      ['clickhouse', { ...base, clickhouse_admin_user: 'x-y', redis_password: 'not-for-clickhouse' }, ['clickhouse_admin_user', 'redis_password']],
      ['dragonfly', { ...base, dragonfly_password: 'has space' }, ['dragonfly_password']],
    ];
    for (const [kind, body, fields] of cases) expectValidation(await c.api('POST', `/databases/${kind}`, c.write, body), fields);
    const nope = await c.api('POST', '/databases/cassandra', c.write, base);
    // /databases/cassandra is /databases/{uuid}: a known path without POST.
    expect(nope.status).toBe(405);
    expect(nope.headers.allow).not.toContain('POST');
    expect(await dump(c.s)).toEqual(before);
  });

  it('a database can take storages and envs like applications; DELETE removes it', async () => {
    const { uuid } = (await c.api('POST', '/databases/redis', c.write, placeOf(c.w))).json;
    const st = await c.api('POST', `/databases/${uuid}/storages`, c.write, { type: 'persistent', name: 'backup', mount_path: '/backup' });
    expect(st.status).toBe(201);
    expectValidation(await c.api('POST', `/databases/${uuid}/storages`, c.write, { type: 'persistent', name: 'x', mount_path: 'backup' }), ['mount_path']);
    const env = await c.api('POST', `/databases/${uuid}/envs`, c.write, { key: 'REDIS_ARGS', value: 'db-env-secret' });
    expect(env.status).toBe(201);
    const envs = await c.api('GET', `/databases/${uuid}/envs`, c.read);
    expect(envs.json).toEqual([expect.not.objectContaining({ value: expect.anything() })]);
    expect(envs.text).not.toContain('db-env-secret');
    const dup = await c.api('POST', `/databases/${uuid}/envs`, c.write, { key: 'REDIS_ARGS', value: 'x' });
    expect(dup.status).toBe(409);
    const del = await c.api('DELETE', `/databases/${uuid}`, c.write);
    expect(del.status).toBe(200);
    expect(del.json).toEqual({ message: 'Database deleted.' });
    expect((await c.api('GET', `/databases/${uuid}`, c.read)).text).toBe(NOT_FOUND);
    expect(await c.s.db.selectFrom('storages').select('id').where('uuid', '=', st.json.uuid).execute()).toEqual([]);
  });

  it('is_public needs a public_port: forced false without one, and when the port is removed', async () => {
    const a = await c.api('POST', '/databases/postgresql', c.write, { ...placeOf(c.w), is_public: true });
    expect((await c.api('GET', `/databases/${a.json.uuid}`, c.read)).json).toMatchObject({ is_public: false, public_port: null });
    const b = await c.api('POST', '/databases/postgresql', c.write, { ...placeOf(c.w), is_public: true, public_port: 25432 });
    expect((await c.api('GET', `/databases/${b.json.uuid}`, c.read)).json).toMatchObject({ is_public: true, public_port: 25432 });
    expect((await c.api('PATCH', `/databases/${b.json.uuid}`, c.write, { public_port: null })).status).toBe(200);
    expect((await c.api('GET', `/databases/${b.json.uuid}`, c.read)).json).toMatchObject({ is_public: false, public_port: null });
  });

  it('an application uuid is not a database', async () => {
    expect((await c.api('GET', `/databases/${c.w.appUuid}`, c.read)).text).toBe(NOT_FOUND);
    expect((await c.api('PATCH', `/databases/${c.w.appUuid}`, c.write, { name: 'x' })).text).toBe(NOT_FOUND);
  });
});

describe('redis_password', () => {
  it('has no minimum length, as in Coolify', async () => {
    const r = await c.api('POST', '/databases/redis', c.write, { ...placeOf(c.w), redis_password: 'k' });
    expect(r.status, r.text).toBe(201);
    expect((await c.api('GET', `/databases/${r.json.uuid}`, c.sensitive)).json.redis_password).toBe('k');
  });
});
