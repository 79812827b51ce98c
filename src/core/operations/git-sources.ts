import { z } from 'zod';
import { atomically } from '../../store/atomic.js';
import type { Db } from '../../store/db.js';
import { nowIso } from '../../store/db.js';
import type { CloudTokensTable, GithubAppsTable } from '../../store/schema.js';
import { BerthError, isForeignKeyViolation, notFound, validationError } from '../../errors.js';
import { newUuid } from '../../ids.js';
import { owned } from '../lookup.js';
import { defineOperation } from '../operation.js';
import { sensitive } from '../redact.js';
import { TargetGuard } from '../outbound-guard.js';
import { sshUser, uuidParam } from '../validators.js';
import { CREATE, DELETE, messageSchema, READ, stamps, UPDATE, uuidSchema } from './common.js';
import { CLOUD_PROVIDERS, tokenAccepted } from '../cloud-api.js';
import { cloudCall } from './cloud-providers.js';
import { githubRepository, githubSession, installationRepositories, repositoryBranches } from '../github-api.js';

/**
 * Records Coolify clients read and write: GitHub apps and cloud provider tokens, per team, with
 * their secrets kept (shown with read:sensitive, as every secret). A GitHub app's repositories and
 * branches come from GitHub's API (the app's api_url) with an installation token (github-api.ts).
 */

type AppRow = Omit<GithubAppsTable, 'id'> & { id: number };
type TokenRow = Omit<CloudTokensTable, 'id'> & { id: number };

const appSchema = z.object({
  id: z.number().int(),
  uuid: z.string(),
  name: z.string(),
  organization: z.string().nullable(),
  api_url: z.string(),
  html_url: z.string(),
  custom_user: z.string(),
  custom_port: z.number().int(),
  app_id: z.number().int(),
  installation_id: z.number().int(),
  client_id: z.string(),
  client_secret: sensitive(z.string()),
  webhook_secret: sensitive(z.string().nullable()),
  private_key_id: z.number().int(),
  is_system_wide: z.boolean(),
  team_id: z.number().int(),
  created_at: z.string(),
  updated_at: z.string(),
});

const appView = (r: AppRow): z.infer<typeof appSchema> => ({
  id: r.id,
  uuid: r.uuid,
  name: r.name,
  organization: r.organization,
  api_url: r.api_url,
  html_url: r.html_url,
  custom_user: r.custom_user,
  custom_port: r.custom_port,
  app_id: r.app_id,
  installation_id: r.installation_id,
  client_id: r.client_id,
  client_secret: r.client_secret,
  webhook_secret: r.webhook_secret,
  private_key_id: r.private_key_id,
  is_system_wide: false,
  team_id: r.team_id,
  created_at: r.created_at,
  updated_at: r.updated_at,
});

const text = (max: number) => z.string().trim().min(1).max(max);
const positiveId = z
  .number()
  .int()
  .positive()
  .max(2 ** 31 - 1);
/** An http(s) URL berth may one day call for the app: read by the one parser, host not forbidden. */
const appUrl = z
  .string()
  .max(2048)
  .superRefine((u, ctx) => {
    const why = new TargetGuard('').check(u, ['http', 'https']);
    // Saved only: a private host is the operator's business when berth calls it, not a format error.
    if (typeof why === 'string' && !/private, loopback|berth host/.test(why)) ctx.addIssue({ code: 'custom', message: why });
  });

const appFields = {
  name: text(255),
  organization: text(255).nullable().optional(),
  api_url: appUrl.optional(),
  html_url: appUrl,
  custom_user: sshUser.optional(),
  custom_port: z.number().int().min(1).max(65535).optional(),
  app_id: positiveId,
  installation_id: positiveId,
  client_id: text(255),
  client_secret: text(4096),
  webhook_secret: text(4096).nullable().optional(),
  private_key_uuid: uuidParam,
  is_system_wide: z.boolean().optional(),
};

const appIdParam = {
  github_app_id: z.coerce
    .number()
    .int()
    .positive()
    .max(2 ** 31 - 1),
};

/** A GitHub app of the caller's team by its numeric id (Coolify's path key); another team's is the same 404. */
async function ownedApp(db: Db, id: number, teamId: number): Promise<AppRow> {
  const row = await db.selectFrom('github_apps').selectAll().where('id', '=', id).where('team_id', '=', teamId).executeTakeFirst();
  if (!row) throw notFound();
  return row;
}

/** The team's private key by uuid; another team's is the same 404 as a missing one. */
export async function keyId(db: Db, teamId: number, uuid: string): Promise<number> {
  const k = await db.selectFrom('private_keys').select('id').where('uuid', '=', uuid).where('team_id', '=', teamId).executeTakeFirst();
  if (!k) throw notFound();
  return k.id;
}

/** Coolify's is_system_wide shares an app with every team; berth keeps each team's records to itself. */
function refuseSystemWide(v: boolean | undefined) {
  if (v) throw validationError({ is_system_wide: ['berth keeps GitHub apps per team; a system-wide app is not supported (send false or leave it out).'] });
}

const providers = CLOUD_PROVIDERS;

const tokenSchema = z.object({
  uuid: z.string(),
  name: z.string(),
  provider: z.enum(providers),
  /** The provider's API token: never in lists; in a single token only with read:sensitive. */
  token: sensitive(z.string()),
  team_id: z.number().int(),
  servers_count: z.number().int(),
  created_at: z.string(),
  updated_at: z.string(),
});

const tokenView = (r: TokenRow, withToken: boolean) => ({
  uuid: r.uuid,
  name: r.name,
  provider: r.provider as (typeof providers)[number],
  ...(withToken ? { token: r.token } : {}),
  team_id: r.team_id,
  // berth creates no cloud servers (only reads the providers' catalogues), so none uses a token.
  servers_count: 0,
  created_at: r.created_at,
  updated_at: r.updated_at,
});

export const githubAppOperations = [
  defineOperation({
    name: 'list_github_apps',
    title: 'List GitHub apps',
    description: "The team's GitHub app records (Coolify's fields); client and webhook secrets only with read:sensitive.",
    summary: "List the team's GitHub app records (secrets need read:sensitive).",
    permission: 'read',
    toolset: 'applications',
    input: () => z.strictObject({}),
    output: () => z.array(appSchema),
    annotations: READ,
    http: { method: 'GET', path: '/api/v1/github-apps' },
    async run({ db, caller }) {
      return (await db.selectFrom('github_apps').selectAll().where('team_id', '=', caller.teamId).orderBy('id').execute()).map(appView);
    },
  }),
  defineOperation({
    name: 'create_github_app',
    title: 'Store a GitHub app',
    description:
      "Store a GitHub app (name, api_url, html_url, app_id, installation_id, client_id, client_secret, private_key_uuid: the team key holding the app's PEM key). berth mints installation tokens with it to list repositories and branches and to clone (create_private_github_app_application).",
    summary: "Store a GitHub app (Coolify's fields): repositories, branches and clones through its installation.",
    permission: 'write',
    toolset: 'applications',
    input: () => z.strictObject(appFields),
    output: () => appSchema,
    annotations: CREATE,
    http: { method: 'POST', path: '/api/v1/github-apps', status: 201 },
    async run({ db, caller }, { private_key_uuid, is_system_wide, ...i }) {
      refuseSystemWide(is_system_wide);
      const row = {
        uuid: newUuid(),
        team_id: caller.teamId,
        name: i.name,
        organization: i.organization ?? null,
        api_url: i.api_url ?? 'https://api.github.com',
        html_url: i.html_url,
        custom_user: i.custom_user ?? 'git',
        custom_port: i.custom_port ?? 22,
        app_id: i.app_id,
        installation_id: i.installation_id,
        client_id: i.client_id,
        client_secret: i.client_secret,
        webhook_secret: i.webhook_secret ?? null,
        private_key_id: await keyId(db, caller.teamId, private_key_uuid),
        ...stamps(),
      };
      try {
        const { id } = await db.insertInto('github_apps').values(row).returning('id').executeTakeFirstOrThrow();
        return appView({ ...row, id });
      } catch (err) {
        // The key was deleted between the lookup and the insert.
        if (isForeignKeyViolation(err)) throw notFound();
        throw err;
      }
    },
  }),
  defineOperation({
    name: 'update_github_app',
    title: 'Update a GitHub app',
    description: 'Change fields of a GitHub app record by its numeric id (github_app_id).',
    summary: 'Change a GitHub app record.',
    permission: 'write',
    toolset: 'applications',
    input: () => z.strictObject({ ...appIdParam, ...z.object(appFields).partial().shape }),
    output: () => z.object({ message: z.string(), data: appSchema }),
    annotations: UPDATE,
    http: { method: 'PATCH', path: '/api/v1/github-apps/{github_app_id}' },
    async run({ db: store, caller }, { github_app_id, private_key_uuid, is_system_wide, ...i }) {
      refuseSystemWide(is_system_wide);
      return atomically(store, async (db) => {
        const r = await ownedApp(db, github_app_id, caller.teamId);
        const patch: Partial<AppRow> = { updated_at: nowIso() };
        for (const [k, v] of Object.entries(i)) if (v !== undefined) (patch as Record<string, unknown>)[k] = v;
        if (private_key_uuid !== undefined) patch.private_key_id = await keyId(db, caller.teamId, private_key_uuid);
        await db.updateTable('github_apps').set(patch).where('id', '=', r.id).execute();
        return { message: 'GitHub app updated successfully', data: appView({ ...r, ...patch }) };
      });
    },
  }),
  defineOperation({
    name: 'delete_github_app',
    title: 'Delete a GitHub app',
    description: 'Delete a GitHub app record by its numeric id; 409 while an application clones through it.',
    summary: 'Delete a GitHub app record.',
    permission: 'write',
    toolset: 'applications',
    input: () => z.strictObject(appIdParam),
    output: () => messageSchema,
    annotations: DELETE,
    http: { method: 'DELETE', path: '/api/v1/github-apps/{github_app_id}' },
    async run({ db: store, caller }, { github_app_id }) {
      return atomically(store, async (db) => {
        const r = await ownedApp(db, github_app_id, caller.teamId);
        // Applications cloned through the app name it in their config (no foreign key there), as Coolify refuses while any does.
        const using = await db
          .selectFrom('resources')
          .select((e) => e.fn.countAll<number>().as('n'))
          .where('team_id', '=', caller.teamId)
          .where('kind', '=', 'application')
          .where((w) => w.or([w('config', 'like', `%"github_app_id":${r.id},%`), w('config', 'like', `%"github_app_id":${r.id}}%`)]))
          .executeTakeFirstOrThrow();
        if (Number(using.n) > 0) throw new BerthError('conflict', { message: `This GitHub app is being used by ${Number(using.n)} application(s). Please delete them first.` });
        await db.deleteFrom('github_apps').where('id', '=', r.id).execute();
        return { message: 'GitHub app deleted successfully' };
      });
    },
  }),
  defineOperation({
    name: 'list_github_app_repositories',
    title: "List a GitHub app's repositories",
    description:
      "The repositories the GitHub app's installation reaches, from GitHub's API (the app's api_url) with an installation token minted from the app's key, every page, sorted by name (GitHub's objects). 502 when GitHub cannot be reached or refuses the app.",
    summary: "A GitHub app's repositories, from GitHub's API with an installation token.",
    permission: 'read',
    toolset: 'applications',
    input: () => z.strictObject(appIdParam),
    output: () => z.object({ repositories: z.array(z.record(z.string(), z.unknown())) }),
    annotations: { ...READ, openWorld: true },
    http: { method: 'GET', path: '/api/v1/github-apps/{github_app_id}/repositories' },
    async run({ db, caller, config }, { github_app_id }) {
      const app = await ownedApp(db, github_app_id, caller.teamId);
      return { repositories: await installationRepositories(await githubSession(db, new TargetGuard(config.outboundAllowedTargets), app)) };
    },
  }),
  defineOperation({
    name: 'list_github_app_branches',
    title: 'List branches through a GitHub app',
    description:
      "A repository's branches from GitHub's API through the GitHub app's installation (GitHub's objects). 404 when the installation does not reach the repository; 502 when GitHub cannot be reached.",
    summary: "A repository's branches, from GitHub's API through a GitHub app.",
    permission: 'read',
    toolset: 'applications',
    input: () =>
      z.strictObject({
        ...appIdParam,
        owner: z.string().regex(/^[A-Za-z0-9._-]{1,100}$/, 'A GitHub owner name.'),
        repo: z.string().regex(/^[A-Za-z0-9._-]{1,100}$/, 'A GitHub repository name.'),
      }),
    output: () => z.object({ branches: z.array(z.record(z.string(), z.unknown())) }),
    annotations: { ...READ, openWorld: true },
    http: { method: 'GET', path: '/api/v1/github-apps/{github_app_id}/repositories/{owner}/{repo}/branches' },
    async run({ db, caller, config }, { github_app_id, owner, repo }) {
      const app = await ownedApp(db, github_app_id, caller.teamId);
      const full = githubRepository(`${owner}/${repo}`);
      if (!full) throw validationError({ repo: ['A GitHub repository name.'] });
      return { branches: await repositoryBranches(await githubSession(db, new TargetGuard(config.outboundAllowedTargets), app), full) };
    },
  }),
];

export const cloudTokenOperations = [
  defineOperation({
    name: 'list_cloud_tokens',
    title: 'List cloud provider tokens',
    description: "The team's cloud provider tokens (hetzner, digitalocean, vultr): names and providers, never the values.",
    summary: "List the team's cloud provider tokens (never the token values).",
    permission: 'read',
    toolset: 'servers',
    input: () => z.strictObject({}),
    output: () => z.array(tokenSchema.omit({ token: true })),
    annotations: READ,
    http: { method: 'GET', path: '/api/v1/cloud-tokens' },
    async run({ db, caller }) {
      return (await db.selectFrom('cloud_tokens').selectAll().where('team_id', '=', caller.teamId).orderBy('id').execute()).map((r) => tokenView(r, false));
    },
  }),
  defineOperation({
    name: 'create_cloud_token',
    title: 'Store a cloud provider token',
    description:
      "Store a cloud provider's API token (hetzner, digitalocean, vultr), used by validate_cloud_token and the provider catalogues (list_hetzner_locations, ...). Stored unchecked: validate it next. The value is shown only to read:sensitive.",
    summary: "Store a cloud provider's API token (hetzner, digitalocean, vultr); stored unchecked (validate it next).",
    permission: 'write',
    toolset: 'servers',
    input: () => z.strictObject({ provider: z.enum(providers), token: text(4096), name: text(255) }),
    output: () => uuidSchema,
    annotations: CREATE,
    http: { method: 'POST', path: '/api/v1/cloud-tokens', status: 201 },
    async run({ db, caller }, i) {
      const uuid = newUuid();
      await db
        .insertInto('cloud_tokens')
        .values({ uuid, team_id: caller.teamId, name: i.name, provider: i.provider, token: i.token, ...stamps() })
        .execute();
      return { uuid };
    },
  }),
  defineOperation({
    name: 'get_cloud_token',
    title: 'Get a cloud provider token',
    description: 'One cloud provider token; its value only with read:sensitive.',
    summary: 'Get a cloud provider token (its value needs read:sensitive).',
    permission: 'read',
    toolset: 'servers',
    input: () => z.strictObject({ uuid: uuidParam }),
    output: () => tokenSchema,
    annotations: READ,
    http: { method: 'GET', path: '/api/v1/cloud-tokens/{uuid}' },
    async run({ db, caller }, { uuid }) {
      return tokenView(await owned(db, 'cloud_tokens', uuid, caller.teamId), true);
    },
  }),
  defineOperation({
    name: 'update_cloud_token',
    title: 'Rename a cloud provider token',
    description: 'Change the name of a cloud provider token (the value cannot be changed; store a new one).',
    summary: 'Rename a cloud provider token (Coolify changes the name only).',
    permission: 'write',
    toolset: 'servers',
    input: () => z.strictObject({ uuid: uuidParam, name: text(255) }),
    output: () => uuidSchema,
    annotations: UPDATE,
    http: { method: 'PATCH', path: '/api/v1/cloud-tokens/{uuid}' },
    async run({ db, caller }, { uuid, name }) {
      const r = await owned(db, 'cloud_tokens', uuid, caller.teamId);
      await db.updateTable('cloud_tokens').set({ name, updated_at: nowIso() }).where('id', '=', r.id).execute();
      return { uuid };
    },
  }),
  defineOperation({
    name: 'delete_cloud_token',
    title: 'Delete a cloud provider token',
    description: 'Delete a cloud provider token from the team.',
    summary: 'Delete a cloud provider token.',
    permission: 'write',
    toolset: 'servers',
    input: () => z.strictObject({ uuid: uuidParam }),
    output: () => messageSchema,
    annotations: DELETE,
    http: { method: 'DELETE', path: '/api/v1/cloud-tokens/{uuid}' },
    async run({ db, caller }, { uuid }) {
      const r = await owned(db, 'cloud_tokens', uuid, caller.teamId);
      await db.deleteFrom('cloud_tokens').where('id', '=', r.id).execute();
      return { message: 'Cloud provider token deleted.' };
    },
  }),
  defineOperation({
    name: 'validate_cloud_token',
    title: 'Validate a cloud provider token',
    description:
      "Ask the token's provider whether it accepts it (Hetzner: its servers; DigitalOcean and Vultr: the account), as Coolify does. valid false with why; 502 when the provider's API cannot be reached.",
    summary: "Check a token against its provider's API (valid true or false; 502 when the provider cannot be reached).",
    permission: 'read',
    toolset: 'servers',
    input: () => z.strictObject({ uuid: uuidParam }),
    output: () => z.object({ valid: z.boolean(), message: z.string() }),
    annotations: { ...READ, openWorld: true },
    http: { method: 'POST', path: '/api/v1/cloud-tokens/{uuid}/validate' },
    async run(ctx, { uuid }) {
      const r = await owned(ctx.db, 'cloud_tokens', uuid, ctx.caller.teamId);
      const provider = r.provider as (typeof providers)[number];
      const valid = await tokenAccepted(await cloudCall(ctx, provider, uuid));
      return { valid, message: valid ? 'Token is valid.' : `Invalid ${provider} token. Please check your API token.` };
    },
  }),
];
