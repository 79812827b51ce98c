/**
 * PATCH /{applications,databases,services}/{uuid}/envs/bulk (Coolify's bulk update): creates or
 * changes each variable by key in one transaction, so a bad item changes nothing; the same key
 * twice is refused; another team's resource is a 404 like a missing one.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setup, type Ctx } from './support.js';

let c: Ctx;
beforeAll(async () => {
  c = await setup();
});
afterAll(() => c.stop());

const keysOf = async (collection: string, uuid: string) =>
  Object.fromEntries(((await c.api('GET', `/${collection}/${uuid}/envs`, c.root)).json as Array<{ key: string; value: string; is_literal: boolean }>).map((e) => [e.key, e]));

describe.each([
  ['applications', () => c.w.appUuid, 'API_KEY'],
  ['databases', () => c.w.databaseUuid, 'PGTZ'],
  ['services', () => c.w.serviceUuid, 'MODE'],
] as const)('%s envs bulk', (collection, uuidOf, existing) => {
  it('creates new keys and changes existing ones, answering every variable it wrote', async () => {
    const uuid = uuidOf();
    const r = await c.api('PATCH', `/${collection}/${uuid}/envs/bulk`, c.write, {
      data: [
        { key: existing, value: 'changed-in-bulk', is_literal: true },
        { key: 'BULK_NEW', value: 'fresh' },
      ],
    });
    expect(r.status).toBe(201);
    expect((r.json as Array<{ key: string }>).map((e) => e.key)).toEqual([existing, 'BULK_NEW']);
    const now = await keysOf(collection, uuid);
    expect(now[existing]).toMatchObject({ value: 'changed-in-bulk', is_literal: true });
    expect(now.BULK_NEW).toMatchObject({ value: 'fresh', is_literal: false });
    // A write token's answer carries no values (read:sensitive is not part of write).
    expect(JSON.stringify(r.json)).not.toContain('changed-in-bulk');
  });

  it('changes nothing when one item is bad, and names it', async () => {
    const uuid = uuidOf();
    const before = await keysOf(collection, uuid);
    const bad = await c.api('PATCH', `/${collection}/${uuid}/envs/bulk`, c.write, {
      data: [
        { key: 'ALL_OR_NONE', value: 'x' },
        { key: 'not a key!', value: 'y' },
      ],
    });
    expect(bad.status).toBe(422);
    expect(Object.keys(bad.json.errors)).toEqual(['data.1.key']);
    const twice = await c.api('PATCH', `/${collection}/${uuid}/envs/bulk`, c.write, {
      data: [
        { key: 'TWICE', value: '1' },
        { key: 'TWICE', value: '2' },
      ],
    });
    expect(twice.status).toBe(422);
    expect(twice.json.errors).toEqual({ 'data.1.key': ['TWICE is also data.0; give each key once.'] });
    expect((await c.api('PATCH', `/${collection}/${uuid}/envs/bulk`, c.write, { data: [] })).status).toBe(422);
    expect(await keysOf(collection, uuid)).toEqual(before);
  });

  it("is a 404 for another team's resource as for a missing one; read tokens may not", async () => {
    const other = await c.s.team(`Bulk ${collection}`);
    const body = { data: [{ key: 'X', value: 'y' }] };
    const foreign = await c.api('PATCH', `/${collection}/${uuidOf()}/envs/bulk`, other.rootToken, body);
    const missing = await c.api('PATCH', `/${collection}/nosuchresource/envs/bulk`, other.rootToken, body);
    expect(foreign.status).toBe(404);
    expect(foreign.json).toEqual(missing.json);
    expect((await c.api('PATCH', `/${collection}/${uuidOf()}/envs/bulk`, c.read, body)).status).toBe(403);
  });
});
