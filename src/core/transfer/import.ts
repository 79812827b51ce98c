import type { Db } from '../../store/db.js';
import { requireFreeDomains } from '../domains.js';
import type { ServiceConfig } from '../model/service.js';
import { BerthError } from '../../errors.js';
import { newUuid } from '../../ids.js';
import type { Caller } from '../caller.js';
import { volumeName } from '../model/volumes.js';
import { stamps } from '../operations/common.js';
import type { Bundle } from './bundle.js';
import { RETENTION } from './export.js';

/** The server's transfer record (servers.transfer, migration 039). */
export interface TransferState {
  status: 'imported' | 'claimed' | 'transferred';
  export_id: string | null;
  at: string;
  source_instance_url?: string | null;
  target_instance_url?: string | null;
}

export interface ImportOptions {
  preserveUuids: boolean;
  claim: boolean;
  /** Checks the address as create_server does (isolation rules, transport needs); returns the settled address. */
  settleAddress: (a: { ip: string; port: number; user: string; private_key_id: number | null; engine_endpoint: string | null; engine_tls: string | null }) => {
    ip: string;
    port: number;
    user: string;
    private_key_id: number | null;
    engine_endpoint: string | null;
    engine_tls: string | null;
  };
}

export interface ImportSummary {
  server_uuid: string;
  export_id: string;
  preserve_uuids: boolean;
  claimed: boolean;
  created: { destinations: number; projects: number; environments: number; resources: number; private_keys: number; shared_variables: number; additional_destinations: number };
  reused: { projects: number; environments: number; private_keys: number };
  /** What the bundle had that this instance does not take as it was (an S3 storage it lacks, host access). */
  warnings: string[];
}

const bit = (v: boolean) => (v ? 1 : 0);

/**
 * Recreates a bundle's server and everything on it in the caller's team, inside trx (the caller's
 * one transaction: all of it or nothing). With preserve_uuids, every row keeps its uuid, so the
 * containers and volumes on the server's engine (named by resource uuid) are the imported
 * resources' own; a uuid this instance already has is a 409 naming it. Without, every row gets a
 * new uuid and each volume keeps its engine name, so no data is left behind. Projects and
 * environments the team already has (same uuid, else same name) are reused.
 */
export async function importBundle(trx: Db, caller: Caller, b: Bundle, opts: ImportOptions): Promise<ImportSummary> {
  const teamId = caller.teamId;
  const warnings: string[] = [];
  const created = { destinations: 0, projects: 0, environments: 0, resources: 0, private_keys: 0, shared_variables: 0, additional_destinations: 0 };
  const reused = { projects: 0, environments: 0, private_keys: 0 };
  const id = (old: string) => (opts.preserveUuids ? old : newUuid());
  const free = async (table: 'servers' | 'destinations' | 'resources' | 'projects' | 'environments' | 'private_keys', uuid: string) =>
    !(await trx.selectFrom(table).select('id').where('uuid', '=', uuid).executeTakeFirst());

  if (opts.preserveUuids) {
    const taken: string[] = [];
    if (!(await free('servers', b.server.uuid))) taken.push(`server ${b.server.uuid}`);
    for (const d of b.destinations) if (!(await free('destinations', d.uuid))) taken.push(`destination ${d.uuid}`);
    for (const r of b.resources) if (!(await free('resources', r.uuid))) taken.push(`${r.kind} ${r.uuid}`);
    if (taken.length) {
      throw new BerthError('conflict', {
        message: `This instance already has ${taken.slice(0, 5).join(', ')}${taken.length > 5 ? ` and ${taken.length - 5} more` : ''}: the bundle was imported here before, or comes from this instance. Import with preserve_uuids=false for new uuids, or delete those first.`,
      });
    }
  }

  // SSH keys: a key the team already holds (same fingerprint) is used as it is.
  const keyId = new Map<string, number>();
  for (const k of b.private_keys) {
    const have = await trx.selectFrom('private_keys').select('id').where('team_id', '=', teamId).where('fingerprint', '=', k.fingerprint).executeTakeFirst();
    if (have) {
      keyId.set(k.uuid, have.id);
      reused.private_keys++;
      continue;
    }
    const uuid = opts.preserveUuids && (await free('private_keys', k.uuid)) ? k.uuid : newUuid();
    const row = await trx
      .insertInto('private_keys')
      .values({ uuid, team_id: teamId, name: k.name, description: k.description, private_key: k.private_key!, fingerprint: k.fingerprint, public_key: k.public_key, ...stamps() })
      .returning('id')
      .executeTakeFirstOrThrow();
    keyId.set(k.uuid, row.id);
    created.private_keys++;
  }
  const keyOf = (uuid: string | null | undefined) => (uuid ? (keyId.get(uuid) ?? null) : null);

  const s = b.server;
  const address = opts.settleAddress({
    ip: s.ip,
    port: s.port,
    user: s.user,
    private_key_id: keyOf(s.private_key_uuid),
    engine_endpoint: s.engine_endpoint,
    engine_tls: s.engine_tls ? JSON.stringify(s.engine_tls) : null,
  });
  const transfer: TransferState = { status: opts.claim ? 'claimed' : 'imported', export_id: b.export_id, at: new Date().toISOString(), source_instance_url: b.source.instance_url };
  const serverUuid = id(s.uuid);
  const server = await trx
    .insertInto('servers')
    .values({
      uuid: serverUuid,
      team_id: teamId,
      name: s.name,
      description: s.description,
      ...address,
      is_reachable: 0,
      is_usable: 0,
      validated_at: null,
      validation_logs: null,
      host_key_fingerprint: s.host_key_fingerprint,
      host_access: 0,
      docker_cleanup: s.docker_cleanup ? JSON.stringify(s.docker_cleanup) : null,
      // What validate last read; the first validate here reads it again.
      is_swarm_manager: bit(s.is_swarm_manager ?? false),
      is_swarm_worker: bit(s.is_swarm_worker ?? false),
      transfer: JSON.stringify(transfer),
      ...stamps(),
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  warnings.push("Host access is this instance's own decision (its root team's): the server arrives without it.");

  const destId = new Map<string, number>();
  for (const d of b.destinations) {
    const row = await trx
      .insertInto('destinations')
      // Its kind as it was: a swarm destination's applications stay services (a validate keeps a destination that places resources as it is).
      .values({ uuid: id(d.uuid), team_id: teamId, server_id: server.id, name: d.name, network: d.network, type: d.type ?? 'standalone', ...stamps() })
      .returning('id')
      .executeTakeFirstOrThrow();
    destId.set(d.uuid, row.id);
    created.destinations++;
  }

  const envId = new Map<string, number>();
  for (const p of b.projects) {
    let project = await trx.selectFrom('projects').select('id').where('team_id', '=', teamId).where('uuid', '=', p.uuid).executeTakeFirst();
    if (!project && !(opts.preserveUuids && (await free('projects', p.uuid))))
      project = await trx.selectFrom('projects').select('id').where('team_id', '=', teamId).where('name', '=', p.name).executeTakeFirst();
    if (project) reused.projects++;
    else {
      project = await trx
        .insertInto('projects')
        .values({ uuid: opts.preserveUuids && (await free('projects', p.uuid)) ? p.uuid : newUuid(), team_id: teamId, name: p.name, description: p.description, ...stamps() })
        .returning('id')
        .executeTakeFirstOrThrow();
      created.projects++;
    }
    for (const e of p.environments) {
      let env =
        (await trx.selectFrom('environments').select('id').where('project_id', '=', project.id).where('uuid', '=', e.uuid).executeTakeFirst()) ??
        (await trx.selectFrom('environments').select('id').where('project_id', '=', project.id).where('name', '=', e.name).executeTakeFirst());
      if (env) reused.environments++;
      else {
        env = await trx
          .insertInto('environments')
          .values({ uuid: opts.preserveUuids && (await free('environments', e.uuid)) ? e.uuid : newUuid(), project_id: project.id, name: e.name, description: e.description, ...stamps() })
          .returning('id')
          .executeTakeFirstOrThrow();
        created.environments++;
      }
      envId.set(e.uuid, env.id);
    }
  }

  const resourceId = new Map<string, number>();
  const s3 = new Set((await trx.selectFrom('s3_storages').select('uuid').where('team_id', '=', teamId).execute()).map((x) => x.uuid));
  const tagNames = new Set<string>();
  for (const r of b.resources) {
    const environment = envId.get(r.environment_uuid);
    const destination = destId.get(r.destination_uuid);
    if (environment === undefined || destination === undefined) {
      throw new BerthError('validation', { errors: { bundle: [`${r.kind} ${r.uuid} names an environment or destination the bundle does not carry.`] } });
    }
    const config = { ...r.config } as Record<string, unknown> & { source?: Record<string, unknown> };
    if (config.source && 'private_key_uuid' in config.source) {
      const { private_key_uuid, ...source } = config.source;
      const k = keyOf(private_key_uuid as string | null);
      config.source = k === null ? source : { ...source, private_key_id: k };
    }
    // A bundle cannot take a domain another team's resource answers to (409 naming none); the
    // team's own may be shared, as with force_domain_override.
    if (r.kind === 'application') await requireFreeDomains(trx, teamId, (config.fqdn as string | null | undefined) ?? null, {}, true);
    if (r.kind === 'service') {
      for (const part of Object.values((config.parts ?? {}) as NonNullable<ServiceConfig['parts']>)) await requireFreeDomains(trx, teamId, part.fqdn ?? null, {}, true);
    }
    for (const t of r.tags) tagNames.add(t);
    const row = await trx
      .insertInto('resources')
      .values({
        uuid: id(r.uuid),
        team_id: teamId,
        kind: r.kind,
        environment_id: environment,
        destination_id: destination,
        name: r.name,
        description: r.description,
        status: 'exited',
        config: JSON.stringify(config),
        tags: JSON.stringify(r.tags),
        ...stamps(),
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    created.resources++;
    const rid = row.id;
    resourceId.set(r.uuid, rid);
    if (r.envs.length) {
      await trx
        .insertInto('environment_variables')
        .values(
          r.envs.map((e) => ({
            uuid: id(e.uuid),
            resource_id: rid,
            key: e.key,
            value: e.value,
            is_preview: bit(e.is_preview),
            is_literal: bit(e.is_literal),
            is_multiline: bit(e.is_multiline),
            is_shown_once: bit(e.is_shown_once),
            is_runtime: bit(e.is_runtime),
            is_buildtime: bit(e.is_buildtime),
            comment: e.comment,
            ...stamps(),
          })),
        )
        .execute();
    }
    for (const st of r.storages) {
      const storage = await trx
        .insertInto('storages')
        // New uuids: the volume keeps the engine name it has, so its data stays the resource's.
        .values({
          uuid: id(st.uuid),
          resource_id: rid,
          name: st.name,
          mount_path: st.mount_path,
          container: st.container,
          engine_volume: st.engine_volume ?? (opts.preserveUuids ? null : volumeName(r.uuid, st.name)),
          ...stamps(),
        })
        .returning('id')
        .executeTakeFirstOrThrow();
      for (const vb of st.backups) {
        const settings = { ...vb.settings };
        if (typeof settings.s3_storage_uuid === 'string' && !s3.has(settings.s3_storage_uuid)) {
          warnings.push(
            `The volume backup of ${r.name}/${st.name} saved to S3 storage ${settings.s3_storage_uuid}, which this team lacks: it now keeps local copies only; set an S3 storage on it again.`,
          );
          settings.s3_storage_uuid = null;
          settings.save_s3 = false;
        }
        await trx
          .insertInto('scheduled_volume_backups')
          .values({ uuid: id(vb.uuid), storage_id: storage.id, settings: JSON.stringify(settings), ...stamps() })
          .execute();
      }
    }
    if (r.files.length) {
      await trx
        .insertInto('file_storages')
        .values(r.files.map((f) => ({ uuid: id(f.uuid), resource_id: rid, mount_path: f.mount_path, content: f.content, is_directory: bit(f.is_directory), ...stamps() })))
        .execute();
    }
    if (r.scheduled_tasks.length) {
      await trx
        .insertInto('scheduled_tasks')
        .values(
          r.scheduled_tasks.map((t) => ({
            uuid: id(t.uuid),
            team_id: teamId,
            resource_id: rid,
            name: t.name,
            command: t.command!,
            frequency: t.frequency,
            container: t.container,
            timeout: t.timeout,
            enabled: bit(t.enabled),
            last_due: null,
            ...stamps(),
          })),
        )
        .execute();
    }
    for (const bk of r.backups) {
      const retention = Object.fromEntries(RETENTION.map((k) => [k, Number(bk.retention[k] ?? 0)])) as Record<(typeof RETENTION)[number], number>;
      await trx
        .insertInto('scheduled_database_backups')
        .values({
          uuid: id(bk.uuid),
          team_id: teamId,
          resource_id: rid,
          description: bk.description,
          enabled: bit(bk.enabled),
          save_s3: bit(bk.save_s3),
          frequency: bk.frequency,
          databases_to_backup: bk.databases_to_backup,
          dump_all: bit(bk.dump_all),
          ...retention,
          timeout: bk.timeout,
          ...stamps(),
        })
        .execute();
    }
  }
  created.additional_destinations = await attachCopies(trx, teamId, b, { serverId: server.id, resourceId, destId, warnings });
  if (tagNames.size) {
    await trx
      .insertInto('tags')
      .values([...tagNames].map((name) => ({ uuid: newUuid(), team_id: teamId, name, ...stamps() })))
      .onConflict((oc) => oc.columns(['team_id', 'name']).doNothing())
      .execute();
  }
  for (const v of b.shared_variables) {
    await trx
      .insertInto('shared_environment_variables')
      .values({
        team_id: teamId,
        type: 'server',
        scope_id: server.id,
        project_id: null,
        environment_id: null,
        server_id: server.id,
        key: v.key,
        value: v.value,
        is_literal: bit(v.is_literal),
        is_multiline: bit(v.is_multiline),
        is_shown_once: bit(v.is_shown_once),
        comment: v.comment,
        ...stamps(),
      })
      .execute();
    created.shared_variables++;
  }
  return { server_uuid: serverUuid, export_id: b.export_id, preserve_uuids: opts.preserveUuids, claimed: opts.claim, created, reused, warnings };
}

/**
 * The bundle's additional destinations, attached again where both ends are here: an application of
 * the bundle on another server's destination this team has (that server imported before with its
 * uuids), and another server's application this team has on a destination of the bundle (that
 * server imported before). Anything else is a warning saying what to attach after which import;
 * the copy's status is unknown until its next deployment.
 */
async function attachCopies(trx: Db, teamId: number, b: Bundle, at: { serverId: number; resourceId: Map<string, number>; destId: Map<string, number>; warnings: string[] }): Promise<number> {
  let n = 0;
  const attach = async (resourceId: number, destinationId: number, serverId: number) => {
    // One copy per server, as add_application_destination holds (the unique constraints would refuse a second).
    const have = await trx.selectFrom('application_destinations').select('id').where('resource_id', '=', resourceId).where('server_id', '=', serverId).executeTakeFirst();
    if (have) return false;
    await trx
      .insertInto('application_destinations')
      .values({ resource_id: resourceId, destination_id: destinationId, server_id: serverId, ...stamps() })
      .execute();
    n++;
    return true;
  };
  for (const r of b.resources) {
    const rid = at.resourceId.get(r.uuid)!;
    for (const a of r.additional_destinations ?? []) {
      const d = await trx.selectFrom('destinations').select(['id', 'server_id']).where('uuid', '=', a.destination_uuid).where('team_id', '=', teamId).executeTakeFirst();
      if (!d || d.server_id === at.serverId || !(await attach(rid, d.id, d.server_id))) {
        at.warnings.push(
          `${r.name} also ran on destination ${a.destination_uuid} of server ${a.server_uuid}, which this team does not have here: import that server (with its uuids), or add the destination again (add_application_destination).`,
        );
      }
    }
  }
  for (const c of b.copies ?? []) {
    const app = await trx
      .selectFrom('resources as r')
      .innerJoin('destinations as d', 'd.id', 'r.destination_id')
      .select(['r.id', 'd.server_id'])
      .where('r.uuid', '=', c.application_uuid)
      .where('r.team_id', '=', teamId)
      .where('r.kind', '=', 'application')
      .where('r.deleting', 'is', null)
      .executeTakeFirst();
    if (!app || app.server_id === at.serverId || !(await attach(app.id, at.destId.get(c.destination_uuid)!, at.serverId))) {
      at.warnings.push(
        `Application ${c.application_uuid} of another server also ran on destination ${c.destination_uuid} here, and this team does not have it: import its server (with its uuids), or add the destination again (add_application_destination).`,
      );
    }
  }
  return n;
}
