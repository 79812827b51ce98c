/**
 * Many HTTP clients at once against one resource, on whichever store the run uses (SQLite, or
 * PostgreSQL with BERTH_TEST_STORE=postgres): every acknowledged write is read back afterwards,
 * a deleted thing stays deleted, and a race answers the contract's 404 or 409, never 500.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setup, type Ctx } from '../resources/support.js';

let c: Ctx;
beforeAll(async () => {
  c = await setup();
}, 60_000);
afterAll(() => c?.stop());

const CLIENTS = 8;
const ROUNDS = 5;
const range = (n: number) => Array.from({ length: n }, (_, i) => i);
const names = (list: Array<{ name: string }>) => list.map((t) => t.name);

describe('no lost update under concurrent clients', () => {
  it('concurrent tag adds on one resource: every acknowledged name is there afterwards, with one record each', async () => {
    const base = `/applications/${c.w.appUuid}/tags`;
    for (const round of range(ROUNDS)) {
      const want = range(CLIENTS).map((i) => `add-${round}-${i}`);
      const replies = await Promise.all(want.map((name) => c.api('POST', base, c.write, { tag_name: name })));
      for (const r of replies) expect(r.status, r.text).toBe(201);
      const onResource = names((await c.api('GET', base, c.read)).json);
      for (const name of want) expect(onResource).toContain(name);
      const records = names((await c.api('GET', '/tags', c.read)).json);
      for (const name of want) expect(records.filter((n) => n === name)).toHaveLength(1);
      // Room for the next round (a resource carries at most 50 tags).
      for (const t of (await c.api('GET', base, c.read)).json as Array<{ uuid: string; name: string }>) {
        if (want.includes(t.name)) expect((await c.api('DELETE', `${base}/${t.uuid}`, c.write)).status).toBe(200);
      }
    }
  });

  it('a tag deleted while another is added stays deleted, and a kept tag keeps its uuid', async () => {
    const base = `/databases/${c.w.databaseUuid}/tags`;
    for (const round of range(ROUNDS * 2)) {
      const seeded = await c.api('POST', base, c.write, { tag_names: [`keep-${round}`, `gone-${round}`] });
      expect(seeded.status).toBe(201);
      const keep = seeded.json.find((t: { name: string }) => t.name === `keep-${round}`);
      const gone = seeded.json.find((t: { name: string }) => t.name === `gone-${round}`);
      const [del, ...adds] = await Promise.all([c.api('DELETE', `/tags/${gone.uuid}`, c.write), ...range(3).map((i) => c.api('POST', base, c.write, { tag_name: `new-${round}-${i}` }))]);
      expect(del!.status, del!.text).toBe(200);
      for (const a of adds) expect(a.status, a.text).toBe(201);
      const records = (await c.api('GET', '/tags', c.read)).json as Array<{ uuid: string; name: string }>;
      expect(names(records)).not.toContain(`gone-${round}`);
      expect(records.find((t) => t.name === `keep-${round}`)?.uuid).toBe(keep.uuid);
      const onResource = names((await c.api('GET', base, c.read)).json);
      expect(onResource).not.toContain(`gone-${round}`);
      expect(onResource).toEqual(expect.arrayContaining([`keep-${round}`, ...range(3).map((i) => `new-${round}-${i}`)]));
      expect((await c.api('GET', `/databases/${c.w.databaseUuid}`, c.read)).json.tags).not.toContain(`gone-${round}`);
      // A rename racing adds keeps every added name and the renamed record's uuid.
      const [renamed, ...more] = await Promise.all([
        c.api('PATCH', `/tags/${keep.uuid}`, c.write, { name: `kept-${round}` }),
        ...range(3).map((i) => c.api('POST', base, c.write, { tag_name: `more-${round}-${i}` })),
      ]);
      expect(renamed!.json).toMatchObject({ uuid: keep.uuid, name: `kept-${round}` });
      for (const a of more) expect(a.status, a.text).toBe(201);
      const after = (await c.api('GET', base, c.read)).json as Array<{ uuid: string; name: string }>;
      expect(after.find((t) => t.name === `kept-${round}`)?.uuid).toBe(keep.uuid);
      expect(names(after)).not.toContain(`keep-${round}`);
      for (const i of range(3)) expect(names(after)).toContain(`more-${round}-${i}`);
      for (const t of after) expect((await c.api('DELETE', `/tags/${t.uuid}`, c.write)).status).toBe(200);
    }
  });

  it('creating environments while the project is deleted answers 201 or 404, never 500, and leaves nothing behind', async () => {
    for (const round of range(ROUNDS * 2)) {
      const p = await c.api('POST', '/projects', c.write, { name: `doomed-${round}` });
      expect(p.status).toBe(201);
      const [del, ...creates] = await Promise.all([
        c.api('DELETE', `/projects/${p.json.uuid}`, c.write),
        ...range(4).map((i) => c.api('POST', `/projects/${p.json.uuid}/environments`, c.write, { name: `env-${i}` })),
      ]);
      expect(del!.status, del!.text).toBe(200);
      for (const r of creates) {
        expect([201, 404], r.text).toContain(r.status);
        if (r.status === 404) expect(r.json).toEqual({ message: 'Resource not found.' });
      }
      expect((await c.api('GET', `/projects/${p.json.uuid}`, c.read)).status).toBe(404);
      const orphans = await c.s.db.selectFrom('environments').select('id').where('name', 'like', 'env-%').execute();
      expect(orphans).toEqual([]);
    }
  });

  it('four concurrent creates of one environment name: one 201, three 409', async () => {
    const p = (await c.api('POST', '/projects', c.write, { name: 'one-name' })).json;
    for (const round of range(ROUNDS * 2)) {
      const replies = await Promise.all(range(4).map(() => c.api('POST', `/projects/${p.uuid}/environments`, c.write, { name: `same-${round}` })));
      const statuses = replies.map((r) => r.status).sort();
      expect(statuses, replies.map((r) => r.text).join('\n')).toEqual([201, 409, 409, 409]);
      for (const r of replies.filter((x) => x.status === 409)) expect(r.json).toEqual({ message: 'Environment with this name already exists.' });
      const made = replies.find((r) => r.status === 201)!.json.uuid;
      const envs = (await c.api('GET', `/projects/${p.uuid}/environments`, c.read)).json as Array<{ uuid: string; name: string }>;
      expect(envs.filter((e) => e.name === `same-${round}`).map((e) => e.uuid)).toEqual([made]);
    }
  });

  it('concurrent env bulk updates: every acknowledged key is stored, a key all of them wrote holds one of their values', async () => {
    const base = `/applications/${c.w.appUuid}/envs`;
    for (const round of range(ROUNDS)) {
      const replies = await Promise.all(
        range(CLIENTS).map((i) =>
          c.api('PATCH', `${base}/bulk`, c.write, {
            data: [
              { key: `SHARED_${round}`, value: `v${i}` },
              { key: `OWN_${round}_${i}`, value: `mine${i}` },
            ],
          }),
        ),
      );
      for (const r of replies) expect(r.status, r.text).toBe(201);
      const envs = (await c.api('GET', base, c.sensitive)).json as Array<{ key: string; value: string }>;
      for (const i of range(CLIENTS)) expect(envs.filter((e) => e.key === `OWN_${round}_${i}`).map((e) => e.value)).toEqual([`mine${i}`]);
      const shared = envs.filter((e) => e.key === `SHARED_${round}`);
      expect(shared).toHaveLength(1);
      expect(range(CLIENTS).map((i) => `v${i}`)).toContain(shared[0]!.value);
    }
  });

  it('concurrent creates of an application env key: one 201, the others 409', async () => {
    const base = `/applications/${c.w.appUuid}/envs`;
    for (const round of range(ROUNDS)) {
      const replies = await Promise.all(range(4).map((i) => c.api('POST', base, c.write, { key: `ONCE_${round}`, value: `v${i}` })));
      expect(replies.map((r) => r.status).sort(), replies.map((r) => r.text).join('\n')).toEqual([201, 409, 409, 409]);
    }
  });

  it('shared variables: concurrent creates all land, one key created four times at once is one 201 and three 409, concurrent edits keep every field', async () => {
    const base = `/projects/${c.w.projectUuid}/envs`;
    for (const round of range(ROUNDS)) {
      const distinct = await Promise.all(range(CLIENTS).map((i) => c.api('POST', base, c.write, { key: `K_${round}_${i}`, value: `v${i}` })));
      for (const r of distinct) expect(r.status, r.text).toBe(201);
      const same = await Promise.all(range(4).map((i) => c.api('POST', base, c.write, { key: `SAME_${round}`, value: `v${i}` })));
      expect(same.map((r) => r.status).sort(), same.map((r) => r.text).join('\n')).toEqual([201, 409, 409, 409]);
      const list = (await c.api('GET', base, c.sensitive)).json as Array<{ id: number; key: string; value: string; comment: string | null }>;
      for (const [i, r] of distinct.entries()) expect(list.find((e) => e.id === r.json.id)).toMatchObject({ key: `K_${round}_${i}`, value: `v${i}` });
      expect(list.filter((e) => e.key === `SAME_${round}`)).toHaveLength(1);
      // One client changes the value, another the comment, of one variable at once: both hold.
      const id = distinct[0]!.json.id;
      const [a, b] = await Promise.all([c.api('PATCH', `${base}/${id}`, c.write, { value: `changed-${round}` }), c.api('PATCH', `${base}/${id}`, c.write, { comment: `note-${round}` })]);
      expect([a!.status, b!.status]).toEqual([201, 201]);
      const row = ((await c.api('GET', base, c.sensitive)).json as Array<{ id: number; value: string; comment: string | null }>).find((e) => e.id === id);
      expect(row).toMatchObject({ value: `changed-${round}`, comment: `note-${round}` });
    }
  });

  it('concurrent PATCHes of different fields of one application or database all land', async () => {
    for (const round of range(ROUNDS)) {
      const app = `/applications/${c.w.appUuid}`;
      const db = `/databases/${c.w.databaseUuid}`;
      const replies = await Promise.all([
        c.api('PATCH', app, c.write, { name: `app-${round}` }),
        c.api('PATCH', app, c.write, { description: `described-${round}` }),
        c.api('PATCH', app, c.write, { ports_exposes: String(3000 + round) }),
        c.api('PATCH', app, c.write, { limits_memory: `${64 + round}m` }),
        c.api('PATCH', db, c.write, { name: `db-${round}` }),
        c.api('PATCH', db, c.write, { description: `db-described-${round}` }),
        c.api('PATCH', db, c.write, { limits_cpus: `0.${round + 1}` }),
      ]);
      for (const r of replies) expect(r.status, r.text).toBe(200);
      expect((await c.api('GET', app, c.read)).json).toMatchObject({ name: `app-${round}`, description: `described-${round}`, ports_exposes: String(3000 + round), limits_memory: `${64 + round}m` });
      expect((await c.api('GET', db, c.read)).json).toMatchObject({ name: `db-${round}`, description: `db-described-${round}`, limits_cpus: `0.${round + 1}` });
    }
  });
});
