import { createHash } from 'node:crypto';
import { z } from 'zod';
import { ownedResource } from '../lookup.js';
import { defineOperation } from '../operation.js';
import { listOf, pageInput, pageOf } from '../pagination.js';
import { uuidParam } from '../validators.js';
import { READ } from './common.js';
import { config } from './resource-common.js';
import type { ServiceConfig } from './services.js';

// Coolify splits a service's containers into applications and databases by image name.
const DATABASE_IMAGES = ['postgres', 'postgis', 'mysql', 'mariadb', 'mongo', 'redis', 'keydb', 'dragonfly', 'clickhouse', 'memcached', 'couchdb', 'neo4j', 'influxdb', 'surrealdb', 'valkey', 'postgresql', 'timescaledb'];

/** True when the image (any registry, any tag) is a database image. */
export function isDatabaseImage(image: string): boolean {
  const last = image.split('/').pop() ?? image;
  const base = (last.split('@')[0] ?? last).split(':')[0] ?? last;
  return DATABASE_IMAGES.includes(base);
}

/** A part's uuid: derived from its service's uuid and its compose service name, so it stays while the name stays. */
export function partUuid(serviceUuid: string, name: string): string {
  const h = createHash('sha256').update(`${serviceUuid}\0${name}`).digest();
  const alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789';
  let s = '';
  for (let i = 0; i < 24; i++) s += alphabet[h[i]! % alphabet.length];
  return s;
}

const partSchema = z.object({ uuid: z.string(), name: z.string(), human_name: z.string().nullable(), description: z.string().nullable(), image: z.string(), status: z.string() });

function partsOf(kind: 'application' | 'database') {
  return defineOperation({
    name: `list_service_${kind}s`,
    summary: `List a service's ${kind}s (its compose containers ${kind === 'database' ? 'running a database image' : 'not running a database image'}).`,
    permission: 'read',
    toolset: 'services',
    input: z.strictObject({ uuid: uuidParam, ...pageInput }),
    output: listOf(partSchema),
    annotations: READ,
    http: { method: 'GET', path: `/api/v1/services/{uuid}/${kind}s`, list: true },
    async run({ db, caller }, i) {
      const r = await ownedResource(db, i.uuid, caller.teamId, ['service']);
      const c = config<ServiceConfig>(r);
      const all = c.containers
        .filter((k) => isDatabaseImage(k.image) === (kind === 'database'))
        .map((k) => ({ uuid: partUuid(r.uuid, k.name), name: k.name, human_name: null, description: null, image: k.image, status: r.status }));
      return pageOf(all, i);
    },
  });
}

export const servicePartOperations = [partsOf('application'), partsOf('database')];
