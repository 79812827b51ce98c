import { z } from 'zod';
import { UUID_PATTERN } from '../validators.js';
import { BUNDLE_FORMAT, BUNDLE_VERSION } from './bundle-crypto.js';

/**
 * A server transfer bundle: one server of berth with what it carries (its destinations, the
 * projects and environments its resources live in, the resources with their variables, volumes,
 * files, scheduled tasks and backup schedules, the server's shared variables, the SSH keys they
 * use). Rows are named by uuid, never by store id, so another instance can recreate them. Read by
 * import at the door: an unknown or missing field is a 422 naming its path.
 */
const flag = z.boolean();
const text = z.string().max(1_000_000);
const short = z.string().max(1024);
const uuid = z.string().regex(UUID_PATTERN, 'A uuid.');
const nullable = <T extends z.ZodType>(s: T) => s.nullable();

const keySchema = z.strictObject({ uuid, name: short, description: nullable(short), fingerprint: short, public_key: nullable(text), private_key: nullable(text) });
const envSchema = z.strictObject({
  uuid,
  key: short,
  value: nullable(text),
  is_preview: flag,
  is_literal: flag,
  is_multiline: flag,
  is_shown_once: flag,
  is_runtime: flag,
  is_buildtime: flag,
  comment: nullable(short),
});
const storageSchema = z.strictObject({
  uuid,
  name: short,
  mount_path: short,
  container: nullable(short),
  engine_volume: nullable(short),
  backups: z.array(z.strictObject({ uuid, settings: z.record(z.string(), z.unknown()) })).max(100),
});
const fileSchema = z.strictObject({ uuid, mount_path: short, content: nullable(text), is_directory: flag });
const taskSchema = z.strictObject({ uuid, name: short, command: nullable(text), frequency: short, container: nullable(short), timeout: z.number().int(), enabled: flag });
const backupSchema = z.strictObject({
  uuid,
  description: nullable(short),
  enabled: flag,
  save_s3: flag,
  frequency: short,
  databases_to_backup: nullable(short),
  dump_all: flag,
  retention: z.record(z.string(), z.number()),
  timeout: z.number().int(),
});
const resourceSchema = z.strictObject({
  uuid,
  kind: z.enum(['application', 'service', 'postgresql', 'mysql', 'mariadb', 'redis', 'mongodb', 'clickhouse', 'dragonfly', 'keydb']),
  name: short,
  description: nullable(short),
  project_uuid: uuid,
  environment_uuid: uuid,
  destination_uuid: uuid,
  /** The kind's own fields as berth stores them; a deploy key is named by private_key_uuid. */
  config: z.record(z.string(), z.unknown()),
  tags: z.array(short).max(100),
  envs: z.array(envSchema).max(2000),
  storages: z.array(storageSchema).max(500),
  files: z.array(fileSchema).max(500),
  scheduled_tasks: z.array(taskSchema).max(500),
  backups: z.array(backupSchema).max(100),
  /** An application's copies on other servers' destinations (docs/decisions/additional-destinations.md); absent in older bundles. */
  additional_destinations: z
    .array(z.strictObject({ destination_uuid: uuid, server_uuid: uuid }))
    .max(100)
    .optional(),
});

/** A destination's engine kind (docs/decisions/swarm.md); absent in older bundles, which carried standalone ones only. */
const destinationType = z.enum(['standalone', 'swarm'], { error: 'A destination type: standalone or swarm.' });

export const bundleSchema = z.strictObject({
  format: z.literal(BUNDLE_FORMAT),
  schema_version: z.literal(BUNDLE_VERSION),
  export_id: uuid,
  exported_at: short,
  source: z.strictObject({ instance_url: nullable(short), berth_version: short }),
  /** false: exported without read:sensitive, its secrets are null; import refuses such a bundle. */
  includes_secrets: flag,
  server: z.strictObject({
    uuid,
    name: short,
    description: nullable(short),
    ip: short,
    port: z.number().int(),
    user: short,
    private_key_uuid: nullable(uuid),
    engine_endpoint: nullable(short),
    engine_tls: nullable(z.strictObject({ ca: text, cert: text, key: text })),
    host_key_fingerprint: nullable(short),
    docker_cleanup: nullable(z.record(z.string(), z.unknown())),
    /** What validate last read of its swarm state (docs/decisions/swarm.md); absent in older bundles. */
    is_swarm_manager: flag.optional(),
    is_swarm_worker: flag.optional(),
  }),
  private_keys: z.array(keySchema).max(100),
  destinations: z.array(z.strictObject({ uuid, name: short, network: short, type: destinationType.optional() })).max(100),
  projects: z.array(z.strictObject({ uuid, name: short, description: nullable(short), environments: z.array(z.strictObject({ uuid, name: short, description: nullable(short) })).max(500) })).max(500),
  shared_variables: z.array(z.strictObject({ key: short, value: nullable(text), is_literal: flag, is_multiline: flag, is_shown_once: flag, comment: nullable(short) })).max(2000),
  resources: z.array(resourceSchema).max(2000),
  /** Copies of other servers' applications that run on this server's destinations; absent in older bundles. */
  copies: z
    .array(z.strictObject({ application_uuid: uuid, destination_uuid: uuid }))
    .max(2000)
    .optional(),
});

export type Bundle = z.infer<typeof bundleSchema>;
export type BundleResource = Bundle['resources'][number];

/**
 * Names whose values are secrets wherever they sit in a bundle (a key's material, TLS keys,
 * variable values, files, commands, compose files, passwords and tokens in a resource's config):
 * removed (null) when the exporting token lacks read:sensitive. Ids and uuids are never secrets.
 */
// A service's parsed containers carry its compose file's environment and commands: as secret as the file.
const SECRET = /pass(word)?|secret|token|private_key$|credential|^value$|^content$|^command$|compose|^containers$|^environment$|^dockerfile$|^tls$|engine_tls|dsn|api_key/i;

/** The bundle without its secrets, recursively: each secret's key is left out. */
export function withoutSecrets<T>(v: T): T {
  if (Array.isArray(v)) return v.map(withoutSecrets) as T;
  if (!v || typeof v !== 'object') return v;
  const out: Record<string, unknown> = {};
  // A secret's key goes with it, as in every answer to a token without read:sensitive; such a bundle is never imported.
  for (const [k, x] of Object.entries(v)) {
    if (!/(^|_)(uuid|id)s?$/.test(k) && SECRET.test(k) && typeof x !== 'boolean') continue;
    out[k] = withoutSecrets(x);
  }
  return out as T;
}
