import { z } from 'zod';
import { atomically } from '../../store/atomic.js';
import { nowIso, type Db } from '../../store/db.js';
import { BerthError, notFound, validationError } from '../../errors.js';
import { newUuid } from '../../ids.js';
import { owned, ownedResource } from '../lookup.js';
import { defineOperation } from '../operation.js';
import { uuidParam } from '../validators.js';
import { CREATE, messageSchema, READ, stamps, UPDATE } from './common.js';
import type { Collection } from '../model/kinds.js';
import { perCollection } from './resource-common.js';

const tagSchema = z.object({ uuid: z.string(), name: z.string(), created_at: z.string(), updated_at: z.string() });

/** As Coolify: trimmed and lower case; berth's tag characters (the same rule as resource tags). */
const tagName = z
  .string()
  .transform((v) => v.trim().toLowerCase())
  .pipe(
    z
      .string()
      .min(2)
      .max(64)
      .regex(/^[a-z0-9._-]+$/, 'Tags use letters, digits and . _ -.'),
  );

/**
 * Every name a team's resources carry has a record (resources may have been tagged at create or
 * update). Resources and records are read in one transaction: read apart, a tag deleted in
 * between (record and names gone together) would come back as a new record.
 */
async function syncRecords(db: Db, teamId: number): Promise<void> {
  await atomically(db, async (trx) => {
    const used = new Set<string>();
    for (const r of await trx.selectFrom('resources').select('tags').where('team_id', '=', teamId).execute()) for (const t of JSON.parse(r.tags) as string[]) used.add(t);
    const have = new Set((await trx.selectFrom('tags').select('name').where('team_id', '=', teamId).execute()).map((t) => t.name));
    await ensureRecords(
      trx,
      teamId,
      [...used].filter((n) => !have.has(n)),
    );
  });
}

/** A record for each name, keeping the record (and uuid) a name already has. One statement. */
async function ensureRecords(db: Db, teamId: number, names: string[]): Promise<void> {
  if (!names.length) return;
  await db
    .insertInto('tags')
    .values(names.map((name) => ({ uuid: newUuid(), team_id: teamId, name, ...stamps() })))
    .onConflict((oc) => oc.columns(['team_id', 'name']).doNothing())
    .execute();
}

const view = (t: { uuid: string; name: string; created_at: string; updated_at: string }) => ({ uuid: t.uuid, name: t.name, created_at: t.created_at, updated_at: t.updated_at });

/** Rewrites the tag names of every resource of the team that carries `from` (to `to`, or without it). */
async function retag(db: Db, teamId: number, from: string, to: string | null): Promise<void> {
  for (const r of await db.selectFrom('resources').select(['id', 'tags']).where('team_id', '=', teamId).execute()) {
    const names = JSON.parse(r.tags) as string[];
    if (!names.includes(from)) continue;
    const next = [...new Set(names.flatMap((n) => (n === from ? (to ? [to] : []) : [n])))];
    await db
      .updateTable('resources')
      .set({ tags: JSON.stringify(next), updated_at: nowIso() })
      .where('id', '=', r.id)
      .execute();
  }
}

const taken = () => new BerthError('conflict', { message: 'Tag with this name already exists.' });

export const tagOperations = [
  defineOperation({
    name: 'list_tags',
    title: 'List tags',
    description: "The team's tags (uuid, name). Deploy everything that carries one with deploy(tag).",
    summary: "List the team's tags, by name.",
    permission: 'read',
    toolset: 'tags',
    input: () => z.strictObject({}),
    output: () => z.array(tagSchema),
    annotations: READ,
    http: { method: 'GET', path: '/api/v1/tags' },
    async run({ db, caller }) {
      await syncRecords(db, caller.teamId);
      return (await db.selectFrom('tags').selectAll().where('team_id', '=', caller.teamId).orderBy('name').execute()).map(view);
    },
  }),
  defineOperation({
    name: 'create_tag',
    title: 'Create a tag',
    description: 'Create a tag (2-64 letters, digits, . _ -; stored lower case, unique in the team). Attach it with add_application_tags and friends.',
    summary: 'Create a tag (trimmed, lower case, unique in the team).',
    permission: 'write',
    toolset: 'tags',
    input: () => z.strictObject({ name: tagName }),
    output: () => tagSchema,
    annotations: CREATE,
    storeOnly: true,
    http: { method: 'POST', path: '/api/v1/tags', status: 201 },
    async run({ db, caller }, { name }) {
      await syncRecords(db, caller.teamId);
      const row = { uuid: newUuid(), team_id: caller.teamId, name, ...stamps() };
      // One statement: of racing creates of one name, one inserts and the others see its row.
      const inserted = await db
        .insertInto('tags')
        .values(row)
        .onConflict((oc) => oc.columns(['team_id', 'name']).doNothing())
        .returning('id')
        .executeTakeFirst();
      if (!inserted) throw taken();
      return view(row);
    },
  }),
  defineOperation({
    name: 'update_tag',
    title: 'Rename a tag',
    description: 'Rename a tag; every application, database and service carrying it carries the new name.',
    summary: 'Rename a tag: every application, database and service that carries it carries the new name.',
    permission: 'write',
    toolset: 'tags',
    input: () => z.strictObject({ uuid: uuidParam, name: tagName }),
    output: () => tagSchema,
    annotations: UPDATE,
    storeOnly: true,
    http: { method: 'PATCH', path: '/api/v1/tags/{uuid}' },
    async run({ db, caller }, { uuid, name }) {
      return atomically(db, async (trx) => {
        const t = await owned(trx, 'tags', uuid, caller.teamId);
        if (name === t.name) return view(t);
        if (await trx.selectFrom('tags').select('id').where('team_id', '=', caller.teamId).where('name', '=', name).executeTakeFirst()) throw taken();
        const updated_at = nowIso();
        await trx.updateTable('tags').set({ name, updated_at }).where('id', '=', t.id).execute();
        await retag(trx, caller.teamId, t.name, name);
        return view({ ...t, name, updated_at });
      });
    },
  }),
  defineOperation({
    name: 'delete_tag',
    title: 'Delete a tag',
    description: 'Delete a tag; the resources that carried it lose it (they are not deleted).',
    summary: 'Delete a tag; the resources that carried it lose it.',
    permission: 'write',
    toolset: 'tags',
    input: () => z.strictObject({ uuid: uuidParam }),
    output: () => messageSchema,
    annotations: { readOnly: false, destructive: true, idempotent: true, openWorld: false },
    storeOnly: true,
    http: { method: 'DELETE', path: '/api/v1/tags/{uuid}' },
    async run({ db, caller }, { uuid }) {
      await atomically(db, async (trx) => {
        const t = await owned(trx, 'tags', uuid, caller.teamId);
        await trx.deleteFrom('tags').where('id', '=', t.id).execute();
        await retag(trx, caller.teamId, t.name, null);
      });
      return { message: 'Tag deleted.' };
    },
  }),
];

/** Tags of one application, database or service: list, add (creating new names), remove. */
export function resourceTagOperations(collection: Collection) {
  const { singular, kinds, one } = perCollection(collection);
  const base = `/api/v1/${collection}/{uuid}/tags`;
  const tagsOf = async (db: Db, teamId: number, names: string[]) =>
    names.length ? (await db.selectFrom('tags').selectAll().where('team_id', '=', teamId).where('name', 'in', names).orderBy('name').execute()).map(view) : [];
  return [
    defineOperation({
      name: `list_${singular}_tags`,
      title: `List ${singular} tags`,
      description: `The tags ${one} carries (uuid and name of each).`,
      summary: `List the tags of ${one}.`,
      permission: 'read',
      toolset: 'tags',
      input: () => z.strictObject({ uuid: uuidParam }),
      output: () => z.array(tagSchema),
      annotations: READ,
      http: { method: 'GET', path: base },
      async run({ db, caller }, { uuid }) {
        const r = await ownedResource(db, uuid, caller.teamId, kinds);
        await syncRecords(db, caller.teamId);
        return tagsOf(db, caller.teamId, JSON.parse(r.tags) as string[]);
      },
    }),
    defineOperation({
      name: `add_${singular}_tags`,
      title: `Tag ${one}`,
      description: `Add tags to ${one}: tag_name, or tag_names for several; new names become tags. Answers all its tags.`,
      summary: `Tag ${one} (tag_name, or tag_names for several); new names become tags. Answers all its tags.`,
      permission: 'write',
      toolset: 'tags',
      input: () => z.strictObject({ uuid: uuidParam, tag_name: tagName.optional(), tag_names: z.array(tagName).min(1).max(50).optional() }),
      output: () => z.array(tagSchema),
      annotations: UPDATE,
      storeOnly: true,
      http: { method: 'POST', path: base, status: 201 },
      async run({ db, caller }, { uuid, tag_name, tag_names }) {
        if ((tag_name === undefined) === (tag_names === undefined)) throw validationError({ tag_name: ['Give tag_name or tag_names (one of them).'] });
        // The list is read, extended and written back in one transaction: read before it, a
        // concurrent add or delete of another name was overwritten (a lost update).
        return atomically(db, async (trx) => {
          const r = await ownedResource(trx, uuid, caller.teamId, kinds);
          const names = [...new Set([...(JSON.parse(r.tags) as string[]), ...(tag_names ?? [tag_name!])])];
          if (names.length > 50) throw validationError({ tag_names: ['A resource carries at most 50 tags.'] });
          // Records for this resource's names only: the whole team's sync would make every tag
          // write of the team conflict with every other (PostgreSQL reads are tracked). Records
          // before resources, as every tag write does: one order of locks, no deadlock.
          await ensureRecords(trx, caller.teamId, names);
          await trx
            .updateTable('resources')
            .set({ tags: JSON.stringify(names), updated_at: nowIso() })
            .where('id', '=', r.id)
            .execute();
          return tagsOf(trx, caller.teamId, names);
        });
      },
    }),
    defineOperation({
      name: `remove_${singular}_tag`,
      title: `Untag ${one}`,
      description: `Take one tag (tag_uuid from list_tags) off ${one}. A tag nothing carries any more is deleted.`,
      summary: `Take a tag (tag_uuid) off ${one}; a tag no resource carries any more is deleted, as Coolify does.`,
      permission: 'write',
      toolset: 'tags',
      input: () => z.strictObject({ uuid: uuidParam, tag_uuid: uuidParam }),
      output: () => messageSchema,
      annotations: { readOnly: false, destructive: true, idempotent: true, openWorld: false },
      storeOnly: true,
      http: { method: 'DELETE', path: `${base}/{tag_uuid}` },
      async run({ db, caller }, { uuid, tag_uuid }) {
        await atomically(db, async (trx) => {
          const r = await ownedResource(trx, uuid, caller.teamId, kinds);
          const t = await owned(trx, 'tags', tag_uuid, caller.teamId);
          const names = JSON.parse(r.tags) as string[];
          if (!names.includes(t.name)) throw notFound();
          // The record goes first if no other resource carries the name (records before resources).
          const others = await trx.selectFrom('resources').select('tags').where('team_id', '=', caller.teamId).where('id', '!=', r.id).execute();
          if (!others.some((x) => (JSON.parse(x.tags) as string[]).includes(t.name))) await trx.deleteFrom('tags').where('id', '=', t.id).execute();
          await trx
            .updateTable('resources')
            .set({ tags: JSON.stringify(names.filter((n) => n !== t.name)), updated_at: nowIso() })
            .where('id', '=', r.id)
            .execute();
        });
        return { message: 'Tag removed.' };
      },
    }),
  ];
}
