import { z } from 'zod';
import { atomically } from '../../store/atomic.js';
import { nowIso } from '../../store/db.js';
import { validationError } from '../../errors.js';
import { owned } from '../lookup.js';
import { LOG_DRAIN_DEFAULTS, logDrainSettingsOf, type LogDrainSettings } from '../model/log-drains.js';
import { defineOperation } from '../operation.js';
import { TargetGuard } from '../outbound-guard.js';
import { sensitive } from '../redact.js';
import { flag, httpUrl, uuidParam } from '../validators.js';
import { READ, UPDATE } from './common.js';

const logDrainsSchema = z.object({
  is_logdrain_newrelic_enabled: z.boolean(),
  logdrain_newrelic_license_key: sensitive(z.string().nullable()),
  logdrain_newrelic_base_uri: z.string().nullable().describe("New Relic's Log API endpoint, e.g. https://log-api.newrelic.com/log/v1 (EU: https://log-api.eu.newrelic.com/log/v1)."),
  is_logdrain_axiom_enabled: z.boolean(),
  logdrain_axiom_dataset_name: z.string().nullable(),
  logdrain_axiom_api_key: sensitive(z.string().nullable()),
  is_logdrain_custom_enabled: z.boolean().describe('Always false: berth runs no Fluent Bit, so a custom Fluent Bit configuration cannot be enabled.'),
  logdrain_custom_config: sensitive(z.string().nullable()),
  logdrain_custom_config_parser: sensitive(z.string().nullable()),
});

/** Coolify's rule for keys and dataset names: nothing a header or a URL path could read as more. */
const token = z
  .string()
  .max(512)
  .regex(/^[a-zA-Z0-9_\-.]+$/, 'Must be letters, digits, _, - and . only.');

const NO_FLUENT_BIT = 'berth ships the logs itself and runs no Fluent Bit, so a custom Fluent Bit configuration has nothing to run it: use Axiom or New Relic.';

/** Coolify's rules when a drain is on: what it needs to ship (its messages). */
function missingWhenEnabled(s: LogDrainSettings): Record<string, string[]> | null {
  const e: Record<string, string[]> = {};
  if (s.is_logdrain_newrelic_enabled) {
    if (!s.logdrain_newrelic_license_key) e.logdrain_newrelic_license_key = ['The New Relic license key is required when New Relic log drain is enabled.'];
    if (!s.logdrain_newrelic_base_uri) e.logdrain_newrelic_base_uri = ['The New Relic base URI is required when New Relic log drain is enabled.'];
  }
  if (s.is_logdrain_axiom_enabled) {
    if (!s.logdrain_axiom_dataset_name) e.logdrain_axiom_dataset_name = ['The Axiom dataset name is required when Axiom log drain is enabled.'];
    if (!s.logdrain_axiom_api_key) e.logdrain_axiom_api_key = ['The Axiom API key is required when Axiom log drain is enabled.'];
  }
  return Object.keys(e).length ? e : null;
}

export const logDrainOperations = [
  defineOperation({
    name: 'get_server_log_drains',
    title: 'Get log drain settings',
    description:
      "A server's log drains: whether berth ships the logs of the server's resources to Axiom (dataset) and New Relic (Log API base URI). The license and API keys and the custom Fluent Bit texts need read:sensitive.",
    summary: "A server's log drains (Axiom, New Relic); keys need read:sensitive.",
    permission: 'read',
    toolset: 'servers',
    input: () => z.strictObject({ uuid: uuidParam }),
    output: () => logDrainsSchema,
    annotations: READ,
    http: { method: 'GET', path: '/api/v1/servers/{uuid}/log-drains' },
    async run({ db, caller }, { uuid }) {
      return logDrainSettingsOf(await owned(db, 'servers', uuid, caller.teamId));
    },
  }),
  defineOperation({
    name: 'update_server_log_drains',
    title: 'Set log drain settings',
    description:
      "Ship the logs of a server's resources (each line with its container, resource, stream and time) to Axiom (is_logdrain_axiom_enabled with logdrain_axiom_dataset_name and logdrain_axiom_api_key) and/or New Relic (is_logdrain_newrelic_enabled with logdrain_newrelic_license_key and logdrain_newrelic_base_uri). Lines written from then on are shipped within seconds; turning a drain off stops it.",
    summary: "Turn a server's Axiom or New Relic log drain on or off, with its keys.",
    permission: 'write',
    toolset: 'servers',
    input: () =>
      z.strictObject({
        uuid: uuidParam,
        is_logdrain_newrelic_enabled: flag.optional(),
        logdrain_newrelic_license_key: token.nullable().optional(),
        logdrain_newrelic_base_uri: httpUrl.nullable().optional(),
        is_logdrain_axiom_enabled: flag.optional(),
        logdrain_axiom_dataset_name: token.nullable().optional(),
        logdrain_axiom_api_key: token.nullable().optional(),
        is_logdrain_custom_enabled: flag.refine((v) => !v, NO_FLUENT_BIT).optional(),
        logdrain_custom_config: z.string().max(100_000).nullable().optional(),
        logdrain_custom_config_parser: z.string().max(100_000).nullable().optional(),
      }),
    output: () => logDrainsSchema,
    annotations: UPDATE,
    http: { method: 'PATCH', path: '/api/v1/servers/{uuid}/log-drains' },
    unsupported: {
      is_logdrain_highlight_enabled: {
        hint: 'berth ships to Axiom and New Relic over their HTTP ingest APIs; Highlight takes Fluent Bit forward traffic, which berth does not send',
        accepts: [false, null],
      },
      logdrain_highlight_project_id: { hint: 'berth does not ship to Highlight', accepts: [null, ''] },
    },
    async run(ctx, { uuid, ...patch }) {
      const s = await owned(ctx.db, 'servers', uuid, ctx.caller.teamId);
      // Checked when saved as every tenant-chosen URL is (and again, resolved, at each send).
      if (patch.logdrain_newrelic_base_uri) {
        const why = new TargetGuard(ctx.config.outboundAllowedTargets).urlRefusal(patch.logdrain_newrelic_base_uri);
        if (why) throw validationError({ logdrain_newrelic_base_uri: [why] });
      }
      const given = Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined)) as Partial<LogDrainSettings>;
      // Read, merge, check and write in one transaction: concurrent changes of different settings both land.
      return atomically(ctx.db, async (db) => {
        const row = await db.selectFrom('servers').select('log_drains').where('id', '=', s.id).executeTakeFirstOrThrow();
        const next = { ...LOG_DRAIN_DEFAULTS, ...logDrainSettingsOf(row), ...given };
        const missing = missingWhenEnabled(next);
        if (missing) throw validationError(missing);
        await db
          .updateTable('servers')
          .set({ log_drains: JSON.stringify(next), updated_at: nowIso() })
          .where('id', '=', s.id)
          .execute();
        return next;
      });
    },
  }),
];
