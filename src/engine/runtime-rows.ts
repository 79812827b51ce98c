import type { Logger } from 'pino';
import type { BuildpackImages } from '../config/config.js';
import type { DatabaseConfig } from '../core/model/database.js';
import type { DatabaseKind } from '../core/model/kinds.js';
import type { TargetGuard } from '../core/outbound-guard.js';
import { SERVER_ENGINE_COLUMNS, type ServerEngine } from '../core/runtime.js';
import type { Db } from '../store/db.js';
import type { EngineClient } from './engine-client.js';

/**
 * The runtime's reads of the records, in one place: the runtime's modules ask these which server
 * and engine a resource, migration or backup concerns, then act on the engine.
 */

/** What the runtime's modules share: the records, berth's log, its settings and the engines. */
export interface RuntimeParts {
  readonly db: Db;
  readonly logger: Logger;
  /** Image for the helper containers of a volume copy and of volume backups. */
  readonly helperImage: string;
  /** Also compare every file's sha256 after a volume copy. */
  readonly checksums: boolean;
  /** Where a team's git repositories may be fetched from (the outbound guard). */
  readonly outbound: TargetGuard;
  /** The base images of generated builds (nixpacks, static). */
  readonly buildpackImages: BuildpackImages;
  /** The server's engine client (unix, TCP or SSH), reused while the record is unchanged. */
  engineFor(server: ServerEngine): Promise<EngineClient>;
  /** A server's engine when berth manages it; undefined when the server is gone or record-only. */
  liveEngineOf(serverId: number): Promise<EngineClient | undefined>;
  /** The engine of a resource's server; undefined when the server is record-only. */
  liveEngineOfResource(resourceId: number): Promise<EngineClient | undefined>;
  /** After a deployment or a removal: the server's proxy routes what the records now say (never fails). */
  routeProxy(serverId: number, log?: (line: string) => Promise<void>): Promise<void>;
}

/** The server a resource lives on (through its destination). */
export function serverOfResource(db: Db, resourceId: number): Promise<ServerEngine> {
  return db
    .selectFrom('resources as r')
    .innerJoin('destinations as d', 'd.id', 'r.destination_id')
    .innerJoin('servers as s', 's.id', 'd.server_id')
    .select(SERVER_ENGINE_COLUMNS.map((c) => `s.${c}` as const))
    .where('r.id', '=', resourceId)
    .executeTakeFirstOrThrow();
}

/** A server's engine columns; undefined when there is no such server. */
export function serverById(db: Db, serverId: number): Promise<ServerEngine | undefined> {
  return db
    .selectFrom('servers')
    .select([...SERVER_ENGINE_COLUMNS])
    .where('id', '=', serverId)
    .executeTakeFirst();
}

/** A server's engine columns; throws when there is no such server. */
export async function serverByIdOrThrow(db: Db, serverId: number): Promise<ServerEngine> {
  return db
    .selectFrom('servers')
    .select([...SERVER_ENGINE_COLUMNS])
    .where('id', '=', serverId)
    .executeTakeFirstOrThrow();
}

/** A migration, its resource, and the servers it moves from and to. */
export async function migrationRows(db: Db, migrationId: number) {
  const m = await db.selectFrom('migrations_jobs').selectAll().where('id', '=', migrationId).executeTakeFirstOrThrow();
  const r = await db.selectFrom('resources').select(['id', 'uuid']).where('id', '=', m.resource_id).executeTakeFirstOrThrow();
  const serverOf = (destinationId: number): Promise<ServerEngine> =>
    db
      .selectFrom('destinations as d')
      .innerJoin('servers as s', 's.id', 'd.server_id')
      .select(SERVER_ENGINE_COLUMNS.map((c) => `s.${c}` as const))
      .where('d.id', '=', destinationId)
      .executeTakeFirstOrThrow();
  const [from, to] = await Promise.all([serverOf(m.from_destination_id), serverOf(m.to_destination_id)]);
  return { m, r, from, to };
}

/** An execution with its backup settings and its database. */
export async function backupRows(db: Db, executionId: number) {
  const e = await db.selectFrom('scheduled_database_backup_executions').selectAll().where('id', '=', executionId).executeTakeFirstOrThrow();
  const b = await db.selectFrom('scheduled_database_backups').selectAll().where('id', '=', e.backup_id).executeTakeFirstOrThrow();
  const r = await db.selectFrom('resources').selectAll().where('id', '=', b.resource_id).executeTakeFirstOrThrow();
  return { e, b, r, c: JSON.parse(r.config) as DatabaseConfig, kind: r.kind as DatabaseKind };
}

/** What the records name on every server, whichever team: volumes storages name, and resources' uuids. */
export async function recordedNames(db: Db): Promise<{ volumes: Set<string>; resources: Set<string> }> {
  const storages = await db.selectFrom('storages').select('engine_volume').where('engine_volume', 'is not', null).execute();
  const resources = await db.selectFrom('resources').select('uuid').execute();
  return { volumes: new Set(storages.map((s) => s.engine_volume!)), resources: new Set(resources.map((r) => r.uuid)) };
}
