import type { DeploymentKind } from '../model/deployment.js';
import { z } from 'zod';
import type { Db } from '../../store/db.js';
import { sql, type Selectable } from 'kysely';
import type { DeploymentsTable } from '../../store/schema.js';
import { BerthError, notFound, validationError } from '../../errors.js';
import { owned, ownedResource } from '../lookup.js';
import { defineOperation, type OperationContext } from '../operation.js';
import { listOf, paged, pageInput } from '../pagination.js';
import { sensitive } from '../redact.js';
import { RECORD_ONLY_NOTE } from '../runtime.js';
import { flag, uuidParam } from '../validators.js';
import { brief } from '../runtime-fields.js';
import { answerBound, follow, followSchema, followText, type AnswerBound, type Phase } from '../answer-bound.js';
import { ENGINE, READ } from './common.js';
import { displayStatus, serverOf, type ResourceRow, perCollection } from './resource-common.js';
import { isBuilt, UNBUILT_TAG, type ApplicationConfig } from '../model/application.js';
import { SINGULAR, type Collection } from '../model/kinds.js';
import { ensurePreview, previewRefusal, pullRequestInput } from './application-previews.js';

type DeploymentRow = Selectable<DeploymentsTable>;

/** A cancelled deployment's status as Coolify names it (the store keeps `cancelled`). */
export const CANCELLED = 'cancelled-by-user' as const;
/** A deployment status as the API shows it. */
export const shownStatus = <S extends string>(s: S) => (s === 'cancelled' ? CANCELLED : (s as Exclude<S, 'cancelled'>));

/** Log text longer than this is cut (with a marker) unless the caller asks for it in full. */
const LOG_PREVIEW_CHARS = 10_000;

export const deploymentSchema = z.object({
  id: z.number().int(),
  deployment_uuid: z.string(),
  kind: z.enum(['deploy', 'start', 'stop', 'restart']),
  status: z.enum(['queued', 'in_progress', 'finished', 'failed', CANCELLED]),
  force_rebuild: z.boolean(),
  /** A rollback: runs a kept image (rollback_application) instead of building or pulling. */
  rollback: brief(z.boolean()),
  /** A preview's deployment: the pull request it built (0: the application itself, Coolify's default). */
  pull_request_id: brief(z.number().int()),
  resource_uuid: z.string(),
  resource_name: z.string(),
  resource_type: z.string(),
  server_uuid: z.string(),
  server_name: z.string(),
  logs: sensitive(z.string()),
  logs_truncated: z.boolean(),
  started_at: z.string().nullable(),
  finished_at: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
});

/** The tail of a log, with a marker saying how much was cut and how to get it all. */
export function truncateLog(text: string, full: boolean, limit = LOG_PREVIEW_CHARS): { text: string; truncated: boolean } {
  if (full || text.length <= limit) return { text, truncated: false };
  return { text: `[… ${text.length - limit} earlier characters cut; ask with full=true …]\n${text.slice(-limit)}`, truncated: true };
}

async function views(db: Db, rows: DeploymentRow[], full = false): Promise<z.infer<typeof deploymentSchema>[]> {
  return Promise.all(
    rows.map(async (d) => {
      const r = await db.selectFrom('resources').select(['uuid', 'name', 'kind']).where('id', '=', d.resource_id).executeTakeFirstOrThrow();
      const s = await db.selectFrom('servers').select(['uuid', 'name']).where('id', '=', d.server_id).executeTakeFirst();
      const log = truncateLog(d.logs, full);
      return {
        id: d.id,
        deployment_uuid: d.uuid,
        kind: d.kind as DeploymentKind,
        status: shownStatus(d.status),
        force_rebuild: d.force === 1,
        rollback: d.rollback_tag != null,
        pull_request_id: d.pull_request_id,
        resource_uuid: r.uuid,
        resource_name: r.name,
        resource_type: r.kind,
        server_uuid: s?.uuid ?? '',
        server_name: s?.name ?? '',
        logs: log.text,
        logs_truncated: log.truncated,
        started_at: d.started_at,
        finished_at: d.finished_at,
        created_at: d.created_at,
        updated_at: d.updated_at,
      };
    }),
  );
}

/**
 * Records a deployment and puts it on its server's queue. When the queue is full the record is
 * removed again and the caller gets 429 "Deployment queue is full.": nothing half-queued stays.
 */
export async function queueDeployment(
  ctx: Pick<OperationContext, 'db' | 'jobs' | 'caller' | 'runtime' | 'onJob'>,
  r: ResourceRow,
  kind: DeploymentKind,
  force: boolean,
  opts: { rollbackTag?: string; pullRequestId?: number } = {},
) {
  if (r.status === 'migrating') throw new BerthError('conflict', { message: 'The resource is being migrated; deploy it when the migration has finished.' });
  if (r.deleting !== null) throw new BerthError('conflict', { message: 'The resource is being deleted.' });
  const server = await serverOf(ctx.db, r);
  const { done, ...d } = await ctx.jobs.queueDeployment({
    teamId: ctx.caller.teamId,
    resourceId: r.id,
    serverId: server.id,
    kind,
    force,
    ...(opts.rollbackTag ? { rollbackTag: opts.rollbackTag } : {}),
    ...(opts.pullRequestId ? { pullRequestId: opts.pullRequestId } : {}),
  });
  ctx.onJob?.({ kind: 'deployment', uuid: d.uuid });
  return { ...d, done, live: ctx.runtime.isLive(server) };
}

const note = (live: boolean) => (live ? '' : ` ${RECORD_ONLY_NOTE}`);

const deployResult = z.object({
  deployments: z.array(z.object({ message: z.string(), resource_uuid: z.string(), deployment_uuid: z.string() })),
});

/** The team's resources a deploy names by uuid or tag (none is a 404); the approval gate checks a held deploy with it too. */
export async function deployTargets(db: Db, teamId: number, i: { uuid?: unknown; tag?: unknown }) {
  const uuids = typeof i.uuid === 'string' && i.uuid ? i.uuid.split(',') : undefined;
  const tags = typeof i.tag === 'string' && i.tag ? i.tag.split(',') : undefined;
  if (uuids && tags) throw validationError({ uuid: ['You can only use uuid or tag, not both.'] });
  if (!uuids && !tags) throw validationError({ uuid: ['You must provide uuid or tag.'] });
  const all = await db.selectFrom('resources').selectAll().where('team_id', '=', teamId).orderBy('id').execute();
  const wanted = uuids ? all.filter((r) => uuids.includes(r.uuid)) : all.filter((r) => (JSON.parse(r.tags) as string[]).some((t) => tags!.includes(t)));
  if (!wanted.length) throw notFound();
  return wanted;
}

export const deploymentOperations = [
  defineOperation({
    name: 'deploy',
    title: 'Deploy resources',
    description: "Deploy resources by uuid (comma-separated) or tag (pr: a pull request's preview); follow the returned deployment uuids with get_deployment.",
    default: true,
    summary: 'Queue deployments of resources by uuid (comma list) or tag.',
    permission: 'deploy',
    toolset: 'deployments',
    input: () =>
      z.strictObject({
        uuid: z
          .string()
          .max(4096)
          .regex(/^[A-Za-z0-9]+(,[A-Za-z0-9]+)*$/, 'Comma-separated uuids.')
          .optional(),
        tag: z
          .string()
          .max(1024)
          .regex(/^[A-Za-z0-9._-]+(,[A-Za-z0-9._-]+)*$/, 'Comma-separated tag names.')
          .optional(),
        force: z.union([z.boolean(), z.enum(['true', 'false']).transform((v) => v === 'true')]).optional(),
        // Coolify's preview deployments: the pull request's head, beside the application (application-previews.ts).
        pr: pullRequestInput.meta({ 'berth.brief': true }).optional(),
      }),
    output: () => deployResult,
    annotations: ENGINE,
    // Coolify reads these from the query (a CI's `curl -X POST /deploy?uuid=…`) as from the body; a GET answers its 405.
    http: { method: 'POST', path: '/api/v1/deploy', query: ['uuid', 'tag', 'force', 'pr'], getMovedToPost: true },
    async run(ctx, i) {
      const pr = i.pr ?? 0;
      if (pr && i.tag) throw validationError({ pr: ['You can only use tag or pr, not both.'] });
      const targets = await deployTargets(ctx.db, ctx.caller.teamId, i);
      // Every target is checked before any preview is made or queued: a refused one refuses all.
      if (pr) {
        for (const r of targets) {
          const why = await previewRefusal(ctx.db, r);
          if (why) throw validationError({ pr: [why] });
        }
        for (const r of targets) await ensurePreview(ctx.db, r, pr);
      }
      const deployments = [];
      for (const r of targets) {
        const d = await queueDeployment(ctx, r, 'deploy', Boolean(i.force), { pullRequestId: pr });
        const label = SINGULAR[collectionOf(r)];
        const what = pr ? ` preview of pull request #${pr}` : '';
        deployments.push({ message: `${label[0]!.toUpperCase()}${label.slice(1)} ${r.name}${what} deployment queued.${note(d.live)}`, resource_uuid: r.uuid, deployment_uuid: d.uuid });
      }
      return { deployments };
    },
  }),
  defineOperation({
    name: 'list_deployments',
    title: 'List running deployments',
    description: "List the team's deployments that are queued or in progress.",
    summary: 'List the team’s deployments that are queued or in progress.',
    permission: 'read',
    toolset: 'deployments',
    input: () => z.strictObject({ ...pageInput }),
    output: () => listOf(deploymentSchema),
    annotations: READ,
    http: { method: 'GET', path: '/api/v1/deployments', list: true },
    async run({ db, caller }, p) {
      const base = db.selectFrom('deployments').where('team_id', '=', caller.teamId).where('status', 'in', ['queued', 'in_progress']);
      return paged(
        base,
        p,
        (q) => q.selectAll().orderBy('id', 'desc'),
        (rows) => views(db, rows),
      );
    },
  }),
  defineOperation({
    name: 'get_deployment',
    title: 'Get a deployment',
    description: 'A deployment\'s status and, with read:sensitive, its logs (full: "true" for all).',
    default: true,
    summary: 'Get a deployment with its status (and logs with read:sensitive).',
    permission: 'read',
    toolset: 'deployments',
    input: () =>
      z.strictObject({
        uuid: uuidParam,
        full: z
          .enum(['true', 'false'])
          .transform((v) => v === 'true')
          .optional(),
      }),
    output: () => deploymentSchema,
    annotations: READ,
    http: { method: 'GET', path: '/api/v1/deployments/{uuid}' },
    async run({ db, caller }, { uuid, full }) {
      const [v] = await views(db, [await owned(db, 'deployments', uuid, caller.teamId)], full);
      return v!;
    },
  }),
  defineOperation({
    name: 'cancel_deployment',
    title: 'Cancel a deployment',
    description: 'Cancel a queued or running deployment. Finished ones cannot be cancelled.',
    summary: 'Cancel a queued or running deployment.',
    permission: 'deploy',
    toolset: 'deployments',
    input: () => z.strictObject({ uuid: uuidParam }),
    output: () => z.object({ message: z.string(), deployment_uuid: z.string(), status: z.literal(CANCELLED) }),
    annotations: { readOnly: false, destructive: true, idempotent: false, openWorld: true },
    http: { method: 'POST', path: '/api/v1/deployments/{uuid}/cancel' },
    async run({ db, caller, jobs }, { uuid }) {
      const d = await owned(db, 'deployments', uuid, caller.teamId);
      if (!(await jobs.cancel(d.id))) {
        throw new BerthError('conflict', { message: `Deployment cannot be cancelled. Current status: ${d.status}` });
      }
      return { message: 'Deployment cancelled successfully.', deployment_uuid: uuid, status: CANCELLED };
    },
  }),
  defineOperation({
    name: 'list_application_deployments',
    title: 'List deployments of an application',
    description: "An application's deployment history, newest first.",
    summary: 'List an application’s deployments, newest first: `take` of them (default 10) after `skip`, and their total `count`.',
    permission: 'read',
    toolset: 'deployments',
    // Coolify's paging for this one list: skip/take, answered as {count, deployments}.
    input: () => z.strictObject({ uuid: uuidParam, skip: z.coerce.number().int().min(0).default(0), take: z.coerce.number().int().min(1).max(100).default(10) }),
    output: () => z.object({ count: z.number().int(), deployments: z.array(deploymentSchema) }),
    annotations: READ,
    http: { method: 'GET', path: '/api/v1/deployments/applications/{uuid}' },
    async run({ db, caller }, { uuid, skip, take }) {
      const r = await ownedResource(db, uuid, caller.teamId, ['application']);
      const base = db.selectFrom('deployments').where('resource_id', '=', r.id);
      // paged() counts on the page's own rows; an offset need not be a multiple of the page size.
      const counted = base.select(sql<number>`count(*) over ()`.as('berth_total'));
      const rows = await counted.selectAll().orderBy('id', 'desc').limit(take).offset(skip).execute();
      const count = rows.length ? Number(rows[0]!.berth_total) : Number((await base.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n);
      return { count, deployments: await views(db, rows) };
    },
  }),
];

export function collectionOf(r: Pick<ResourceRow, 'kind'>): Collection {
  return r.kind === 'application' ? 'applications' : r.kind === 'service' ? 'services' : 'databases';
}

const VERB: Record<'start' | 'stop' | 'restart', string> = { start: 'starting', stop: 'stopping', restart: 'restarting' };
const DONE: Record<'start' | 'stop' | 'restart', string> = { start: 'started', stop: 'stopped', restart: 'restarted' };
/** How long they wait for it to leave the queue (others' jobs ahead of it) before answering that it is queued. */
const QUEUED_WAIT_MS = 3_000;

/** A deployment's phase for a progress notification: its status, time so far and last log line. */
export async function deploymentPhase(db: Db, id: number, bound: AnswerBound): Promise<Phase | undefined> {
  const d = await db.selectFrom('deployments').select(['uuid', 'status', 'logs']).where('id', '=', id).executeTakeFirst();
  if (!d) return undefined;
  const line = d.logs.trimEnd().split('\n').at(-1)?.slice(0, 200);
  return { message: `deployment ${d.uuid}: ${shownStatus(d.status).replace('_', ' ')}, ${bound.seconds()} s${line ? ` — ${line}` : ''}` };
}

/**
 * Waits for a queued deployment the way start/stop/restart answer: behind other jobs on its
 * server's queue it gives up after a short wait; once it runs, it is waited for within the call's
 * answer bound (src/core/answer-bound.ts), with a heartbeat to a caller that hears progress.
 */
export async function waitForDeployment(db: Db, bound: AnswerBound, id: number, done: Promise<void>): Promise<{ ended: boolean; status: string }> {
  const look = () => deploymentPhase(db, id, bound);
  let { ended } = await bound.wait(done, look, bound.toEnd ? Infinity : QUEUED_WAIT_MS);
  if (!ended) {
    const started = await db.selectFrom('deployments').select('status').where('id', '=', id).executeTakeFirst();
    if (started?.status === 'in_progress') ({ ended } = await bound.wait(done, look));
  }
  const dep = await db.selectFrom('deployments').select('status').where('id', '=', id).executeTakeFirst();
  return { ended, status: shownStatus(dep?.status ?? 'cancelled') };
}

/** A built (dockerfile) application whose image was never built: its start is a build and deploy. */
function neverBuilt(r: ResourceRow): boolean {
  if (r.kind !== 'application') return false;
  const c = JSON.parse(r.config) as ApplicationConfig;
  return isBuilt(c) && c.docker_registry_image_tag === UNBUILT_TAG;
}

/** start/stop/restart for one collection: each queues a deployment of that kind (a never-built application's start or restart, a deploy). */
export function lifecycleOperations(collection: Collection) {
  const { singular, kinds, toolset, one } = perCollection(collection);
  const effect = { start: 'Start', stop: 'Stop', restart: 'Restart' } as const;
  return (['start', 'stop', 'restart'] as const).map((action) =>
    defineOperation({
      name: `${action}_${singular}`,
      title: `${effect[action]} ${singular}`,
      description: `${effect[action]} ${one}${action === 'restart' && collection === 'services' ? ' (latest: true pulls its images first)' : ''}; waits for the engine, answers its status.`,
      default: true,
      summary: `${effect[action]} ${one} on its server.`,
      permission: 'deploy',
      toolset,
      // Coolify's restart of a service may pull its images first (latest=true) and recreate the containers.
      input: () => z.strictObject({ uuid: uuidParam, ...(collection === 'services' && action === 'restart' ? { latest: flag.meta({ 'berth.brief': true }).optional() } : {}) }),
      output: () => z.object({ message: z.string(), deployment_uuid: z.string(), deployment_status: brief(z.string()), status: z.string(), follow: followSchema }),
      annotations: { readOnly: false, destructive: action === 'stop', idempotent: action !== 'restart', openWorld: true },
      // GET answers Coolify's 405 (getMovedToPost); its restart of a service takes latest from the query.
      http: { method: 'POST', path: `/api/v1/${collection}/{uuid}/${action}`, getMovedToPost: true, ...(collection === 'services' && action === 'restart' ? { query: ['latest'] } : {}) },
      async run(ctx, i) {
        const { uuid } = i;
        const r = await ownedResource(ctx.db, uuid, ctx.caller.teamId, kinds);
        const bound = answerBound(ctx);
        // Coolify's start is a deployment: an application never built yet is built and deployed
        // (a start of it had nothing to start); a built one starts its last image.
        const kind = action !== 'stop' && neverBuilt(r) ? 'deploy' : action;
        const d = await queueDeployment(ctx, r, kind, Boolean((i as { latest?: boolean }).latest));
        const label = `${singular[0]!.toUpperCase()}${singular.slice(1)}`;
        // The answer comes once the engine is in the asked state (or the action failed), and says
        // what the engine was seen doing afterwards; a long queue or the answer bound answers
        // before, with how to follow the deployment, which goes on.
        const { ended, status: depStatus } = await waitForDeployment(ctx.db, bound, d.id, d.done);
        const now = await ctx.db.selectFrom('resources').select(['status', 'observed_status', 'deleting']).where('id', '=', r.id).executeTakeFirst();
        const status = now ? displayStatus(now) : 'deleted';
        const f = follow.deployment(d.uuid);
        const message = !ended
          ? `${label} ${VERB[action]}: deployment ${d.uuid} is ${depStatus.replace('_', ' ')} after ${bound.seconds()} s and goes on; ${followText(f)}.${note(d.live)}`
          : depStatus === 'finished'
            ? `${label} ${DONE[action]}.`
            : `${label} ${action} ${depStatus}:${d.live ? ` get_deployment ${d.uuid} has its logs.` : note(d.live)}`;
        bound.finish({ message });
        return { message, deployment_uuid: d.uuid, deployment_status: depStatus, status, follow: f };
      },
    }),
  );
}
