import type { Db } from '../../store/db.js';
import type { Selectable } from 'kysely';
import type { ServersTable } from '../../store/schema.js';
import { BERTH_VERSION } from '../../version.js';
import { newUuid } from '../../ids.js';
import { BUNDLE_FORMAT, BUNDLE_VERSION } from './bundle-crypto.js';
import { type Bundle, type BundleResource, withoutSecrets } from './bundle.js';

type ServerRow = Omit<Selectable<ServersTable>, 'transfer'> & { transfer: string | null };

const yes = (v: number | boolean | null) => v === 1 || v === true;

/** Retention columns of a database backup schedule (Coolify's names), kept together in a bundle. */
export const RETENTION = [
  'database_backup_retention_amount_locally',
  'database_backup_retention_days_locally',
  'database_backup_retention_max_storage_locally',
  'database_backup_retention_amount_s3',
  'database_backup_retention_days_s3',
  'database_backup_retention_max_storage_s3',
] as const;

/**
 * The server's transfer bundle, read in one transaction (trx) so it is one consistent picture.
 * Without secrets, every secret (its key too) is left out and includes_secrets is false.
 */
export async function exportServer(trx: Db, server: ServerRow, opts: { withSecrets: boolean; instanceUrl: string | null }): Promise<Bundle> {
  const destinations = await trx.selectFrom('destinations').selectAll().where('server_id', '=', server.id).orderBy('id').execute();
  const destUuid = new Map(destinations.map((d) => [d.id, d.uuid]));
  const rows = destinations.length
    ? await trx
        .selectFrom('resources')
        .selectAll()
        .where(
          'destination_id',
          'in',
          destinations.map((d) => d.id),
        )
        .where('deleting', 'is', null)
        .orderBy('id')
        .execute()
    : [];
  const ids = rows.map((r) => r.id);
  const envIds = [...new Set(rows.map((r) => r.environment_id))];
  const environments = envIds.length ? await trx.selectFrom('environments').selectAll().where('id', 'in', envIds).orderBy('id').execute() : [];
  const projectIds = [...new Set(environments.map((e) => e.project_id))];
  const projects = projectIds.length ? await trx.selectFrom('projects').selectAll().where('id', 'in', projectIds).orderBy('id').execute() : [];
  const byResource = async <T extends { resource_id: number }>(rowsOf: Promise<T[]>) => {
    const m = new Map<number, T[]>();
    for (const x of await rowsOf) m.set(x.resource_id, [...(m.get(x.resource_id) ?? []), x]);
    return m;
  };
  const none = Promise.resolve([]);
  const envs = await byResource(ids.length ? trx.selectFrom('environment_variables').selectAll().where('resource_id', 'in', ids).orderBy('id').execute() : none);
  const storages = await byResource(ids.length ? trx.selectFrom('storages').selectAll().where('resource_id', 'in', ids).orderBy('id').execute() : none);
  const files = await byResource(ids.length ? trx.selectFrom('file_storages').selectAll().where('resource_id', 'in', ids).orderBy('id').execute() : none);
  const tasks = await byResource(ids.length ? trx.selectFrom('scheduled_tasks').selectAll().where('resource_id', 'in', ids).orderBy('id').execute() : none);
  const backups = await byResource(ids.length ? trx.selectFrom('scheduled_database_backups').selectAll().where('resource_id', 'in', ids).orderBy('id').execute() : none);
  // Where an application also runs (other servers' destinations), and which other servers' applications run here.
  const additional = await byResource(
    ids.length
      ? trx
          .selectFrom('application_destinations as a')
          .innerJoin('destinations as d', 'd.id', 'a.destination_id')
          .innerJoin('servers as s', 's.id', 'a.server_id')
          .select(['a.resource_id', 'd.uuid as destination_uuid', 's.uuid as server_uuid'])
          .where('a.resource_id', 'in', ids)
          .orderBy('a.id')
          .execute()
      : none,
  );
  const copies = destinations.length
    ? await trx
        .selectFrom('application_destinations as a')
        .innerJoin('resources as r', 'r.id', 'a.resource_id')
        .innerJoin('destinations as d', 'd.id', 'a.destination_id')
        .select(['r.uuid as application_uuid', 'd.uuid as destination_uuid'])
        .where(
          'a.destination_id',
          'in',
          destinations.map((d) => d.id),
        )
        .where('r.deleting', 'is', null)
        .orderBy('a.id')
        .execute()
    : [];
  const storageIds = [...storages.values()].flat().map((s) => s.id);
  const volumeBackups = storageIds.length ? await trx.selectFrom('scheduled_volume_backups').selectAll().where('storage_id', 'in', storageIds).orderBy('id').execute() : [];

  // The SSH keys used: the server's and the deploy keys of git applications.
  const keyIds = new Set<number>();
  if (server.private_key_id !== null) keyIds.add(server.private_key_id);
  const configs = rows.map((r) => JSON.parse(r.config) as Record<string, unknown> & { source?: { private_key_id?: number } });
  for (const c of configs) if (typeof c.source?.private_key_id === 'number') keyIds.add(c.source.private_key_id);
  const keys = keyIds.size
    ? await trx
        .selectFrom('private_keys')
        .selectAll()
        .where('id', 'in', [...keyIds])
        .where('team_id', '=', server.team_id)
        .orderBy('id')
        .execute()
    : [];
  const keyUuid = new Map(keys.map((k) => [k.id, k.uuid]));
  const shared = await trx.selectFrom('shared_environment_variables').selectAll().where('type', '=', 'server').where('server_id', '=', server.id).orderBy('id').execute();
  const envUuid = new Map(environments.map((e) => [e.id, e]));
  const projectUuid = new Map(projects.map((p) => [p.id, p.uuid]));

  const resources: BundleResource[] = rows.map((r, i) => {
    const config = configs[i]!;
    if (config.source && typeof config.source.private_key_id === 'number') {
      const { private_key_id, ...source } = config.source;
      config.source = { ...source, private_key_uuid: keyUuid.get(private_key_id) ?? null } as typeof config.source;
    }
    // A GitHub app is this instance's record (by id): never carried, so an import cannot point at another app that has the id there.
    if (config.source && 'github_app_id' in config.source) delete (config.source as { github_app_id?: number }).github_app_id;
    const env = envUuid.get(r.environment_id)!;
    return {
      uuid: r.uuid,
      kind: r.kind,
      name: r.name,
      description: r.description,
      project_uuid: projectUuid.get(env.project_id)!,
      environment_uuid: env.uuid,
      destination_uuid: destUuid.get(r.destination_id)!,
      config,
      tags: JSON.parse(r.tags) as string[],
      envs: (envs.get(r.id) ?? []).map((e) => ({
        uuid: e.uuid,
        key: e.key,
        // A shown-once value is never shown again, in a bundle neither: set it again after the import.
        value: yes(e.is_shown_once) ? null : e.value,
        is_preview: yes(e.is_preview),
        is_literal: yes(e.is_literal),
        is_multiline: yes(e.is_multiline),
        is_shown_once: yes(e.is_shown_once),
        is_runtime: yes(e.is_runtime),
        is_buildtime: yes(e.is_buildtime),
        comment: e.comment,
      })),
      storages: (storages.get(r.id) ?? []).map((s) => ({
        uuid: s.uuid,
        name: s.name,
        mount_path: s.mount_path,
        container: s.container,
        engine_volume: s.engine_volume,
        backups: volumeBackups.filter((b) => b.storage_id === s.id).map((b) => ({ uuid: b.uuid, settings: JSON.parse(b.settings) as Record<string, unknown> })),
      })),
      files: (files.get(r.id) ?? []).map((f) => ({ uuid: f.uuid, mount_path: f.mount_path, content: f.content, is_directory: yes(f.is_directory) })),
      scheduled_tasks: (tasks.get(r.id) ?? []).map((t) => ({
        uuid: t.uuid,
        name: t.name,
        command: t.command,
        frequency: t.frequency,
        container: t.container,
        timeout: t.timeout,
        enabled: yes(t.enabled),
      })),
      backups: (backups.get(r.id) ?? []).map((b) => ({
        uuid: b.uuid,
        description: b.description,
        enabled: yes(b.enabled),
        save_s3: yes(b.save_s3),
        frequency: b.frequency,
        databases_to_backup: b.databases_to_backup,
        dump_all: yes(b.dump_all),
        retention: Object.fromEntries(RETENTION.map((k) => [k, Number(b[k])])),
        timeout: b.timeout,
      })),
      ...(r.kind === 'application' ? { additional_destinations: (additional.get(r.id) ?? []).map(({ destination_uuid, server_uuid }) => ({ destination_uuid, server_uuid })) } : {}),
    };
  });

  const bundle: Bundle = {
    format: BUNDLE_FORMAT,
    schema_version: BUNDLE_VERSION,
    export_id: newUuid(),
    exported_at: new Date().toISOString(),
    source: { instance_url: opts.instanceUrl, berth_version: BERTH_VERSION },
    includes_secrets: opts.withSecrets,
    server: {
      uuid: server.uuid,
      name: server.name,
      description: server.description,
      ip: server.ip,
      port: server.port,
      user: server.user,
      private_key_uuid: server.private_key_id === null ? null : (keyUuid.get(server.private_key_id) ?? null),
      engine_endpoint: server.engine_endpoint,
      engine_tls: server.engine_tls ? (JSON.parse(server.engine_tls) as { ca: string; cert: string; key: string }) : null,
      host_key_fingerprint: server.host_key_fingerprint,
      docker_cleanup: server.docker_cleanup ? (JSON.parse(server.docker_cleanup) as Record<string, unknown>) : null,
      is_swarm_manager: yes(server.is_swarm_manager),
      is_swarm_worker: yes(server.is_swarm_worker),
    },
    private_keys: keys.map((k) => ({ uuid: k.uuid, name: k.name, description: k.description, fingerprint: k.fingerprint, public_key: k.public_key, private_key: k.private_key })),
    destinations: destinations.map((d) => ({ uuid: d.uuid, name: d.name, network: d.network, type: d.type === 'swarm' ? 'swarm' : 'standalone' })),
    projects: projects.map((p) => ({
      uuid: p.uuid,
      name: p.name,
      description: p.description,
      environments: environments.filter((e) => e.project_id === p.id).map((e) => ({ uuid: e.uuid, name: e.name, description: e.description })),
    })),
    shared_variables: shared.map((v) => ({
      key: v.key,
      value: yes(v.is_shown_once) ? null : v.value,
      is_literal: yes(v.is_literal),
      is_multiline: yes(v.is_multiline),
      is_shown_once: yes(v.is_shown_once),
      comment: v.comment,
    })),
    resources,
    copies,
  };
  return opts.withSecrets ? bundle : withoutSecrets(bundle);
}
