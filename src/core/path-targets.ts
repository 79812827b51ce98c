import type { Db } from '../store/db.js';
import { notFound } from '../errors.js';
import { owned, ownedResource } from './lookup.js';
import { KINDS_OF } from './model/kinds.js';
import type { Operation } from './operation.js';
import { ownedBackup, restorable } from './operations/backups.js';
import { deployTargets } from './operations/deployments.js';
import { ownedPart } from './operations/service-parts.js';
import { environmentByNameOrUuid } from './operations/shared-variables.js';
import { ownedTask } from './operations/scheduled-tasks.js';

/**
 * The rows a call names, found in the caller's team as its operation finds them: the approval
 * gate runs this before it holds a call (issue 39), so a missing or another team's target is the
 * same 404 as without a policy, and nothing waits for a person. Only a call the policy holds pays
 * for it. Store-only operations are not looked up here: the gate runs them in a rolled-back
 * transaction instead (their own checks, exactly).
 *
 * Each path parameter is found by its segment (`servers/{uuid}`, `envs/{env_uuid}`), within the
 * row its parent segment found; a few body fields name targets too.
 */

/** A row found for a path segment: what its children are looked up under. */
interface Found {
  segment: string;
  id: number;
  uuid: string;
}

type Step = (db: Db, teamId: number, value: string, parent: Found | undefined, next: string | undefined) => Promise<Found>;

const teamRow =
  (table: Parameters<typeof owned>[1], segment: string): Step =>
  async (db, teamId, value) => ({ segment, ...(await owned(db, table, value, teamId)) });

const resource =
  (collection: keyof typeof KINDS_OF): Step =>
  async (db, teamId, value) => ({ segment: collection, ...(await ownedResource(db, value, teamId, KINDS_OF[collection])) });

/** A row of the team by its integer id (GitHub and GitLab apps: Coolify names them by id). */
const teamRowById =
  (table: 'github_apps' | 'gitlab_apps', segment: string): Step =>
  async (db, teamId, value) => {
    const id = Number(value);
    const row = Number.isSafeInteger(id) ? await db.selectFrom(table).select(['id', 'uuid']).where('id', '=', id).where('team_id', '=', teamId).executeTakeFirst() : undefined;
    if (!row) throw notFound();
    return { segment, ...row };
  };

/** The row a child segment is looked up under; a path without one is the table's mistake (500, never a quiet pass). */
const under = (parent: Found | undefined, ...segments: string[]): Found => {
  if (!parent || !segments.includes(parent.segment)) throw new Error(`path-targets: no parent for this segment (${parent?.segment ?? 'none'})`);
  return parent;
};

const inResource =
  (table: 'environment_variables' | 'scheduled_tasks', segment: string): Step =>
  async (db, _teamId, value, parent) => {
    const r = under(parent, 'applications', 'databases', 'services');
    const row = await db.selectFrom(table).select(['id', 'uuid']).where('resource_id', '=', r.id).where('uuid', '=', value).executeTakeFirst();
    if (!row) throw notFound();
    return { segment, ...row };
  };

/** Path segment `{collection}/{param}` → how to find the team's row. */
const STEPS: Readonly<Record<string, Step>> = {
  'keys/{uuid}': teamRow('private_keys', 'keys'),
  'servers/{uuid}': teamRow('servers', 'servers'),
  'destinations/{uuid}': teamRow('destinations', 'destinations'),
  'projects/{uuid}': teamRow('projects', 'projects'),
  'cloud-init-scripts/{uuid}': teamRow('cloud_init_scripts', 'cloud-init-scripts'),
  'cloud-tokens/{uuid}': teamRow('cloud_tokens', 'cloud-tokens'),
  's3-storages/{uuid}': teamRow('s3_storages', 's3-storages'),
  'tags/{uuid}': teamRow('tags', 'tags'),
  'deployments/{uuid}': teamRow('deployments', 'deployments'),
  'migrations/{uuid}': teamRow('migrations_jobs', 'migrations'),
  'github-apps/{github_app_id}': teamRowById('github_apps', 'github-apps'),
  'gitlab-apps/{gitlab_app_id}': teamRowById('gitlab_apps', 'gitlab-apps'),
  'approvals/{uuid}': async (db, teamId, value) => {
    const row = await db.selectFrom('approvals').select(['id', 'uuid']).where('uuid', '=', value).where('team_id', '=', teamId).executeTakeFirst();
    if (!row) throw notFound();
    return { segment: 'approvals', ...row };
  },
  'applications/{uuid}': resource('applications'),
  'databases/{uuid}': resource('databases'),
  'services/{uuid}': resource('services'),
  'environments/{environment_name_or_uuid}': async (db, _teamId, value, parent) => ({
    segment: 'environments',
    ...(await environmentByNameOrUuid(db, under(parent, 'projects').id, value)),
  }),
  'envs/{env_uuid}': inResource('environment_variables', 'envs'),
  'scheduled-tasks/{task_uuid}': async (db, teamId, value, parent) => {
    const r = under(parent, 'applications', 'services');
    const { t } = await ownedTask(db, teamId, KINDS_OF[r.segment as 'applications'], r.uuid, value);
    return { segment: 'scheduled-tasks', ...t };
  },
  // A volume or a file storage; a volume only where its backups follow (file storages have none).
  'storages/{storage_uuid}': async (db, _teamId, value, parent, next) => {
    const r = under(parent, 'applications', 'databases', 'services');
    const volume = await db.selectFrom('storages').select(['id', 'uuid']).where('resource_id', '=', r.id).where('uuid', '=', value).executeTakeFirst();
    const row = volume ?? (next === 'backups' ? undefined : await db.selectFrom('file_storages').select(['id', 'uuid']).where('resource_id', '=', r.id).where('uuid', '=', value).executeTakeFirst());
    if (!row) throw notFound();
    return { segment: 'storages', ...row };
  },
  'applications/{app_uuid}': async (db, teamId, value, parent) => {
    await ownedPart(db, teamId, under(parent, 'services').uuid, value, 'application');
    return { segment: 'parts', id: 0, uuid: value };
  },
  'databases/{database_uuid}': async (db, teamId, value, parent) => {
    await ownedPart(db, teamId, under(parent, 'services').uuid, value, 'database');
    return { segment: 'parts', id: 0, uuid: value };
  },
  // An application's other destination: the team's (whether it is attached is the operation's answer).
  'destinations/{destination_uuid}': async (db, teamId, value, parent) => {
    under(parent, 'applications');
    return { segment: 'destinations', ...(await owned(db, 'destinations', value, teamId)) };
  },
  // A pull request's preview of an application (by its pull request id, as Coolify names it).
  'previews/{pull_request_id}': async (db, _teamId, value, parent) => {
    const r = under(parent, 'applications');
    const pr = Number(value);
    const row = Number.isSafeInteger(pr)
      ? await db.selectFrom('application_previews').select(['id', 'uuid']).where('resource_id', '=', r.id).where('pull_request_id', '=', pr).executeTakeFirst()
      : undefined;
    if (!row) throw notFound();
    return { segment: 'previews', ...row };
  },
  'backups/{scheduled_backup_uuid}': async (db, teamId, value, parent) => ({ segment: 'backups', ...(await ownedBackup(db, under(parent, 'databases').uuid, value, teamId)).b }),
  'executions/{execution_uuid}': async (db, _teamId, value, parent) => {
    const row = await db.selectFrom('scheduled_database_backup_executions').select(['id', 'uuid']).where('backup_id', '=', under(parent, 'backups').id).where('uuid', '=', value).executeTakeFirst();
    if (!row) throw notFound();
    return { segment: 'executions', ...row };
  },
};

/** Body fields that name a team's row, each found in the team (a missing one is the operation's 404 too). */
const BODY: Readonly<Record<string, (db: Db, teamId: number, value: string) => Promise<unknown>>> = {
  project_uuid: (db, teamId, v) => owned(db, 'projects', v, teamId),
  server_uuid: (db, teamId, v) => owned(db, 'servers', v, teamId),
  destination_uuid: (db, teamId, v) => owned(db, 'destinations', v, teamId),
  private_key_uuid: (db, teamId, v) => owned(db, 'private_keys', v, teamId),
  s3_storage_uuid: (db, teamId, v) => owned(db, 's3_storages', v, teamId),
  github_app_uuid: (db, teamId, v) => owned(db, 'github_apps', v, teamId),
  environment_uuid: async (db, teamId, v) => {
    const e = await db.selectFrom('environments as e').innerJoin('projects as p', 'p.id', 'e.project_id').select('e.id').where('e.uuid', '=', v).where('p.team_id', '=', teamId).executeTakeFirst();
    if (!e) throw notFound();
  },
};

/** Operations whose targets are in their body in a shape of their own: their own lookup. */
const BY_OPERATION: Readonly<Record<string, (db: Db, teamId: number, input: Record<string, unknown>) => Promise<unknown>>> = {
  deploy: (db, teamId, input) => deployTargets(db, teamId, input),
  restore_database_backup_execution: (db, teamId, input) => restorable(db, teamId, input as Parameters<typeof restorable>[2]),
};

/** The `{collection}/{param}` keys of a path, each with the literal segment after it. */
export function pathSteps(path: string): { key: string; param: string; next: string | undefined }[] {
  const parts = path.replace(/^\/api\/v1\//, '').split('/');
  const out: { key: string; param: string; next: string | undefined }[] = [];
  parts.forEach((p, i) => {
    const m = /^\{(\w+)\}$/.exec(p);
    if (m && i > 0) out.push({ key: `${parts[i - 1]}/${p}`, param: m[1]!, next: parts[i + 1] });
  });
  return out;
}

/** Whether every path parameter of an operation has a step (the test walks the table with it). */
export const knowsPath = (path: string): boolean => pathSteps(path).every((s) => s.key in STEPS);

/**
 * Finds every row a call's path and body name, in the caller's team, in path order: the first
 * missing one throws the operation's own 404.
 */
export async function findTargets(db: Db, op: Pick<Operation, 'name' | 'http'>, teamId: number, input: Record<string, unknown>): Promise<void> {
  let parent: Found | undefined;
  for (const s of pathSteps(op.http.path)) {
    const step = STEPS[s.key];
    if (!step) throw new Error(`path-targets: no step for ${s.key} (${op.name})`);
    parent = await step(db, teamId, String(input[s.param]), parent, s.next);
  }
  const own = BY_OPERATION[op.name];
  if (own) await own(db, teamId, input);
  for (const [field, find] of Object.entries(BODY)) {
    const v = input[field];
    if (typeof v === 'string') await find(db, teamId, v);
  }
}
