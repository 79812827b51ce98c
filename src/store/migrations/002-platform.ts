import type { CreateTableBuilder, Kysely } from 'kysely';
import { autoId } from '../portable.js';

/**
 * The platform's resources. Every row that a team owns carries team_id, so every lookup can be
 * scoped in SQL. Public identifiers are `uuid` (24 lowercase alphanumerics, as Coolify's);
 * integer ids stay internal. Type-specific fields live in a JSON `config` column.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const timestamps = (t: CreateTableBuilder<string, any>): CreateTableBuilder<string, any> => t.addColumn('created_at', 'text', (c) => c.notNull()).addColumn('updated_at', 'text', (c) => c.notNull());

  await timestamps(
    autoId(db.schema.createTable('private_keys'))
      .addColumn('uuid', 'text', (c) => c.notNull().unique())
      .addColumn('team_id', 'integer', (c) => c.notNull().references('teams.id').onDelete('cascade'))
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('description', 'text')
      .addColumn('private_key', 'text', (c) => c.notNull())
      .addColumn('fingerprint', 'text', (c) => c.notNull()),
  ).execute();

  await timestamps(
    autoId(db.schema.createTable('servers'))
      .addColumn('uuid', 'text', (c) => c.notNull().unique())
      .addColumn('team_id', 'integer', (c) => c.notNull().references('teams.id').onDelete('cascade'))
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('description', 'text')
      .addColumn('ip', 'text', (c) => c.notNull())
      .addColumn('port', 'integer', (c) => c.notNull())
      .addColumn('user', 'text', (c) => c.notNull())
      .addColumn('private_key_id', 'integer', (c) => c.references('private_keys.id'))
      .addColumn('engine_endpoint', 'text')
      .addColumn('engine_tls', 'text')
      .addColumn('is_reachable', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('is_usable', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('validated_at', 'text')
      .addColumn('validation_logs', 'text'),
  ).execute();

  await timestamps(
    autoId(db.schema.createTable('destinations'))
      .addColumn('uuid', 'text', (c) => c.notNull().unique())
      .addColumn('team_id', 'integer', (c) => c.notNull().references('teams.id').onDelete('cascade'))
      .addColumn('server_id', 'integer', (c) => c.notNull().references('servers.id').onDelete('cascade'))
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('network', 'text', (c) => c.notNull()),
  )
    .addUniqueConstraint('destinations_network_per_server', ['server_id', 'network'])
    .execute();

  await timestamps(
    autoId(db.schema.createTable('projects'))
      .addColumn('uuid', 'text', (c) => c.notNull().unique())
      .addColumn('team_id', 'integer', (c) => c.notNull().references('teams.id').onDelete('cascade'))
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('description', 'text'),
  ).execute();

  await timestamps(
    autoId(db.schema.createTable('environments'))
      .addColumn('uuid', 'text', (c) => c.notNull().unique())
      .addColumn('project_id', 'integer', (c) => c.notNull().references('projects.id').onDelete('cascade'))
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('description', 'text'),
  )
    .addUniqueConstraint('environments_name_per_project', ['project_id', 'name'])
    .execute();

  // Applications, databases and services share one table: they share lookups, lifecycle,
  // deployments, migration and the /resources list; `kind` and `config` hold the differences.
  await timestamps(
    autoId(db.schema.createTable('resources'))
      .addColumn('uuid', 'text', (c) => c.notNull().unique())
      .addColumn('team_id', 'integer', (c) => c.notNull().references('teams.id').onDelete('cascade'))
      .addColumn('kind', 'text', (c) => c.notNull())
      .addColumn('environment_id', 'integer', (c) => c.notNull().references('environments.id'))
      .addColumn('destination_id', 'integer', (c) => c.notNull().references('destinations.id'))
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('description', 'text')
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('config', 'text', (c) => c.notNull())
      .addColumn('tags', 'text', (c) => c.notNull().defaultTo('[]')),
  ).execute();
  await db.schema.createIndex('resources_team_kind').on('resources').columns(['team_id', 'kind']).execute();

  await timestamps(
    autoId(db.schema.createTable('environment_variables'))
      .addColumn('uuid', 'text', (c) => c.notNull().unique())
      .addColumn('resource_id', 'integer', (c) => c.notNull().references('resources.id').onDelete('cascade'))
      .addColumn('key', 'text', (c) => c.notNull())
      .addColumn('value', 'text')
      .addColumn('is_preview', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('is_literal', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('is_multiline', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('is_shown_once', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('is_runtime', 'integer', (c) => c.notNull().defaultTo(1))
      .addColumn('is_buildtime', 'integer', (c) => c.notNull().defaultTo(1))
      .addColumn('comment', 'text'),
  )
    .addUniqueConstraint('env_key_per_resource', ['resource_id', 'key', 'is_preview'])
    .execute();

  await timestamps(
    autoId(db.schema.createTable('storages'))
      .addColumn('uuid', 'text', (c) => c.notNull().unique())
      .addColumn('resource_id', 'integer', (c) => c.notNull().references('resources.id').onDelete('cascade'))
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('mount_path', 'text', (c) => c.notNull())
      /** Which container of a service mounts it; null for applications and databases. */
      .addColumn('container', 'text')
      /** The engine volume holding the data when it is not the derived `<uuid>-<name>` (after a migration). */
      .addColumn('engine_volume', 'text'),
  )
    .addUniqueConstraint('storage_name_per_resource', ['resource_id', 'name'])
    .execute();

  await timestamps(
    autoId(db.schema.createTable('deployments'))
      .addColumn('uuid', 'text', (c) => c.notNull().unique())
      .addColumn('team_id', 'integer', (c) => c.notNull().references('teams.id').onDelete('cascade'))
      .addColumn('resource_id', 'integer', (c) => c.notNull().references('resources.id').onDelete('cascade'))
      .addColumn('server_id', 'integer', (c) => c.notNull())
      .addColumn('kind', 'text', (c) => c.notNull())
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('force', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('logs', 'text', (c) => c.notNull().defaultTo(''))
      .addColumn('started_at', 'text')
      .addColumn('finished_at', 'text'),
  ).execute();
  await db.schema.createIndex('deployments_resource').on('deployments').columns(['resource_id', 'id']).execute();

  await timestamps(
    autoId(db.schema.createTable('migrations_jobs'))
      .addColumn('uuid', 'text', (c) => c.notNull().unique())
      .addColumn('team_id', 'integer', (c) => c.notNull().references('teams.id').onDelete('cascade'))
      .addColumn('resource_id', 'integer', (c) => c.notNull().references('resources.id').onDelete('cascade'))
      .addColumn('from_destination_id', 'integer', (c) => c.notNull())
      .addColumn('to_destination_id', 'integer', (c) => c.notNull())
      .addColumn('migrate_volumes', 'integer', (c) => c.notNull())
      .addColumn('moves_data', 'integer', (c) => c.notNull())
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('progress', 'text', (c) => c.notNull().defaultTo('{}'))
      .addColumn('error', 'text')
      .addColumn('finished_at', 'text'),
  ).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const t of ['migrations_jobs', 'deployments', 'storages', 'environment_variables', 'resources', 'environments', 'projects', 'destinations', 'servers', 'private_keys']) {
    await db.schema.dropTable(t).execute();
  }
}
