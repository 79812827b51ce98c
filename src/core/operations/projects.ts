import { z } from 'zod';
import { atomically } from '../../store/atomic.js';
import { nowIso } from '../../store/db.js';
import { BerthError, isForeignKeyViolation } from '../../errors.js';
import { newUuid } from '../../ids.js';
import { owned, ownedEnvironment } from '../lookup.js';
import { defineOperation } from '../operation.js';
import { listOf, paged, pageInput } from '../pagination.js';
import { description, name, uuidParam } from '../validators.js';
import { CREATE, DELETE, messageSchema, READ, stamps, UPDATE, uuidSchema } from './common.js';

/** Every project starts with this environment (as in Coolify). */
export const DEFAULT_ENVIRONMENT = 'production';

export const environmentSchema = z.object({
  id: z.number().int(),
  uuid: z.string(),
  name: z.string(),
  description: z.string().nullable(),
  project_id: z.number().int(),
  created_at: z.string(),
  updated_at: z.string(),
});

export const projectSchema = z.object({
  id: z.number().int(),
  uuid: z.string(),
  name: z.string(),
  description: z.string().nullable(),
  team_id: z.number().int(),
  created_at: z.string(),
  updated_at: z.string(),
});

const projectWithEnvs = projectSchema.extend({ environments: z.array(environmentSchema) });

const conflict = (message: string) => new BerthError('conflict', { message });

export const projectOperations = [
  defineOperation({
    name: 'list_projects',
    title: 'List projects',
    description: "List the team's projects. Resources live in a project's environment.",
    summary: 'List the projects of the team.',
    permission: 'read',
    toolset: 'projects',
    input: () => z.strictObject({ ...pageInput }),
    output: () => listOf(projectSchema),
    annotations: READ,
    http: { method: 'GET', path: '/api/v1/projects', list: true },
    async run({ db, caller }, p) {
      const base = db.selectFrom('projects').where('team_id', '=', caller.teamId);
      return paged(
        base,
        p,
        (q) => q.selectAll().orderBy('id'),
        (rows) => rows,
      );
    },
  }),
  defineOperation({
    name: 'create_project',
    title: 'Create a project',
    description: 'Create a project. It starts with one environment, "production". Returns its uuid for create_application and friends.',
    summary: 'Create a project; it starts with a "production" environment.',
    permission: 'write',
    toolset: 'projects',
    input: () => z.strictObject({ name, description: description.optional() }),
    output: () => uuidSchema,
    annotations: CREATE,
    storeOnly: true,
    http: { method: 'POST', path: '/api/v1/projects', status: 201 },
    async run({ db, caller }, i) {
      const uuid = newUuid();
      await atomically(db, async (trx) => {
        const p = await trx
          .insertInto('projects')
          .values({ uuid, team_id: caller.teamId, name: i.name, description: i.description ?? null, ...stamps() })
          .returning('id')
          .executeTakeFirstOrThrow();
        await trx
          .insertInto('environments')
          .values({ uuid: newUuid(), project_id: p.id, name: DEFAULT_ENVIRONMENT, description: null, ...stamps() })
          .execute();
      });
      return { uuid };
    },
  }),
  defineOperation({
    name: 'get_project',
    title: 'Get a project',
    description: 'Get a project with its environments.',
    summary: 'Get a project with its environments.',
    permission: 'read',
    toolset: 'projects',
    input: () => z.strictObject({ uuid: uuidParam }),
    output: () => projectWithEnvs,
    annotations: READ,
    http: { method: 'GET', path: '/api/v1/projects/{uuid}' },
    async run({ db, caller }, { uuid }) {
      const p = await owned(db, 'projects', uuid, caller.teamId);
      const environments = await db.selectFrom('environments').selectAll().where('project_id', '=', p.id).orderBy('id').execute();
      return { ...p, environments };
    },
  }),
  defineOperation({
    name: 'update_project',
    title: 'Update a project',
    description: "Change a project's name or description.",
    summary: 'Rename a project or change its description.',
    permission: 'write',
    toolset: 'projects',
    input: () => z.strictObject({ uuid: uuidParam, name: name.optional(), description: description.optional() }),
    output: () => z.object({ uuid: z.string(), name: z.string(), description: z.string().nullable() }),
    annotations: UPDATE,
    storeOnly: true,
    http: { method: 'PATCH', path: '/api/v1/projects/{uuid}', status: 201 },
    async run({ db, caller }, { uuid, ...i }) {
      // Read and written in one transaction, so a concurrent change of the other field holds.
      return atomically(db, async (trx) => {
        const p = await owned(trx, 'projects', uuid, caller.teamId);
        const next = { name: i.name ?? p.name, description: i.description === undefined ? p.description : i.description };
        await trx
          .updateTable('projects')
          .set({ ...next, updated_at: nowIso() })
          .where('id', '=', p.id)
          .execute();
        return { uuid, ...next };
      });
    },
  }),
  defineOperation({
    name: 'delete_project',
    title: 'Delete a project',
    description: 'Delete a project and its environments. Refused while it holds resources.',
    summary: 'Delete a project that holds no resources.',
    permission: 'write',
    toolset: 'projects',
    input: () => z.strictObject({ uuid: uuidParam }),
    output: () => messageSchema,
    annotations: DELETE,
    storeOnly: true,
    http: { method: 'DELETE', path: '/api/v1/projects/{uuid}' },
    async run({ db, caller }, { uuid }) {
      // 400 as Coolify answers it (the contract fixes no status for this).
      const hasResources = () => new BerthError('bad_request', { message: 'Project has resources, so it cannot be deleted.' });
      try {
        await atomically(db, async (trx) => {
          const p = await owned(trx, 'projects', uuid, caller.teamId);
          const used = await trx.selectFrom('resources as r').innerJoin('environments as e', 'e.id', 'r.environment_id').select('r.id').where('e.project_id', '=', p.id).executeTakeFirst();
          if (used) throw hasResources();
          await trx.deleteFrom('projects').where('id', '=', p.id).execute();
        });
      } catch (err) {
        // A resource created in one of its environments meanwhile still holds it (resources do
        // not cascade): the store refuses the delete, and that is the same 400 as the check's.
        if (isForeignKeyViolation(err)) throw hasResources();
        throw err;
      }
      return { message: 'Project deleted.' };
    },
  }),
  defineOperation({
    name: 'list_environments',
    title: 'List environments',
    description: 'List the environments of a project (production, staging, ...).',
    summary: 'List the environments of a project.',
    permission: 'read',
    toolset: 'projects',
    input: () => z.strictObject({ uuid: uuidParam, ...pageInput }),
    output: () => listOf(environmentSchema),
    annotations: READ,
    http: { method: 'GET', path: '/api/v1/projects/{uuid}/environments', list: true },
    async run({ db, caller }, { uuid, ...p }) {
      const project = await owned(db, 'projects', uuid, caller.teamId);
      const base = db.selectFrom('environments').where('project_id', '=', project.id);
      return paged(
        base,
        p,
        (q) => q.selectAll().orderBy('id'),
        (rows) => rows,
      );
    },
  }),
  defineOperation({
    name: 'create_environment',
    title: 'Create an environment',
    description: 'Add an environment to a project; use its name or uuid when creating resources.',
    summary: 'Add an environment (e.g. staging) to a project.',
    permission: 'write',
    toolset: 'projects',
    input: () => z.strictObject({ uuid: uuidParam, name, description: description.optional() }),
    output: () => uuidSchema,
    annotations: CREATE,
    storeOnly: true,
    http: { method: 'POST', path: '/api/v1/projects/{uuid}/environments', status: 201 },
    async run({ db, caller }, i) {
      // Check and insert in one transaction: of racing creates of one name one answers 201 and
      // the others 409; racing the project's delete, 201 or 404 (store/atomic.ts).
      return atomically(db, async (trx) => {
        const project = await owned(trx, 'projects', i.uuid, caller.teamId);
        const exists = await ownedEnvironment(trx, project.id, { name: i.name }).then(
          () => true,
          () => false,
        );
        if (exists) throw conflict('Environment with this name already exists.');
        const uuid = newUuid();
        await trx
          .insertInto('environments')
          .values({ uuid, project_id: project.id, name: i.name, description: i.description ?? null, ...stamps() })
          .execute();
        return { uuid };
      });
    },
  }),
];
