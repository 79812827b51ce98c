import fs from 'node:fs';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assembleCore, type Assembled } from '../../src/assemble.js';
import { loadConfig } from '../../src/config/config.js';
import * as admin from '../../src/core/admin.js';
import type { Caller } from '../../src/core/caller.js';
import { operations } from '../../src/core/operations/index.js';
import { partUuid } from '../../src/core/operations/service-parts.js';
import { openStore, type Db } from '../../src/store/db.js';
import { COMPOSE } from '../helpers/world.js';
import { tempDir } from '../helpers/server.js';
import { refusingAuditInserts } from '../helpers/audit-refusal.js';
import { storeUrlFor } from '../helpers/store.js';

/**
 * Operations declared store-only since clone's transaction joins the call's (atomically()): a
 * sample of them commits with its entry or not at all, on the store BERTH_TEST_STORE names.
 * The entry's insert is made to fail by a trigger, as in atomic.test.ts.
 */

let dataDir: string;
let db: Db;
let assembled: Assembled;
let caller: Caller;
let serviceUuid: string;
let destinationUuid: string;

const op = (name: string) => operations.find((o) => o.name === name)!;
const run = (name: string, input: unknown) => assembled.core.run(op(name), caller, input) as Promise<Record<string, unknown>>;
const count = async (table: 'resources' | 'cloud_init_scripts' | 'storages') =>
  Number(
    (
      await db
        .selectFrom(table)
        .select((eb) => eb.fn.countAll().as('n'))
        .executeTakeFirstOrThrow()
    ).n,
  );
const results = async (operation: string) => (await db.selectFrom('audit_log').select('result').where('operation', '=', operation).orderBy('id').execute()).map((r) => r.result);
const compose = async () => (await db.selectFrom('resources').select('config').where('uuid', '=', serviceUuid).executeTakeFirstOrThrow()).config;

beforeAll(async () => {
  dataDir = tempDir('berth-audit-store-only-');
  db = await openStore(dataDir, storeUrlFor(dataDir));
  const init = await admin.initInstance(db, { email: 'owner@example.test', team: 'Root Team' });
  const config = loadConfig({ LOG_LEVEL: 'silent' }, { dataDir, databaseUrl: storeUrlFor(dataDir), host: '127.0.0.1', port: 0 });
  assembled = assembleCore(db, config, pino({ level: 'silent' }));
  caller = await assembled.core.identify({ authorization: `Bearer ${init.token}`, sourceIp: '127.0.0.1' });
  // A record-only server (no key, no engine endpoint): nothing here reaches an engine.
  const serverUuid = (await run('create_server', { name: 'records', ip: '10.0.0.1' })).uuid as string;
  destinationUuid = (await db.selectFrom('destinations').select('uuid').executeTakeFirstOrThrow()).uuid;
  const projectUuid = (await run('create_project', { name: 'store-only' })).uuid as string;
  const place = { project_uuid: projectUuid, server_uuid: serverUuid, environment_name: 'production' };
  serviceUuid = (await run('create_service', { ...place, docker_compose_raw: Buffer.from(COMPOSE).toString('base64') })).uuid as string;
});
afterAll(async () => {
  await assembled?.close();
  await db?.destroy();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

describe('newly store-only operations', () => {
  it('are declared so', () => {
    for (const name of [
      'clone_application',
      'clone_database',
      'clone_service',
      'create_cloud_init_script',
      'update_cloud_init_script',
      'delete_cloud_init_script',
      'create_service_storage',
      'update_service_storage',
      'delete_service_storage',
    ]) {
      expect(op(name).storeOnly, name).toBe(true);
    }
  });

  it('clone_service: no copy without its entry, and one ok entry with it', async () => {
    const before = await count('resources');
    await refusingAuditInserts(db, async () => {
      await expect(run('clone_service', { uuid: serviceUuid, destination_uuid: destinationUuid })).rejects.toThrow(/audit refused/);
    });
    expect(await count('resources')).toBe(before);
    expect(await results('clone_service')).toEqual([]);
    const copy = await run('clone_service', { uuid: serviceUuid, destination_uuid: destinationUuid });
    expect(await count('resources')).toBe(before + 1);
    expect(
      await db
        .selectFrom('resources')
        .select('uuid')
        .where('uuid', '=', copy.uuid as string)
        .executeTakeFirst(),
    ).toBeDefined();
    expect(await results('clone_service')).toEqual(['ok']);
  });

  it('create_cloud_init_script: no script without its entry', async () => {
    const input = { name: 'init', script: '#!/bin/sh\necho hello\n' };
    await refusingAuditInserts(db, async () => {
      await expect(run('create_cloud_init_script', input)).rejects.toThrow(/audit refused/);
    });
    expect(await count('cloud_init_scripts')).toBe(0);
    await run('create_cloud_init_script', input);
    expect(await count('cloud_init_scripts')).toBe(1);
    expect(await results('create_cloud_init_script')).toEqual(['ok']);
  });

  it('create_service_storage: the compose file and storages unchanged without its entry', async () => {
    const input = { uuid: serviceUuid, type: 'persistent', name: 'api-vol', mount_path: '/api-vol', resource_uuid: partUuid(serviceUuid, 'web') };
    const [storages, before] = [await count('storages'), await compose()];
    await refusingAuditInserts(db, async () => {
      await expect(run('create_service_storage', input)).rejects.toThrow(/audit refused/);
    });
    expect(await count('storages')).toBe(storages);
    expect(await compose()).toBe(before);
    await run('create_service_storage', input);
    expect(await count('storages')).toBe(storages + 1);
    expect(await compose()).not.toBe(before);
    expect(await results('create_service_storage')).toEqual(['ok']);
  });
});
