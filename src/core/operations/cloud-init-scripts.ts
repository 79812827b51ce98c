import { parseDocument } from 'yaml';
import { z } from 'zod';
import { nowIso } from '../../store/db.js';
import type { CloudInitScriptsTable } from '../../store/schema.js';
import { validationError } from '../../errors.js';
import { newUuid } from '../../ids.js';
import { owned } from '../lookup.js';
import { defineOperation } from '../operation.js';
import { sensitive } from '../redact.js';
import { uuidParam } from '../validators.js';
import { CREATE, DELETE, messageSchema, READ, stamps, UPDATE } from './common.js';

type Row = Omit<CloudInitScriptsTable, 'id'> & { id: number };

const scriptSchema = z.object({
  uuid: z.string(),
  name: z.string(),
  /** May hold passwords or keys: needs read:sensitive. */
  script: sensitive(z.string()),
  created_at: z.string(),
  updated_at: z.string(),
});

const view = (r: Row): z.infer<typeof scriptSchema> => ({ uuid: r.uuid, name: r.name, script: r.script, created_at: r.created_at, updated_at: r.updated_at });

const script = z.string().min(1).max(65_536);
const name = z.string().trim().min(1).max(255);

/** As Coolify: a shell script (#!), or cloud-config YAML (with or without its #cloud-config header). */
function checkScript(text: string | undefined): void {
  if (text === undefined) return;
  const t = text.trim();
  if (t.startsWith('#!')) return;
  const doc = parseDocument(t.replace(/^#cloud-config\s*/, ''));
  if (doc.errors.length) {
    throw validationError({ script: [`Must be a shell script (starting with #!) or valid cloud-config YAML: ${doc.errors[0]!.message.split('\n')[0]}`] });
  }
}

export const cloudInitScriptOperations = [
  defineOperation({
    name: 'list_cloud_init_scripts',
    title: 'List cloud-init scripts',
    description: "The team's cloud-init scripts (name; the text needs read:sensitive). berth keeps them for servers a cloud provisions; it does not run them itself.",
    summary: "List the team's cloud-init scripts (their text needs read:sensitive).",
    permission: 'read',
    toolset: 'servers',
    input: () => z.strictObject({}),
    output: () => z.array(scriptSchema),
    annotations: READ,
    http: { method: 'GET', path: '/api/v1/cloud-init-scripts' },
    async run({ db, caller }) {
      return (await db.selectFrom('cloud_init_scripts').selectAll().where('team_id', '=', caller.teamId).orderBy('id').execute()).map(view);
    },
  }),
  defineOperation({
    name: 'create_cloud_init_script',
    title: 'Store a cloud-init script',
    description: 'Store a cloud-init script: a shell script starting with #! or cloud-config YAML (checked). It may hold secrets: reading its text needs read:sensitive.',
    summary: 'Store a cloud-init script (a #! shell script or cloud-config YAML) for servers provisioned by a cloud.',
    permission: 'write',
    toolset: 'servers',
    input: () => z.strictObject({ name, script }),
    output: () => scriptSchema,
    annotations: CREATE,
    storeOnly: true,
    http: { method: 'POST', path: '/api/v1/cloud-init-scripts', status: 201 },
    async run({ db, caller }, i) {
      checkScript(i.script);
      const row = { uuid: newUuid(), team_id: caller.teamId, name: i.name, script: i.script, ...stamps() };
      const { id } = await db.insertInto('cloud_init_scripts').values(row).returning('id').executeTakeFirstOrThrow();
      return view({ ...row, id });
    },
  }),
  defineOperation({
    name: 'get_cloud_init_script',
    title: 'Get a cloud-init script',
    description: 'One cloud-init script; its text only with read:sensitive.',
    summary: 'Get a cloud-init script (its text needs read:sensitive).',
    permission: 'read',
    toolset: 'servers',
    input: () => z.strictObject({ uuid: uuidParam }),
    output: () => scriptSchema,
    annotations: READ,
    http: { method: 'GET', path: '/api/v1/cloud-init-scripts/{uuid}' },
    async run({ db, caller }, { uuid }) {
      return view(await owned(db, 'cloud_init_scripts', uuid, caller.teamId));
    },
  }),
  defineOperation({
    name: 'update_cloud_init_script',
    title: 'Update a cloud-init script',
    description: "Change a cloud-init script's name or text (same checks as create).",
    summary: "Change a cloud-init script's name or text.",
    permission: 'write',
    toolset: 'servers',
    input: () => z.strictObject({ uuid: uuidParam, name: name.optional(), script: script.optional() }),
    output: () => scriptSchema,
    annotations: UPDATE,
    storeOnly: true,
    http: { method: 'PATCH', path: '/api/v1/cloud-init-scripts/{uuid}' },
    async run({ db, caller }, { uuid, ...i }) {
      if (i.name === undefined && i.script === undefined) throw validationError({ name: ['At least one field must be provided.'] });
      const r = await owned(db, 'cloud_init_scripts', uuid, caller.teamId);
      checkScript(i.script);
      const patch = { ...(i.name !== undefined ? { name: i.name } : {}), ...(i.script !== undefined ? { script: i.script } : {}), updated_at: nowIso() };
      await db.updateTable('cloud_init_scripts').set(patch).where('id', '=', r.id).execute();
      return view({ ...r, ...patch });
    },
  }),
  defineOperation({
    name: 'delete_cloud_init_script',
    title: 'Delete a cloud-init script',
    description: 'Delete a cloud-init script from the team; servers already provisioned with it are not touched.',
    summary: 'Delete a cloud-init script.',
    permission: 'write',
    toolset: 'servers',
    input: () => z.strictObject({ uuid: uuidParam }),
    output: () => messageSchema,
    annotations: DELETE,
    storeOnly: true,
    http: { method: 'DELETE', path: '/api/v1/cloud-init-scripts/{uuid}' },
    async run({ db, caller }, { uuid }) {
      const r = await owned(db, 'cloud_init_scripts', uuid, caller.teamId);
      await db.deleteFrom('cloud_init_scripts').where('id', '=', r.id).execute();
      return { message: 'Cloud-init script deleted.' };
    },
  }),
];
