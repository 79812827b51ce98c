/**
 * GitLab app records (Coolify's /gitlab-apps): a team keeps and lists the GitLab OAuth apps its
 * clients manage. berth reaches no GitLab with them (it clones public URLs and deploy keys), so
 * these are records; client_secret and webhook_token are secrets, shown only with read:sensitive.
 * Apps are addressed by their integer id, as Coolify does.
 */
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { atomically } from '../../store/atomic.js';
import { nowIso, type Db } from '../../store/db.js';
import type { GitlabAppsTable } from '../../store/schema.js';
import { notFound, validationError } from '../../errors.js';
import { newUuid } from '../../ids.js';
import { defineOperation } from '../operation.js';
import { sensitive } from '../redact.js';
import { CREATE, DELETE, messageSchema, READ, stamps, UPDATE } from './common.js';

type Row = Omit<GitlabAppsTable, 'id'> & { id: number };

const appSchema = z.object({
  id: z.number(),
  uuid: z.string(),
  name: z.string(),
  html_url: z.string(),
  api_url: z.string(),
  custom_user: z.string(),
  custom_port: z.number(),
  group_name: z.string().nullable(),
  client_id: z.string().nullable(),
  client_secret: sensitive(z.string().nullable()),
  webhook_token: sensitive(z.string()),
  redirect_uri: z.string().nullable(),
  is_system_wide: z.boolean(),
  is_public: z.boolean(),
  team_id: z.number(),
  created_at: z.string(),
  updated_at: z.string(),
});

const view = (r: Row): z.infer<typeof appSchema> => ({
  id: r.id,
  uuid: r.uuid,
  name: r.name,
  html_url: r.html_url,
  api_url: r.api_url,
  custom_user: r.custom_user,
  custom_port: r.custom_port,
  group_name: r.group_name,
  client_id: r.client_id,
  client_secret: r.client_secret,
  webhook_token: r.webhook_token,
  redirect_uri: r.redirect_uri,
  is_system_wide: false,
  is_public: false,
  team_id: r.team_id,
  created_at: r.created_at,
  updated_at: r.updated_at,
});

const httpUrl = z.url({ protocol: /^https?$/, error: 'Must be an http(s) URL.' }).max(2048);
const fields = {
  name: z.string().trim().min(1).max(255),
  html_url: httpUrl,
  api_url: httpUrl.nullable().optional(),
  custom_user: z
    .string()
    .min(1)
    .max(255)
    .regex(/^[A-Za-z0-9._-]+$/, 'Use letters, digits and . _ -.')
    .nullable()
    .optional(),
  custom_port: z.number().int().min(1).max(65535).nullable().optional(),
  group_name: z.string().max(255).nullable().optional(),
  client_id: z.string().max(255).nullable().optional(),
  client_secret: z.string().max(4096).nullable().optional(),
  webhook_token: z.string().max(4096).nullable().optional(),
  redirect_uri: httpUrl.nullable().optional(),
  is_system_wide: z.boolean().optional(),
};
const idParam = z.coerce.number().int().positive();

/** Coolify's rule: the API of a GitLab at html_url is html_url/api/v4. */
const trimSlash = (u: string) => u.replace(/\/+$/, '');
const apiUrlOf = (html: string) => `${trimSlash(html)}/api/v4`;

/** Every record belongs to one team in berth: a system-wide app would show one team's record to all. */
function refuseSystemWide(v: boolean | undefined): void {
  if (v) throw validationError({ is_system_wide: ['berth does not support system-wide GitLab apps: every record belongs to its team.'] });
}

async function ownedApp(db: Db, id: number, teamId: number): Promise<Row> {
  const row = await db.selectFrom('gitlab_apps').selectAll().where('id', '=', id).where('team_id', '=', teamId).executeTakeFirst();
  if (!row) throw notFound();
  return row;
}

export const gitlabAppOperations = [
  defineOperation({
    name: 'list_gitlab_apps',
    title: 'List GitLab apps',
    description: "The team's GitLab app records (Coolify's), by integer id; client_secret and webhook_token need read:sensitive.",
    summary: "List the team's GitLab app records (secrets need read:sensitive).",
    permission: 'read',
    toolset: 'applications',
    input: () => z.strictObject({}),
    output: () => z.array(appSchema),
    annotations: READ,
    http: { method: 'GET', path: '/api/v1/gitlab-apps' },
    async run({ db, caller }) {
      return (await db.selectFrom('gitlab_apps').selectAll().where('team_id', '=', caller.teamId).orderBy('id').execute()).map(view);
    },
  }),
  defineOperation({
    name: 'create_gitlab_app',
    title: 'Record a GitLab app',
    description:
      'Store a GitLab app record: name and html_url (api_url defaults to html_url/api/v4, SSH user git, port 22; a webhook token is generated unless given). berth does not call GitLab with it.',
    summary: 'Record a GitLab app (name, html_url; api_url defaults to html_url/api/v4, SSH user git and port 22, a webhook token is generated when none is given).',
    permission: 'write',
    toolset: 'applications',
    input: () => z.strictObject(fields),
    output: () => appSchema,
    annotations: CREATE,
    http: { method: 'POST', path: '/api/v1/gitlab-apps', status: 201 },
    async run({ db, caller }, i) {
      refuseSystemWide(i.is_system_wide);
      const html = trimSlash(i.html_url);
      const row = {
        uuid: newUuid(),
        team_id: caller.teamId,
        name: i.name,
        html_url: html,
        api_url: i.api_url ? trimSlash(i.api_url) : apiUrlOf(html),
        custom_user: i.custom_user ?? 'git',
        custom_port: i.custom_port ?? 22,
        group_name: i.group_name ?? null,
        client_id: i.client_id ?? null,
        client_secret: i.client_secret ?? null,
        webhook_token: i.webhook_token || randomBytes(24).toString('base64url'),
        redirect_uri: i.redirect_uri ?? null,
        ...stamps(),
      };
      const { id } = await db.insertInto('gitlab_apps').values(row).returning('id').executeTakeFirstOrThrow();
      return view({ ...row, id });
    },
  }),
  defineOperation({
    name: 'update_gitlab_app',
    title: 'Change a GitLab app',
    description: 'Change a GitLab app record by gitlab_app_id; a new html_url without api_url moves api_url with it.',
    summary: 'Change a GitLab app record by id; a new html_url without api_url moves api_url with it.',
    permission: 'write',
    toolset: 'applications',
    input: () => z.strictObject({ gitlab_app_id: idParam, ...fields, name: fields.name.optional(), html_url: fields.html_url.optional() }),
    output: () => z.object({ message: z.string(), data: appSchema }),
    annotations: UPDATE,
    http: { method: 'PATCH', path: '/api/v1/gitlab-apps/{gitlab_app_id}' },
    async run({ db, caller }, { gitlab_app_id, ...i }) {
      refuseSystemWide(i.is_system_wide);
      const row = await atomically(db, async (trx) => {
        const r = await ownedApp(trx, gitlab_app_id, caller.teamId);
        const html = i.html_url === undefined ? r.html_url : trimSlash(i.html_url);
        const next: Row = {
          ...r,
          name: i.name ?? r.name,
          html_url: html,
          api_url: i.api_url ? trimSlash(i.api_url) : i.html_url !== undefined ? apiUrlOf(html) : r.api_url,
          custom_user: i.custom_user ?? r.custom_user,
          custom_port: i.custom_port ?? r.custom_port,
          group_name: i.group_name === undefined ? r.group_name : i.group_name,
          client_id: i.client_id === undefined ? r.client_id : i.client_id,
          client_secret: i.client_secret === undefined ? r.client_secret : i.client_secret,
          webhook_token: i.webhook_token || r.webhook_token,
          redirect_uri: i.redirect_uri === undefined ? r.redirect_uri : i.redirect_uri,
          updated_at: nowIso(),
        };
        const { id: _id, uuid: _uuid, team_id: _team, created_at: _created, ...changes } = next;
        await trx.updateTable('gitlab_apps').set(changes).where('id', '=', r.id).execute();
        return next;
      });
      return { message: 'GitLab app updated successfully', data: view(row) };
    },
  }),
  defineOperation({
    name: 'delete_gitlab_app',
    title: 'Delete a GitLab app',
    description: 'Delete a GitLab app record by gitlab_app_id.',
    summary: 'Delete a GitLab app record by id.',
    permission: 'write',
    toolset: 'applications',
    input: () => z.strictObject({ gitlab_app_id: idParam }),
    output: () => messageSchema,
    annotations: DELETE,
    http: { method: 'DELETE', path: '/api/v1/gitlab-apps/{gitlab_app_id}' },
    async run({ db, caller }, { gitlab_app_id }) {
      const d = await db.deleteFrom('gitlab_apps').where('id', '=', gitlab_app_id).where('team_id', '=', caller.teamId).executeTakeFirst();
      if (d.numDeletedRows === 0n) throw notFound();
      return { message: 'GitLab app deleted successfully' };
    },
  }),
];
