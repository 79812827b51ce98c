import { z } from 'zod';
import type { Db } from '../../store/db.js';
import { nowIso } from '../../store/db.js';
import { atomically } from '../../store/atomic.js';
import type { SharedEnvironmentVariablesTable, SharedScope } from '../../store/schema-shared-variables.js';
import type { Caller } from '../caller.js';
import { BerthError, isForeignKeyViolation, notFound, validationError } from '../../errors.js';
import { owned } from '../lookup.js';
import { sharedScopeInProduction } from '../production.js';
import { defineOperation } from '../operation.js';
import { sensitive } from '../redact.js';
import { description, envKey, envValue, name, uuidParam } from '../validators.js';
import { bit, bool, CREATE, DELETE, messageSchema, READ, stamps, UPDATE } from './common.js';
import { environmentSchema } from './projects.js';
import { placedSchema, placedView } from './resource-common.js';

/**
 * Coolify's shared environment variables: team, project, environment and server scopes, one
 * family of four operations each. A resource's own variables reference them as `{{team.KEY}}`,
 * `{{project.KEY}}`, `{{environment.KEY}}` or `{{server.KEY}}`; a deployment resolves them
 * (src/engine/shared-references.ts). Identified by their integer id, as in Coolify.
 */

type SharedRow = Omit<SharedEnvironmentVariablesTable, 'id'> & { id: number };

export const sharedEnvSchema = z.object({
  id: z.number().int(),
  key: z.string(),
  /** Sensitive; never shown for is_shown_once variables, whoever asks. */
  value: sensitive(z.string().nullable()),
  is_shown_once: z.boolean(),
  type: z.enum(['team', 'project', 'environment', 'server']),
  is_multiline: z.boolean(),
  is_literal: z.boolean(),
  comment: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
});

function sharedView(e: SharedRow): z.infer<typeof sharedEnvSchema> {
  const base = {
    id: e.id,
    key: e.key,
    is_shown_once: bool(e.is_shown_once),
    type: e.type,
    is_multiline: bool(e.is_multiline),
    is_literal: bool(e.is_literal),
    comment: e.comment,
    created_at: e.created_at,
    updated_at: e.updated_at,
  };
  return e.is_shown_once ? base : { ...base, value: e.value };
}

/** A shared variable's id in a path (Coolify's `{env_id}`: the integer id, not a uuid). */
const envId = z.coerce.number().int().positive().max(2_147_483_647);

/** An environment in a path, by name or uuid (names follow create_environment's rule). */
export const environmentRef = z
  .string()
  .min(1)
  .max(255)
  .regex(/^[\p{L}\p{N}][\p{L}\p{N} ._@()#,:+-]*$/u, 'Must be an environment name or uuid.');

/** An environment of a project by name, else by uuid (Coolify's order). */
export async function environmentByNameOrUuid(db: Db, projectId: number, ref: string) {
  const byName = await db.selectFrom('environments').selectAll().where('project_id', '=', projectId).where('name', '=', ref).executeTakeFirst();
  if (byName) return byName;
  const byUuid = await db.selectFrom('environments').selectAll().where('project_id', '=', projectId).where('uuid', '=', ref).executeTakeFirst();
  if (!byUuid) throw notFound();
  return byUuid;
}

const flags = {
  is_literal: z.boolean().optional(),
  is_multiline: z.boolean().optional(),
  is_shown_once: z.boolean().optional(),
  comment: z.string().max(256).nullable().optional(),
};

interface Scope {
  type: SharedScope;
  scopeId: number;
  columns: { project_id?: number; environment_id?: number; server_id?: number };
}

interface ScopeSpec {
  type: SharedScope;
  /** Operation names: list_<word>_shared_envs, ... */
  word: string;
  /** Path of the list, without the variable. */
  base: string;
  params: Record<string, z.ZodType>;
  resolve(db: Db, caller: Caller, input: Record<string, unknown>): Promise<Scope>;
  what: string;
  /** The scope as the tool descriptions name it, with the parameters that find it. */
  found: string;
}

const SCOPES: ScopeSpec[] = [
  {
    type: 'team',
    word: 'team',
    base: '/api/v1/team/envs',
    params: {},
    what: "the token's team",
    found: 'your team',
    resolve: async (_db, caller) => ({ type: 'team', scopeId: caller.teamId, columns: {} }),
  },
  {
    type: 'project',
    word: 'project',
    base: '/api/v1/projects/{uuid}/envs',
    params: { uuid: uuidParam },
    what: 'a project',
    found: 'a project (uuid)',
    resolve: async (db, caller, i) => {
      const p = await owned(db, 'projects', i.uuid as string, caller.teamId);
      return { type: 'project', scopeId: p.id, columns: { project_id: p.id } };
    },
  },
  {
    type: 'environment',
    word: 'environment',
    base: '/api/v1/projects/{uuid}/environments/{environment_name_or_uuid}/envs',
    params: { uuid: uuidParam, environment_name_or_uuid: environmentRef },
    what: 'a project environment',
    found: 'a project environment (uuid + environment_name_or_uuid)',
    resolve: async (db, caller, i) => {
      const p = await owned(db, 'projects', i.uuid as string, caller.teamId);
      const e = await environmentByNameOrUuid(db, p.id, i.environment_name_or_uuid as string);
      return { type: 'environment', scopeId: e.id, columns: { environment_id: e.id } };
    },
  },
  {
    type: 'server',
    word: 'server',
    base: '/api/v1/servers/{uuid}/envs',
    params: { uuid: uuidParam },
    what: 'a server',
    found: 'a server (uuid)',
    resolve: async (db, caller, i) => {
      const s = await owned(db, 'servers', i.uuid as string, caller.teamId);
      return { type: 'server', scopeId: s.id, columns: { server_id: s.id } };
    },
  },
];

const inScope = (db: Db, caller: Caller, s: Scope) => db.selectFrom('shared_environment_variables').where('team_id', '=', caller.teamId).where('type', '=', s.type).where('scope_id', '=', s.scopeId);

const conflict = (message: string) => new BerthError('conflict', { message });

/** The production_env approval rule's question for a scope; one not found is not held (the call answers 404). */
const inProductionOf =
  (spec: ScopeSpec) =>
  async (db: Db, caller: Caller, i: Record<string, unknown>): Promise<boolean> => {
    try {
      const s = await spec.resolve(db, caller, i);
      return await sharedScopeInProduction(db, caller.teamId, s.type, s.scopeId);
    } catch (err) {
      if (err instanceof BerthError && err.kind === 'not_found') return false;
      throw err;
    }
  };

function familyOf(spec: ScopeSpec) {
  const { word, base, params, what, found } = spec;
  const toolset = 'shared_variables';
  return [
    defineOperation({
      name: `list_${word}_shared_envs`,
      title: `List ${word} shared variables`,
      description: `List the shared environment variables of ${found}. Values need read:sensitive (never shown for is_shown_once). Resources use them as {{${word}.KEY}} in their own variables.`,
      summary: `List the shared environment variables of ${what} (values need read:sensitive).`,
      permission: 'read',
      toolset,
      input: () => z.strictObject({ ...params }),
      output: () => z.array(sharedEnvSchema),
      annotations: READ,
      http: { method: 'GET', path: base },
      async run({ db, caller }, i) {
        const s = await spec.resolve(db, caller, i);
        const rows = await inScope(db, caller, s).selectAll().orderBy('id').execute();
        return rows.map(sharedView);
      },
    }),
    defineOperation({
      name: `create_${word}_shared_env`,
      title: `Add a ${word} shared variable`,
      description: `Add a shared environment variable (key, value) to ${found}; returns its id. A resource variable whose value holds {{${word}.KEY}} gets it at its next deploy.`,
      summary: `Add a shared environment variable to ${what}; resources reference it as {{${spec.type}.KEY}}.`,
      permission: 'write',
      toolset,
      input: () => z.strictObject({ ...params, key: envKey, value: envValue.optional(), ...flags }),
      output: () => z.object({ id: z.number().int() }),
      annotations: CREATE,
      storeOnly: true,
      inProduction: inProductionOf(spec),
      http: { method: 'POST', path: base, status: 201 },
      async run({ db, caller }, i) {
        // Scope, check and insert in one transaction (store/atomic.ts): of racing creates of one
        // key one answers 201 and the others 409; racing the scope's delete, 201 or 404.
        return atomically(db, async (trx) => {
          const s = await spec.resolve(trx, caller, i);
          if (await inScope(trx, caller, s).select('id').where('key', '=', i.key).executeTakeFirst()) throw conflict('Environment variable already exists. Use PATCH request to update it.');
          const row = await trx
            .insertInto('shared_environment_variables')
            .values({
              team_id: caller.teamId,
              type: s.type,
              scope_id: s.scopeId,
              project_id: s.columns.project_id ?? null,
              environment_id: s.columns.environment_id ?? null,
              server_id: s.columns.server_id ?? null,
              key: i.key,
              value: i.value ?? null,
              is_literal: bit(i.is_literal),
              is_multiline: bit(i.is_multiline),
              is_shown_once: bit(i.is_shown_once),
              comment: i.comment ?? null,
              ...stamps(),
            })
            .returning('id')
            .executeTakeFirstOrThrow();
          return { id: row.id };
        });
      },
    }),
    defineOperation({
      name: `update_${word}_shared_env`,
      title: `Change a ${word} shared variable`,
      description: `Change a shared variable of ${found} by its id (env_id): key, value, flags or comment. Redeploy the resources that use it.`,
      summary: `Change a shared environment variable of ${what} by its id (key, value, flags, comment); redeploy resources that use it.`,
      permission: 'write',
      toolset,
      input: () => z.strictObject({ ...params, env_id: envId, key: envKey.optional(), value: envValue.optional(), ...flags }),
      output: () => sharedEnvSchema,
      annotations: UPDATE,
      storeOnly: true,
      inProduction: inProductionOf(spec),
      http: { method: 'PATCH', path: `${base}/{env_id}`, status: 201 },
      async run({ db, caller }, i) {
        const fields = (['key', 'value', 'is_literal', 'is_multiline', 'is_shown_once', 'comment'] as const).filter((k) => i[k] !== undefined);
        if (fields.length === 0) throw validationError({ body: ['At least one field must be provided.'] });
        return atomically(db, async (trx) => {
          const s = await spec.resolve(trx, caller, i);
          const e = await inScope(trx, caller, s).selectAll().where('id', '=', i.env_id).executeTakeFirst();
          if (!e) throw notFound();
          if (i.key !== undefined && i.key !== e.key) {
            const other = await inScope(trx, caller, s).select('id').where('key', '=', i.key).where('id', '!=', e.id).executeTakeFirst();
            if (other) throw conflict('Environment variable already exists with this key.');
          }
          const patch: Partial<SharedRow> = { updated_at: nowIso() };
          if (i.key !== undefined) patch.key = i.key;
          if (i.value !== undefined) patch.value = i.value;
          for (const k of ['is_literal', 'is_multiline', 'is_shown_once'] as const) if (i[k] !== undefined) patch[k] = bit(i[k]);
          if (i.comment !== undefined) patch.comment = i.comment;
          await trx.updateTable('shared_environment_variables').set(patch).where('id', '=', e.id).execute();
          // The row as stored now: the answer shows what a concurrent change left too.
          return sharedView({ ...e, ...patch });
        });
      },
    }),
    defineOperation({
      name: `delete_${word}_shared_env`,
      title: `Delete a ${word} shared variable`,
      description: `Delete a shared variable of ${found} by its id (env_id). References to it are left as written at the next deploy (and logged).`,
      summary: `Delete a shared environment variable of ${what} by its id; references to it stay unresolved at the next deploy.`,
      permission: 'write',
      toolset,
      input: () => z.strictObject({ ...params, env_id: envId }),
      output: () => messageSchema,
      annotations: DELETE,
      storeOnly: true,
      inProduction: inProductionOf(spec),
      http: { method: 'DELETE', path: `${base}/{env_id}` },
      async run({ db, caller }, i) {
        const s = await spec.resolve(db, caller, i);
        const d = await db
          .deleteFrom('shared_environment_variables')
          .where('team_id', '=', caller.teamId)
          .where('type', '=', s.type)
          .where('scope_id', '=', s.scopeId)
          .where('id', '=', i.env_id)
          .executeTakeFirst();
        if (d.numDeletedRows === 0n) throw notFound();
        return { message: 'Environment variable deleted.' };
      },
    }),
  ];
}

/** The sixteen operations: four scopes × list, create, update, delete. */
export const sharedVariableOperations = SCOPES.flatMap(familyOf);

// ---- project environments by name or uuid (Coolify's environment routes) -----------------------

const resourceItem = z.object({ ...placedSchema, type: z.string() });
const GROUPS = { applications: ['application'], postgresqls: ['postgresql'], redis: ['redis'], mongodbs: ['mongodb'], mysqls: ['mysql'], mariadbs: ['mariadb'], services: ['service'] } as const;

const environmentRefInput = { uuid: uuidParam, environment_name_or_uuid: environmentRef };

export const environmentOperations = [
  defineOperation({
    name: 'get_environment',
    title: 'Get an environment',
    description: 'Get one environment of a project by its name or uuid, with the applications, databases and services it holds.',
    summary: 'Get a project environment by name or uuid, with the resources it holds.',
    permission: 'read',
    toolset: 'projects',
    input: () => z.strictObject(environmentRefInput),
    output: () => environmentSchema.extend(Object.fromEntries(Object.keys(GROUPS).map((g) => [g, z.array(resourceItem)])) as Record<keyof typeof GROUPS, z.ZodArray<typeof resourceItem>>),
    annotations: READ,
    http: { method: 'GET', path: '/api/v1/projects/{uuid}/{environment_name_or_uuid}' },
    async run({ db, caller }, i) {
      const p = await owned(db, 'projects', i.uuid, caller.teamId);
      const e = await environmentByNameOrUuid(db, p.id, i.environment_name_or_uuid);
      const rows = await db.selectFrom('resources').selectAll().where('team_id', '=', caller.teamId).where('environment_id', '=', e.id).orderBy('id').execute();
      const out: Record<string, z.infer<typeof resourceItem>[]> = {};
      for (const [group, kinds] of Object.entries(GROUPS)) {
        const mine = rows.filter((r) => (kinds as readonly string[]).includes(r.kind));
        out[group] = await Promise.all(mine.map(async (r) => ({ ...(await placedView(db, r)), type: r.kind === 'application' || r.kind === 'service' ? r.kind : `standalone-${r.kind}` })));
      }
      return { ...e, ...(out as Record<keyof typeof GROUPS, z.infer<typeof resourceItem>[]>) };
    },
  }),
  defineOperation({
    name: 'update_environment',
    title: 'Update an environment',
    description: 'Rename an environment of a project (found by name or uuid) or change its description. Another environment of the project with the new name is a conflict.',
    summary: 'Rename a project environment or change its description (found by name or uuid).',
    permission: 'write',
    toolset: 'projects',
    input: () => z.strictObject({ ...environmentRefInput, name: name.optional(), description: description.optional() }),
    output: () => z.object({ uuid: z.string(), name: z.string(), description: z.string().nullable() }),
    annotations: UPDATE,
    storeOnly: true,
    http: { method: 'PATCH', path: '/api/v1/projects/{uuid}/environments/{environment_name_or_uuid}' },
    async run({ db, caller }, i) {
      return atomically(db, async (trx) => {
        const p = await owned(trx, 'projects', i.uuid, caller.teamId);
        const e = await environmentByNameOrUuid(trx, p.id, i.environment_name_or_uuid);
        if (i.name !== undefined && i.name !== e.name) {
          const other = await trx.selectFrom('environments').select('id').where('project_id', '=', p.id).where('name', '=', i.name).where('id', '!=', e.id).executeTakeFirst();
          if (other) throw conflict('Environment with this name already exists.');
        }
        const next = { name: i.name ?? e.name, description: i.description === undefined ? e.description : i.description };
        await trx
          .updateTable('environments')
          .set({ ...next, updated_at: nowIso() })
          .where('id', '=', e.id)
          .execute();
        return { uuid: e.uuid, ...next };
      });
    },
  }),
  defineOperation({
    name: 'delete_environment',
    title: 'Delete an environment',
    description: 'Delete an environment of a project (found by name or uuid) together with its shared variables. Refused while it holds resources: delete or move them first.',
    summary: 'Delete an empty project environment (found by name or uuid) with its shared variables.',
    permission: 'write',
    toolset: 'projects',
    input: () => z.strictObject(environmentRefInput),
    output: () => messageSchema,
    annotations: DELETE,
    storeOnly: true,
    http: { method: 'DELETE', path: '/api/v1/projects/{uuid}/environments/{environment_name_or_uuid}' },
    async run({ db, caller }, i) {
      // 400 as Coolify answers it (the contract fixes no status for this).
      const hasResources = () => new BerthError('bad_request', { message: 'Environment has resources, so it cannot be deleted.' });
      try {
        await atomically(db, async (trx) => {
          const p = await owned(trx, 'projects', i.uuid, caller.teamId);
          const e = await environmentByNameOrUuid(trx, p.id, i.environment_name_or_uuid);
          const used = await trx.selectFrom('resources').select('id').where('environment_id', '=', e.id).executeTakeFirst();
          if (used) throw hasResources();
          // The cascade would do it too; said here so no store setting can leave them behind.
          await trx.deleteFrom('shared_environment_variables').where('environment_id', '=', e.id).execute();
          await trx.deleteFrom('environments').where('id', '=', e.id).execute();
        });
      } catch (err) {
        // A resource created in it meanwhile holds it (resources do not cascade): same 400.
        if (isForeignKeyViolation(err)) throw hasResources();
        throw err;
      }
      return { message: 'Environment deleted.' };
    },
  }),
];
