import { z } from 'zod';
import { defineOperation } from '../operation.js';
import { listOf, paged, pageInput } from '../pagination.js';
import { READ } from './common.js';
import { placedSchema, placedView, placedViews } from './resource-common.js';
import { BERTH_VERSION, COOLIFY_API_VERSION } from '../../version.js';

// Declared in src/version.ts (the CLI's --version reads them without loading the operations).
export { BERTH_VERSION, COOLIFY_API_VERSION };

export const platformOperations = [
  defineOperation({
    name: 'get_version',
    title: 'Get berth version',
    description: 'The version of this berth instance. Read-only; useful to check which API features are available.',
    summary: "The Coolify API version berth matches (plain text over REST, as Coolify answers); berth's own version is in berth_version, the X-Berth-Version header and openapi.json.",
    permission: 'read',
    toolset: 'teams',
    input: () => z.strictObject({}),
    // berth_version: absent when remote mode reads a text answer (Coolify's, or another berth's).
    output: () => z.object({ version: z.string(), berth_version: z.string().optional() }),
    annotations: READ,
    http: { method: 'GET', path: '/api/v1/version', text: 'version' },
    async run() {
      return { version: COOLIFY_API_VERSION, berth_version: BERTH_VERSION };
    },
  }),
  defineOperation({
    name: 'list_resources',
    title: 'List all resources',
    description: 'The applications, databases and services of your team: status, type, where each lives. Start here to find a uuid.',
    default: true,
    summary: 'Every application, database and service of the team, in one list.',
    permission: 'read',
    toolset: 'teams',
    input: () => z.strictObject({ ...pageInput }),
    output: () => listOf(z.object({ ...placedSchema, type: z.string() })),
    annotations: READ,
    http: { method: 'GET', path: '/api/v1/resources', list: true },
    async run({ db, caller }, p) {
      const base = db.selectFrom('resources').where('team_id', '=', caller.teamId);
      return paged(
        base,
        p,
        (q) => q.selectAll().orderBy('id'),
        (rows) => placedViews(db, rows, async (db, r, known) => ({ ...(await placedView(db, r, known)), type: r.kind === 'application' || r.kind === 'service' ? r.kind : `standalone-${r.kind}` })),
      );
    },
  }),
];
