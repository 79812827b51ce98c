import { z } from 'zod';
import { sourceLeftovers } from '../migration-leftovers.js';
import { brief } from '../runtime-fields.js';
import { NOT_OBSERVED } from '../observed-status.js';
import { nowIso } from '../../store/db.js';
import type { Selectable } from 'kysely';
import type { MigrationJobsTable } from '../../store/schema.js';
import { BerthError, validationError } from '../../errors.js';
import { newUuid } from '../../ids.js';
import { owned, ownedResource } from '../lookup.js';
import { defineOperation, type OperationContext } from '../operation.js';
import { waitForDeployment } from './deployments.js';
import { listOf, paged, pageInput } from '../pagination.js';
import { uuidParam } from '../validators.js';
import { answerBound, follow, followSchema, type AnswerBound } from '../answer-bound.js';
import type { MigrationProgress } from '../runtime.js';
import { ENGINE, messageSchema, READ, stamps } from './common.js';
import { serverOf, perCollection } from './resource-common.js';
import type { Collection } from '../model/kinds.js';
import { isManaged } from './servers.js';

export const migrationSchema = z.object({
  migration_uuid: z.string(),
  resource_uuid: z.string(),
  from_destination_uuid: z.string(),
  destination_uuid: z.string(),
  migrate_volumes: z.boolean(),
  start_on_destination: z.boolean(),
  start_deployment_uuid: brief(z.string().nullable().describe('The start deployment start_on_destination queued on the target, once switched.')),
  /** Whether volume data moves: migrate_volumes and both servers managed. */
  moves_data: z.boolean(),
  status: z.string().describe('pending, copying, finished, failed or cancelled.'),
  progress: z
    .object({
      phase: z.string().describe('queued, pre-copy (running), final-sync (stopped), verify, switch, done.'),
      round: z.number().int(),
      volumes_total: z.number().int(),
      volumes_done: z.number().int(),
      bytes: z.number().int().describe('Sent so far, all rounds.'),
      bytes_total: z.number().int().describe('Size of its files at the last snapshot.'),
    })
    .partial(),
  downtime_ms: z.number().int().nullable().describe('Stopped time: stop on the source to switch.'),
  error: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
  finished_at: z.string().nullable(),
});

type MigrationRow = Selectable<MigrationJobsTable>;

const PHASE_STEP: Partial<Record<MigrationProgress['phase'], number>> = { 'final-sync': 1, verify: 2, switch: 3, done: 4 };
const PHASE_TEXT: Partial<Record<MigrationProgress['phase'], string>> = {
  'pre-copy': 'copying while it runs',
  'final-sync': 'stopped, sending the last changes',
  verify: 'verifying the copies',
  switch: 'switching over',
  done: 'done',
};
const mib = (n: number) => `${(n / 1048576).toFixed(1)} MiB`;

/**
 * One MCP progress notification from a migration's state. Progress counts archive bytes sent
 * plus one step per phase after the copy (so a phase change alone still makes it grow, as MCP
 * requires); total is what the copy was expected to send (measured before it) plus those steps.
 */
function progressNote(p: MigrationProgress): { progress: number; total?: number; message: string } {
  const step = PHASE_STEP[p.phase] ?? 0;
  const expected = p.bytes_expected ?? 0;
  const total = expected > 0 ? Math.max(expected, p.bytes) + 4 : undefined;
  const of = expected > 0 ? ` of ~${mib(Math.max(expected, p.bytes))}` : '';
  return {
    progress: p.bytes + step,
    ...(total !== undefined ? { total } : {}),
    message: `${p.phase} (${PHASE_TEXT[p.phase] ?? p.phase}), round ${p.round}: ${p.volumes_done}/${p.volumes_total} volumes verified, ${mib(p.bytes)} sent${of}${p.current_volume ? `, volume ${p.current_volume}` : ''}`,
  };
}

export async function migrationView(db: import('../../store/db.js').Db, m: MigrationRow): Promise<z.infer<typeof migrationSchema>> {
  const [r, from, to, start] = await Promise.all([
    db.selectFrom('resources').select('uuid').where('id', '=', m.resource_id).executeTakeFirstOrThrow(),
    db.selectFrom('destinations').select('uuid').where('id', '=', m.from_destination_id).executeTakeFirst(),
    db.selectFrom('destinations').select('uuid').where('id', '=', m.to_destination_id).executeTakeFirst(),
    m.start_deployment_id === null ? undefined : db.selectFrom('deployments').select('uuid').where('id', '=', m.start_deployment_id).executeTakeFirst(),
  ]);
  return {
    migration_uuid: m.uuid,
    resource_uuid: r.uuid,
    from_destination_uuid: from?.uuid ?? '',
    destination_uuid: to?.uuid ?? '',
    migrate_volumes: m.migrate_volumes === 1,
    start_on_destination: m.start_on_destination === 1,
    start_deployment_uuid: start?.uuid ?? null,
    moves_data: m.moves_data === 1,
    status: m.status,
    // Only the public counters (a migration from an older berth has fewer).
    progress: (({ phase, round, volumes_total, volumes_done, bytes, bytes_total }) => ({ phase, round, volumes_total, volumes_done, bytes, bytes_total }))(
      JSON.parse(m.progress) as Record<string, never>,
    ),
    downtime_ms: m.downtime_ms,
    error: m.error,
    created_at: m.created_at,
    updated_at: m.updated_at,
    finished_at: m.finished_at,
  };
}

type Started = { ok: boolean; error: string | null; deployment_uuid?: string };

/**
 * How the start a migration queued on its target went, waited for as start_* waits (a long
 * queue answers before it ends): its error is the migration's (recorded by the job).
 */
async function startedOnDestination(ctx: OperationContext, bound: AnswerBound, migrationId: number, queued?: { uuid: string; done: Promise<void> } | { error: string }): Promise<Started> {
  if (queued && 'error' in queued) return { ok: false, error: queued.error };
  const m = await ctx.db
    .selectFrom('migrations_jobs as m')
    .leftJoin('deployments as d', 'd.id', 'm.start_deployment_id')
    .select(['m.error', 'd.id', 'd.uuid'])
    .where('m.id', '=', migrationId)
    .executeTakeFirstOrThrow();
  if (m.id === null || m.uuid === null) return { ok: false, error: m.error ?? 'Moved, but no start was queued; start it.' };
  const { ended, status } = await waitForDeployment(ctx.db, bound, m.id, queued?.done ?? ctx.jobs.deploymentEnded(m.id));
  const error = (await ctx.db.selectFrom('migrations_jobs').select('error').where('id', '=', migrationId).executeTakeFirstOrThrow()).error;
  return { ok: ended && status === 'finished', error: ended ? error : null, deployment_uuid: m.uuid };
}

/**
 * The spec's migrate: stop the resource, move its records to the destination, never redeploy.
 * Volume data moves only with migrate_volumes and both servers managed; that transfer is a job
 * of its own (a migration record), pending until the runtime moves it.
 */
export function migrateOperation(collection: Collection) {
  const { singular, kinds, toolset, one } = perCollection(collection);
  return defineOperation({
    name: `migrate_${singular}`,
    title: `Migrate ${singular}`,
    description: `Move ${one} with its volume data to a destination (list_destinations); stopped only for the last pass. start_on_destination starts it there; wait waits (else get_migration).`,
    default: true,
    summary: `Move ${one} to another destination/server with its volume data (copied while it runs, stopped for the last pass), does not redeploy.`,
    permission: 'write',
    toolset,
    input: () =>
      z.strictObject({
        uuid: uuidParam,
        destination_uuid: uuidParam,
        migrate_volumes: z.boolean().default(true),
        // The two opt-ins are left out of MCP schemas (the tool list's size budget; the tool
        // description names start_on_destination); accepted on every door.
        keep_source_volumes: brief(z.boolean().default(false).describe('Keep the source copies of moved volumes (default: removed once verified).')),
        wait: z.boolean().optional().describe('Wait up to the answer bound (25 s).'),
        start_on_destination: brief(
          z.boolean().default(false).describe('Start it on the target right after the switch (one short pause in all); by default it stays stopped and the caller redeploys.'),
        ),
      }),
    output: () =>
      z.object({
        message: z.string(),
        uuid: z.string(),
        destination_uuid: z.string(),
        migrate_volumes: z.boolean(),
        moves_data: z.boolean(),
        async: z.boolean(),
        volume_jobs: z.number().int(),
        migration_uuid: z.string(),
        status: z.string(),
        downtime_ms: z.number().int().nullable().optional(),
        started_on_destination: z.boolean().optional(),
        start_deployment_uuid: brief(z.string().optional().describe('The start deployment queued on the target (start_on_destination).')),
        follow: followSchema,
      }),
    annotations: { readOnly: false, destructive: true, idempotent: false, openWorld: true },
    http: { method: 'POST', path: `/api/v1/${collection}/{uuid}/migrate` },
    async run(ctx, i) {
      const { db, caller } = ctx;
      const bound = answerBound(ctx);
      const r = await ownedResource(db, i.uuid, caller.teamId, kinds);
      const target = await owned(db, 'destinations', i.destination_uuid, caller.teamId);
      if (target.id === r.destination_id) throw validationError({ destination_uuid: ['Resource is already on the selected destination.'] });
      // A migration moves containers and their volumes between engines; a swarm service is neither.
      const from = await db.selectFrom('destinations').select('type').where('id', '=', r.destination_id).executeTakeFirstOrThrow();
      if (from.type === 'swarm' || target.type === 'swarm') {
        throw validationError({
          destination_uuid: [
            `berth does not migrate ${from.type === 'swarm' ? 'from' : 'to'} a swarm destination: a swarm service's tasks and volumes live on the swarm's nodes. Create the resource on the other destination and move its data with a backup instead.`,
          ],
        });
      }
      // additional destinations: one copy per server, so the primary does not move onto a copy's server
      if (await db.selectFrom('application_destinations').select('id').where('resource_id', '=', r.id).where('server_id', '=', target.server_id).executeTakeFirst())
        throw validationError({ destination_uuid: ['The application already runs on that server as an additional destination; remove it there first.'] });
      // What the resource runs must be allowed where it goes (host-reaching settings need host access there).
      const refusal = await ctx.runtime.placementRefusal(r.id, target.id);
      if (refusal) throw validationError({ destination_uuid: [`The target server does not allow this: ${refusal}`] });
      if (r.status === 'migrating') throw new BerthError('conflict', { message: 'The resource is being migrated; wait for that migration to finish.' });
      // A deployment still waiting or running would act on the old server after the move.
      const busy = await db.selectFrom('deployments').select('uuid').where('resource_id', '=', r.id).where('status', 'in', ['queued', 'in_progress']).executeTakeFirst();
      if (busy) throw new BerthError('conflict', { message: `Deployment ${busy.uuid} of this resource is queued or running; wait for it or cancel it, then migrate.` });
      const [fromServer, toServer] = await Promise.all([serverOf(db, r), db.selectFrom('servers').selectAll().where('id', '=', target.server_id).executeTakeFirstOrThrow()]);
      const volumes = await db.selectFrom('storages').select('id').where('resource_id', '=', r.id).execute();
      const crossServer = fromServer.id !== toServer.id;
      const movesData = i.migrate_volumes && crossServer && isManaged(fromServer) && isManaged(toServer) && volumes.length > 0;
      const migrationUuid = newUuid();
      const row = {
        uuid: migrationUuid,
        team_id: caller.teamId,
        resource_id: r.id,
        from_destination_id: r.destination_id,
        to_destination_id: target.id,
        migrate_volumes: i.migrate_volumes ? 1 : 0,
        keep_source_volumes: i.keep_source_volumes ? 1 : 0,
        moves_data: movesData ? 1 : 0,
        error: null,
        previous_status: r.status,
        start_on_destination: i.start_on_destination ? 1 : 0,
        ...stamps(),
      };
      const why = !i.migrate_volumes
        ? 'migrate_volumes is false, so no volume data moves.'
        : !crossServer
          ? 'Both destinations are on the same server, so the volumes stay where they are.'
          : volumes.length === 0
            ? 'It has no persistent volumes.'
            : !movesData
              ? 'One of the servers is not managed by berth (no validated engine), so no volume data moves.'
              : `Its ${volumes.length} volume(s) are copied to the new server while it runs; it is stopped only for the last pass, and moves there when the copy is verified (follow migration ${migrationUuid}).`;
      const label = `${singular[0]!.toUpperCase()}${singular.slice(1)}`;
      const result = (status: string, downtimeMs: number | null = null, started?: Started) => ({
        message:
          status === 'finished'
            ? started?.ok
              ? `${label} moved to the new destination and started there. ${why}`
              : `${label} stopped and moved to the new destination. ${why} ${
                  !started ? 'Redeploy when ready.' : started.error ? started.error : `Its start on the destination is queued and has not finished yet (deployment ${started.deployment_uuid}).`
                }`
            : status === 'failed' || status === 'cancelled'
              ? `${label} migration ${status}; it stays on its old destination as it was.`
              : movesData
                ? `${label} migration started. ${why} Redeploy when it has moved.`
                : `${label} stopped. ${why} Redeploy when it has moved.`,
        uuid: r.uuid,
        destination_uuid: target.uuid,
        migrate_volumes: i.migrate_volumes,
        moves_data: movesData,
        async: movesData,
        volume_jobs: movesData ? volumes.length : 0,
        migration_uuid: migrationUuid,
        status,
        ...(status === 'finished' && movesData ? { downtime_ms: downtimeMs } : {}),
        ...(status === 'finished' && started ? { started_on_destination: started.ok } : {}),
        ...(started?.deployment_uuid ? { start_deployment_uuid: started.deployment_uuid } : {}),
        follow: follow.migration(migrationUuid),
      });

      if (!movesData) {
        try {
          await ctx.runtime.stopResource(r.id, ctx.signal);
        } catch (err) {
          throw new BerthError('conflict', { message: `Could not stop the resource on its server, so nothing was moved: ${(err as Error).message}` });
        }
        const done = await db.transaction().execute(async (trx) => {
          const leftovers = await sourceLeftovers(trx, { resource_id: r.id, from_destination_id: r.destination_id, to_destination_id: target.id }, [], false);
          const inserted = await trx
            .insertInto('migrations_jobs')
            .values({ ...row, status: 'finished', progress: '{}', leftovers, finished_at: nowIso() })
            .returning('id')
            .executeTakeFirstOrThrow();
          await trx
            .updateTable('resources')
            .set({ destination_id: target.id, status: 'exited', ...NOT_OBSERVED, updated_at: nowIso() })
            .where('id', '=', r.id)
            .execute();
          if (i.start_on_destination) await ctx.jobs.recordMovedStart(trx, { id: inserted.id, team_id: caller.teamId, resource_id: r.id, to_destination_id: target.id });
          return inserted;
        });
        // Queued on the target like start_* (its queue and cap apply), and waited for as start_* does.
        const started = i.start_on_destination ? await startedOnDestination(ctx, bound, done.id, await ctx.jobs.startMoved(done.id)) : undefined;
        // Its stopped container stays on the old server no longer: removed now (retried if that fails).
        await ctx.jobs.removeLeftovers(done.id);
        return result('finished', null, started);
      }

      const m = await db.transaction().execute(async (trx) => {
        const inserted = await trx
          .insertInto('migrations_jobs')
          .values({ ...row, status: 'pending', progress: JSON.stringify({ phase: 'queued', round: 0, volumes_total: volumes.length, volumes_done: 0, bytes: 0, bytes_total: 0 }), finished_at: null })
          .returning('id')
          .executeTakeFirstOrThrow();
        await trx.updateTable('resources').set({ status: 'migrating', updated_at: nowIso() }).where('id', '=', r.id).execute();
        return inserted;
      });
      let done: Promise<void>;
      try {
        // Notifications an agent can follow (the bound throttles them), each with the total when known.
        const onProgress = bound.reporting ? (p: MigrationProgress) => bound.report(progressNote(p)) : undefined;
        ({ done } = await ctx.jobs.enqueueMigration(m.id, toServer.id, onProgress));
        ctx.onJob?.({ kind: 'migration', uuid: migrationUuid });
      } catch (err) {
        // A full queue leaves nothing behind: no migration record, the resource as it was.
        await db.transaction().execute(async (trx) => {
          await trx.deleteFrom('migrations_jobs').where('id', '=', m.id).execute();
          await trx.updateTable('resources').set({ status: r.status, updated_at: nowIso() }).where('id', '=', r.id).execute();
        });
        throw err;
      }
      // A caller that asked to wait (or for progress: an MCP progress token; or a task's call,
      // bound to the end) waits, within the call's answer bound.
      if (i.wait ?? (ctx.progress !== undefined || bound.toEnd)) {
        const look = async () => {
          const now = await db.selectFrom('migrations_jobs').select('progress').where('id', '=', m.id).executeTakeFirst();
          // Until the copy has measured what it will send there is no total: say nothing yet (the
          // answer bound ends the call long before a client would give up on its silence).
          const note = now && progressNote(JSON.parse(now.progress) as MigrationProgress);
          return note?.total === undefined ? undefined : note;
        };
        await bound.wait(
          done.catch(() => undefined),
          look,
        );
        const now = await db.selectFrom('migrations_jobs').select(['status', 'downtime_ms', 'progress', 'error']).where('id', '=', m.id).executeTakeFirstOrThrow();
        const last = JSON.parse(now.progress) as MigrationProgress;
        const note = progressNote({ ...last, phase: now.status === 'finished' ? 'done' : last.phase });
        const ended = ['finished', 'failed', 'cancelled'].includes(now.status);
        bound.finish({
          ...note,
          ...(ended ? { progress: note.total ?? note.progress } : {}),
          message: now.status === 'finished' || !ended ? note.message : `${now.status}: ${now.error ?? ''}`.trim(),
        });
        // The job queued the start on the target at the switch (see jobs.ts): waited for here too.
        const started = now.status === 'finished' && i.start_on_destination ? await startedOnDestination(ctx, bound, m.id) : undefined;
        return result(now.status, now.downtime_ms, started);
      }
      return result('pending');
    },
  });
}

export const migrationOperations = [
  defineOperation({
    name: 'list_migrations',
    title: 'List migrations',
    description: "The team's migrations, newest first, with their volume transfer status.",
    summary: 'List the team’s migrations, newest first.',
    permission: 'read',
    toolset: 'deployments',
    input: () => z.strictObject({ ...pageInput }),
    output: () => listOf(migrationSchema),
    annotations: READ,
    http: { method: 'GET', path: '/api/v1/migrations', list: true },
    async run({ db, caller }, p) {
      const base = db.selectFrom('migrations_jobs').where('team_id', '=', caller.teamId);
      return paged(
        base,
        p,
        (q) => q.selectAll().orderBy('id', 'desc'),
        (rows) => Promise.all(rows.map((m) => migrationView(db, m))),
      );
    },
  }),
  defineOperation({
    name: 'get_migration',
    title: 'Get a migration',
    description: 'Follow a migration (migrate_*): status, phase (pre-copy round N, final-sync, verify, switch), bytes sent, downtime_ms once done.',
    default: true,
    summary: 'Get a migration: its status and volume transfer progress.',
    permission: 'read',
    toolset: 'deployments',
    input: () => z.strictObject({ uuid: uuidParam }),
    output: () => migrationSchema,
    annotations: READ,
    http: { method: 'GET', path: '/api/v1/migrations/{uuid}' },
    async run({ db, caller }, { uuid }) {
      return migrationView(db, await owned(db, 'migrations_jobs', uuid, caller.teamId));
    },
  }),
  defineOperation({
    name: 'cancel_migration',
    title: 'Cancel a migration',
    description: 'Cancel a migration before its switch: the copy stops, the copies on the target are removed, and the resource stays (running if it ran) where it was.',
    summary: 'Cancel a migration before its switch: the copy stops, what it wrote on the target is removed, the resource stays as it was.',
    permission: 'write',
    toolset: 'deployments',
    input: () => z.strictObject({ uuid: uuidParam }),
    output: () => messageSchema,
    annotations: ENGINE,
    http: { method: 'POST', path: '/api/v1/migrations/{uuid}/cancel' },
    async run({ db, caller, jobs }, { uuid }) {
      const m = await owned(db, 'migrations_jobs', uuid, caller.teamId);
      if (!(await jobs.cancelMigration(m.id))) {
        throw new BerthError('conflict', { message: `Migration ${uuid} is ${m.status === 'copying' ? 'switching over' : m.status} and can no longer be cancelled.` });
      }
      return { message: 'Migration cancelled; the resource stays where it was.' };
    },
  }),
];
