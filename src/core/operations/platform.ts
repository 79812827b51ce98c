import { z } from 'zod';
import { defineOperation } from '../operation.js';
import { listOf, paged, pageInput } from '../pagination.js';
import { READ } from './common.js';
import { placedSchema, placedView } from './resource-common.js';

export const BERTH_VERSION = '0.1.0';

export const platformOperations = [
  defineOperation({
    name: 'get_version',
    summary: 'The berth version (plain text over REST, as Coolify answers).',
    permission: 'read',
    toolset: 'teams',
    input: z.strictObject({}),
    output: z.object({ version: z.string() }),
    annotations: READ,
    http: { method: 'GET', path: '/api/v1/version', text: 'version' },
    async run() {
      return { version: BERTH_VERSION };
    },
  }),
  defineOperation({
    name: 'list_resources',
    summary: 'Every application, database and service of the team, in one list.',
    permission: 'read',
    toolset: 'teams',
    input: z.strictObject({ ...pageInput }),
    output: listOf(z.object({ ...placedSchema, type: z.string() })),
    annotations: READ,
    http: { method: 'GET', path: '/api/v1/resources', list: true },
    async run({ db, caller }, p) {
      const base = db.selectFrom('resources').where('team_id', '=', caller.teamId);
      return paged(base, p, (q) => q.selectAll().orderBy('id'), (rows) =>
        Promise.all(rows.map(async (r) => ({ ...(await placedView(db, r)), type: r.kind === 'application' || r.kind === 'service' ? r.kind : `standalone-${r.kind}` }))),
      );
    },
  }),
];
