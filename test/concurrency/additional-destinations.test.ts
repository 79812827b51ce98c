/**
 * Concurrent adds of additional destinations (on whichever store the run uses; PostgreSQL with
 * BERTH_TEST_STORE=postgres): the unique constraints decide, so the same destination added by
 * many clients at once is one 201 and 409s, two destinations on one server at once leave one, and
 * the store never holds a duplicate. Never a 500.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setup, type Ctx } from '../resources/support.js';

let c: Ctx;
beforeAll(async () => {
  c = await setup();
}, 60_000);
afterAll(() => c?.stop());

const range = (n: number) => Array.from({ length: n }, (_, i) => i);

describe('additional destinations under concurrent clients', () => {
  it('the same destination added by eight clients at once: one 201, seven 409, one row; then again after a remove', async () => {
    const base = `/applications/${c.w.appUuid}/destinations`;
    for (const round of range(4)) {
      const replies = await Promise.all(range(8).map(() => c.api('POST', base, c.write, { destination_uuid: c.w.destination2Uuid })));
      const statuses = replies.map((r) => r.status).sort();
      expect(statuses, replies.map((r) => r.text).join('\n')).toEqual([201, ...range(7).map(() => 409)]);
      for (const r of replies.filter((x) => x.status === 409)) expect(r.json).toEqual({ message: 'Destination is already attached.' });
      const list = (await c.api('GET', base, c.read)).json as Array<{ uuid: string; is_primary: boolean }>;
      expect(list.filter((d) => !d.is_primary).map((d) => d.uuid)).toEqual([c.w.destination2Uuid]);
      const rows = await c.s.db.selectFrom('application_destinations').selectAll().execute();
      expect(rows, `round ${round}`).toHaveLength(1);
      expect((await c.api('DELETE', `${base}/${c.w.destination2Uuid}`, c.write)).status).toBe(200);
    }
  });

  it('two destinations of one server added at once: one is attached, the other refused (422 or 409), never both', async () => {
    const base = `/applications/${c.w.appUuid}/destinations`;
    const server2 = (await c.api('GET', `/destinations/${c.w.destination2Uuid}`, c.read)).json.server_uuid as string;
    const extra = await c.api('POST', `/servers/${server2}/destinations`, c.write, { network: 'extra-net' });
    expect(extra.status, extra.text).toBe(201);
    for (const _ of range(4)) {
      const [x, y] = await Promise.all([c.api('POST', base, c.write, { destination_uuid: c.w.destination2Uuid }), c.api('POST', base, c.write, { destination_uuid: extra.json.uuid })]);
      const won = [x!, y!].filter((r) => r.status === 201);
      expect(won, `${x!.text} ${y!.text}`).toHaveLength(1);
      for (const r of [x!, y!].filter((r) => r.status !== 201)) expect([409, 422], r.text).toContain(r.status);
      const rows = await c.s.db.selectFrom('application_destinations').selectAll().execute();
      expect(rows).toHaveLength(1);
      const attached = (await c.api('GET', base, c.read)).json.find((d: { is_primary: boolean }) => !d.is_primary).uuid;
      expect((await c.api('DELETE', `${base}/${attached}`, c.write)).status).toBe(200);
    }
  });
});
