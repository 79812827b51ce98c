import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request } from 'undici';
import * as admin from '../../src/core/admin.js';
import { openStore } from '../../src/store/db.js';
import { spawnServe, type ServeProcess } from '../helpers/process.js';
import { tempDir } from '../helpers/server.js';
import { storeUrlFor } from '../helpers/store.js';
import { hasRedis, startRedis } from '../helpers/redis.js';

describe.runIf(hasRedis)('limits shared through Redis', () => {
  let redis: { url: string; stop: () => void };
  let redisUrl: string;
  beforeAll(async () => {
    redis = await startRedis();
    redisUrl = redis.url;
  });
  afterAll(() => {
    redis?.stop();
  });

  it('three berth processes, one user, round-robin: together they admit exactly the limit', async () => {
    const dataDir = tempDir();
    const db = await openStore(dataDir, storeUrlFor(dataDir));
    const init = await admin.initInstance(db, { email: 'owner@example.test' });
    await db.destroy();
    const env = { REDIS_URL: redisUrl, API_RATE_LIMIT: '30' };
    const procs: ServeProcess[] = await Promise.all([spawnServe(dataDir, env), spawnServe(dataDir, env), spawnServe(dataDir, env)]);
    try {
      const statuses = await Promise.all(
        Array.from({ length: 60 }, async (_, i) => {
          const r = await request(`${procs[i % 3]!.url}/api/v1/teams/current`, { headers: { authorization: `Bearer ${init.token}` } });
          await r.body.dump();
          return r.statusCode;
        }),
      );
      expect(statuses.filter((s) => s === 200).length).toBe(30);
      expect(statuses.filter((s) => s === 429).length).toBe(30);
    } finally {
      await Promise.all(procs.map((p) => p.stop()));
    }
  });
});
