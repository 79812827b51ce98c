import { sql, type Kysely } from 'kysely';
import { newUuid } from '../../ids.js';
import { autoId } from '../portable.js';

/**
 * Tag records (Coolify's tags): a team's names with uuids. Resources keep the names they carry
 * (their `tags` column); a record exists for every name in use, and renaming or deleting a record
 * changes every resource of the team that carries it.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await autoId(db.schema.createTable('tags'))
    .addColumn('uuid', 'text', (c) => c.notNull().unique())
    .addColumn('team_id', 'integer', (c) => c.notNull().references('teams.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('tags_team_name', ['team_id', 'name'])
    .execute();
  // Records for the names resources already carry.
  const rows = (await sql<{ team_id: number; tags: string }>`select team_id, tags from resources`.execute(db)).rows;
  const seen = new Set<string>();
  const now = new Date().toISOString();
  for (const r of rows) {
    for (const name of JSON.parse(r.tags) as string[]) {
      const key = `${r.team_id}\0${name}`;
      if (seen.has(key)) continue;
      seen.add(key);
      await sql`insert into tags (uuid, team_id, name, created_at, updated_at) values (${newUuid()}, ${r.team_id}, ${name}, ${now}, ${now})`.execute(db);
    }
  }
}
