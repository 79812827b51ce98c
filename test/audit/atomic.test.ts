import fs from 'node:fs';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assembleCore, type Assembled } from '../../src/assemble.js';
import { loadConfig } from '../../src/config/config.js';
import * as admin from '../../src/core/admin.js';
import type { Caller } from '../../src/core/caller.js';
import type { Operation } from '../../src/core/operation.js';
import { operations } from '../../src/core/operations/index.js';
import { BerthError } from '../../src/errors.js';
import { openStore, type Db } from '../../src/store/db.js';
import { tempDir } from '../helpers/server.js';
import { refusingAuditInserts } from '../helpers/audit-refusal.js';
import { storeUrlFor } from '../helpers/store.js';

/**
 * A store-only call's audit entry is written in the call's own transaction (issue 26, item 1):
 * the change and its `ok` entry commit together or not at all. Through the real core on a real
 * store (the one BERTH_TEST_STORE names); the entry's insert is made to fail by a trigger.
 */

let dataDir: string;
let db: Db;
let assembled: Assembled;
let caller: Caller;
let projectUuid: string;
const logged: Record<string, unknown>[] = [];

const updateProject = operations.find((o) => o.name === 'update_project')!;
const createProject = operations.find((o) => o.name === 'create_project')!;

const description = async () => (await db.selectFrom('projects').select('description').where('uuid', '=', projectUuid).executeTakeFirstOrThrow()).description;
const entries = () => db.selectFrom('audit_log').select(['operation', 'result', 'targets']).where('operation', '=', 'update_project').orderBy('id').execute();

beforeAll(async () => {
  dataDir = tempDir('berth-audit-atomic-');
  db = await openStore(dataDir, storeUrlFor(dataDir));
  const init = await admin.initInstance(db, { email: 'owner@example.test', team: 'Root Team' });
  const config = loadConfig({ LOG_LEVEL: 'silent' }, { dataDir, databaseUrl: storeUrlFor(dataDir), host: '127.0.0.1', port: 0 });
  const sink = new Writable({
    write(chunk, _enc, done) {
      for (const line of String(chunk).split('\n')) if (line) logged.push(JSON.parse(line));
      done();
    },
  });
  assembled = assembleCore(db, config, pino({ level: 'info' }, sink));
  caller = await assembled.core.identify({ authorization: `Bearer ${init.token}`, sourceIp: '127.0.0.1' });
  projectUuid = ((await assembled.core.run(createProject, caller, { name: 'atomic' })) as { uuid: string }).uuid;
});
afterAll(async () => {
  await assembled?.close();
  await db?.destroy();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

describe('audit entry in the change transaction', () => {
  it('is declared for store-only operations, and commits with the change', async () => {
    expect(updateProject.storeOnly).toBe(true);
    await assembled.core.run(updateProject, caller, { uuid: projectUuid, description: 'one' });
    expect(await description()).toBe('one');
    expect(await entries()).toEqual([{ operation: 'update_project', result: 'ok', targets: JSON.stringify([projectUuid]) }]);
  });

  it('leaves no ok entry for a change whose transaction rolls back, only the failure', async () => {
    // update_project's own write, then a failure later in the same call: the write rolls back.
    const failingLater: Operation = {
      ...updateProject,
      async run(ctx, input) {
        await updateProject.run(ctx, input);
        throw new BerthError('conflict', { message: 'failed after its write' });
      },
    };
    const before = (await entries()).length;
    await expect(assembled.core.run(failingLater, caller, { uuid: projectUuid, description: 'rolled back' })).rejects.toMatchObject({ kind: 'conflict' });
    expect(await description()).toBe('one');
    const added = (await entries()).slice(before);
    expect(added.map((e) => e.result)).toEqual(['conflict']);
  });

  it('applies no change whose entry cannot be written: the call fails and says so in the log', async () => {
    const before = (await entries()).length;
    logged.length = 0;
    await refusingAuditInserts(db, async () => {
      await expect(assembled.core.run(updateProject, caller, { uuid: projectUuid, description: 'unaudited' })).rejects.toThrow(/audit refused/);
    });
    expect(await description()).toBe('one');
    expect((await entries()).length).toBe(before);
    // The failure's own entry could not be stored either: it is in the operational log, redacted.
    const line = logged.find((l) => l.msg === 'audit: could not store an entry') as { level: number; audit: Record<string, unknown> } | undefined;
    expect(line?.level).toBe(50);
    expect(line?.audit).toMatchObject({ operation: 'update_project', result: 'internal', status: 500 });

    // With inserts working again, the same call applies and is audited once.
    await assembled.core.run(updateProject, caller, { uuid: projectUuid, description: 'two' });
    expect(await description()).toBe('two');
    expect((await entries()).slice(before).map((e) => e.result)).toEqual(['ok']);
  });

  it('concurrent calls on one row: each applied change has exactly one entry (on PostgreSQL they conflict and are retried)', async () => {
    const before = (await entries()).length;
    const results = await Promise.allSettled(Array.from({ length: 12 }, (_, i) => assembled.core.run(updateProject, caller, { uuid: projectUuid, description: `racer-${i}` })));
    const applied = results.filter((r) => r.status === 'fulfilled').length;
    expect(applied).toBe(12);
    const added = (await entries()).slice(before);
    expect(added.map((e) => e.result)).toEqual(Array(12).fill('ok'));
    expect(await description()).toMatch(/^racer-\d+$/);
  });
});
