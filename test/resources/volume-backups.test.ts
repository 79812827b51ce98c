/**
 * Storage (volume) backup schedules as Coolify's: PUT creates or changes, DELETE removes, run
 * starts one; berth's GET shows the schedule and its runs. Team-scoped through the resource, and
 * a storage of another resource is as missing as one that does not exist.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NOT_FOUND, setup, type Ctx } from './support.js';

let c: Ctx;
beforeAll(async () => {
  c = await setup();
});
afterAll(() => c.stop());

const path = () => `/applications/${c.w.appUuid}/storages/${c.w.appStorageUuid}/backups`;

describe('storage backups', () => {
  it('PUT changes the schedule (the world made one) and answers it; GET shows it with its runs', async () => {
    const r = await c.api('PUT', path(), c.write, { frequency: 'hourly', retention_amount_locally: 5, stop_during_backup: true });
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({
      message: 'Storage backup schedule updated.',
      storage_uuid: c.w.appStorageUuid,
      storage_type: 'persistent',
      frequency: 'hourly',
      enabled: true,
      retention_amount_locally: 5,
      stop_during_backup: true,
      save_s3: false,
      timeout: 3600,
    });
    const g = await c.api('GET', path(), c.read);
    expect(g.json).toMatchObject({ uuid: r.json.uuid, frequency: 'hourly', executions: [] });
  });

  it('a run on a server berth cannot reach is recorded as failed with the reason; its tool output needs read:sensitive', async () => {
    const run = await c.api('POST', `${path()}/run`, c.write);
    expect(run.status).toBe(200);
    expect(run.json).toMatchObject({ message: 'Storage backup queued.', execution_uuid: expect.any(String) });
    let e: any;
    for (let i = 0; i < 50; i++) {
      e = (await c.api('GET', path(), c.sensitive)).json.executions.find((x: { uuid: string }) => x.uuid === run.json.execution_uuid);
      if (e?.status !== 'running') break;
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(e).toMatchObject({ status: 'failed', message: expect.stringContaining('no engine berth can reach'), logs: expect.any(String) });
    const plain = (await c.api('GET', path(), c.read)).json.executions.find((x: { uuid: string }) => x.uuid === run.json.execution_uuid);
    expect(plain).not.toHaveProperty('logs');
  });

  it('a bad frequency, S3 uploads and unknown fields are 422 and change nothing; DELETE removes it and run then 404s', async () => {
    const before = (await c.api('GET', path(), c.read)).json;
    for (const body of [{ frequency: 'sometimes' }, { frequency: 'daily', save_s3: true }, { frequency: 'daily', timeout: 5 }, { frequency: 'daily', keep: 3 }, {}]) {
      expect((await c.api('PUT', path(), c.write, body)).status, JSON.stringify(body)).toBe(422);
    }
    const { executions: _a, ...kept } = (await c.api('GET', path(), c.read)).json;
    const { executions: _b, ...was } = before;
    expect(kept).toEqual(was);
    const other = `/databases/${c.w.databaseUuid}/storages/${c.w.databaseStorageUuid}/backups`;
    expect((await c.api('DELETE', other, c.write)).json).toEqual({ message: 'Storage backup schedule deleted.' });
    expect((await c.api('POST', `${other}/run`, c.write)).text).toBe(NOT_FOUND);
    expect((await c.api('GET', other, c.read)).text).toBe(NOT_FOUND);
    expect((await c.api('PUT', other, c.write, { frequency: 'daily' })).json.message).toBe('Storage backup schedule created.');
  });

  it("another team's resource, or a storage of another resource, is the same 404 as a missing one; a read token cannot write", async () => {
    const neighbour = await c.s.team('volume-backup-neighbour');
    for (const [m, p, body] of [
      ['GET', path()],
      ['PUT', path(), { frequency: 'daily' }],
      ['DELETE', path()],
      ['POST', `${path()}/run`],
    ] as const) {
      const r = await c.api(m, p, neighbour.rootToken, body);
      expect(r.status, `${m} ${p}`).toBe(404);
      expect(r.text).toBe(NOT_FOUND);
    }
    // The database's storage under the application's path.
    const crossed = await c.api('GET', `/applications/${c.w.appUuid}/storages/${c.w.databaseStorageUuid}/backups`, c.read);
    expect(crossed.text).toBe(NOT_FOUND);
    expect((await c.api('PUT', path(), c.read, { frequency: 'daily' })).status).toBe(403);
  });
});
