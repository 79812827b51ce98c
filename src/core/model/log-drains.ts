import { z } from 'zod';

/**
 * A server's log drains as stored (servers.log_drains), by Coolify's setting names. berth ships
 * the lines itself (src/workers/log-drains.ts) to the providers that have a plain HTTP ingest
 * API: Axiom and New Relic. Coolify's custom drain is a Fluent Bit configuration, which only a
 * Fluent Bit container could run: its text is kept, enabling it is refused.
 */
export const logDrainSettingsSchema = z.object({
  is_logdrain_newrelic_enabled: z.boolean(),
  logdrain_newrelic_license_key: z.string().nullable(),
  logdrain_newrelic_base_uri: z.string().nullable(),
  is_logdrain_axiom_enabled: z.boolean(),
  logdrain_axiom_dataset_name: z.string().nullable(),
  logdrain_axiom_api_key: z.string().nullable(),
  is_logdrain_custom_enabled: z.boolean(),
  logdrain_custom_config: z.string().nullable(),
  logdrain_custom_config_parser: z.string().nullable(),
});
export type LogDrainSettings = z.infer<typeof logDrainSettingsSchema>;

export const LOG_DRAIN_DEFAULTS: LogDrainSettings = {
  is_logdrain_newrelic_enabled: false,
  logdrain_newrelic_license_key: null,
  logdrain_newrelic_base_uri: null,
  is_logdrain_axiom_enabled: false,
  logdrain_axiom_dataset_name: null,
  logdrain_axiom_api_key: null,
  is_logdrain_custom_enabled: false,
  logdrain_custom_config: null,
  logdrain_custom_config_parser: null,
};

export const logDrainSettingsOf = (s: { log_drains: string | null }): LogDrainSettings => ({
  ...LOG_DRAIN_DEFAULTS,
  ...(s.log_drains ? (JSON.parse(s.log_drains) as Partial<LogDrainSettings>) : {}),
});

/** One place berth ships a server's lines to. */
export type DrainTarget = { provider: 'axiom'; dataset: string; apiKey: string } | { provider: 'newrelic'; baseUri: string; licenseKey: string };

/** The drains a server's settings turn on (each enabled provider with what it needs); none: no shipping. */
export function drainTargets(s: LogDrainSettings): DrainTarget[] {
  const out: DrainTarget[] = [];
  if (s.is_logdrain_axiom_enabled && s.logdrain_axiom_dataset_name && s.logdrain_axiom_api_key) {
    out.push({ provider: 'axiom', dataset: s.logdrain_axiom_dataset_name, apiKey: s.logdrain_axiom_api_key });
  }
  if (s.is_logdrain_newrelic_enabled && s.logdrain_newrelic_base_uri && s.logdrain_newrelic_license_key) {
    out.push({ provider: 'newrelic', baseUri: s.logdrain_newrelic_base_uri, licenseKey: s.logdrain_newrelic_license_key });
  }
  return out;
}

/** One shipped line: where it came from and what it said. */
export interface DrainRecord {
  /** The engine's timestamp of the line (RFC 3339). */
  timestamp: string;
  line: string;
  stream: 'stdout' | 'stderr';
  container: string;
  resource_uuid: string;
  resource_name: string;
  server_name: string;
}
