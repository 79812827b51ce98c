import { forgetGrant } from '../auth/oauth/adapter.js';
import { z } from 'zod';
import { mayGrantRoot, PERMISSIONS, ROLES, type Permission, type Role } from '../auth/permissions.js';
import { EXPIRATIONS, expiresAt, formatToken, hashSecret, mintSecret, type Expiration } from '../auth/token.js';
import { atomically } from '../store/atomic.js';
import { nowIso, type Db } from '../store/db.js';
import type { TeamRow, UserRow } from '../store/schema.js';
import { readSettings, writeSettings } from '../store/settings.js';
import { BerthError, validationError } from '../errors.js';
import { issuesToErrors } from './validation.js';

/**
 * Instance administration: what the `berth` command does on the store directly (creating the
 * instance, users, teams, memberships and tokens). Inputs are validated here, so every caller
 * gets the same rules; every change is one transaction.
 */
function parse<T extends z.ZodType>(schema: T, input: unknown): z.infer<T> {
  const r = schema.safeParse(input);
  if (!r.success) throw validationError(issuesToErrors(r.error.issues));
  return r.data;
}

const conflict = (message: string) => new BerthError('conflict', { message });

const email = z
  .email()
  .max(254)
  .transform((e) => e.toLowerCase());
const teamName = z.string().trim().min(1).max(100);
const userName = z.string().trim().min(1).max(100);

export const tokenInput = z.strictObject({
  email,
  team: z.string().min(1),
  name: z.string().trim().min(1).max(255),
  permissions: z.array(z.enum(PERMISSIONS, { error: (i) => `Unknown permission "${String(i.input)}"; use ${PERMISSIONS.join(', ')}.` })).min(1, 'At least one permission is required.'),
  expires: z.enum(Object.keys(EXPIRATIONS) as [Expiration, ...Expiration[]]),
});

export interface IssuedToken {
  id: number;
  token: string;
  expires_at: string | null;
}

type Tx = Db;

async function insertToken(trx: Tx, t: { name: string; userId: number; teamId: number; permissions: Permission[]; expires: Expiration }): Promise<IssuedToken> {
  const secret = mintSecret();
  const expires_at = expiresAt(t.expires);
  const row = await trx
    .insertInto('api_tokens')
    .values({
      name: t.name,
      user_id: t.userId,
      team_id: t.teamId,
      token_hash: hashSecret(secret),
      permissions: JSON.stringify([...new Set(t.permissions)]),
      expires_at,
      last_used_at: null,
      created_at: nowIso(),
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return { id: row.id, token: formatToken(row.id, secret), expires_at };
}

async function insertUser(trx: Tx, emailAddr: string, name: string): Promise<UserRow> {
  if (await trx.selectFrom('users').select('id').where('email', '=', emailAddr).executeTakeFirst()) {
    throw conflict(`A user with e-mail ${emailAddr} already exists.`);
  }
  const now = nowIso();
  return trx.insertInto('users').values({ email: emailAddr, name, created_at: now, updated_at: now }).returningAll().executeTakeFirstOrThrow();
}

async function insertTeam(trx: Tx, name: string, ownerId: number, description: string | null): Promise<TeamRow> {
  if (await trx.selectFrom('teams').select('id').where('name', '=', name).executeTakeFirst()) {
    throw conflict(`A team named "${name}" already exists.`);
  }
  const now = nowIso();
  const team = await trx.insertInto('teams').values({ name, description, personal_team: 0, created_at: now, updated_at: now }).returningAll().executeTakeFirstOrThrow();
  await trx.insertInto('team_members').values({ team_id: team.id, user_id: ownerId, role: 'owner', created_at: now }).execute();
  return team;
}

async function userByEmail(db: Tx, emailAddr: string): Promise<UserRow> {
  const u = await db.selectFrom('users').selectAll().where('email', '=', emailAddr.toLowerCase()).executeTakeFirst();
  if (!u) throw validationError({ email: [`No user with e-mail ${emailAddr}.`] });
  return u;
}

/** A team by numeric id or by name. */
export async function teamByRef(db: Tx, ref: string): Promise<TeamRow> {
  const q = db.selectFrom('teams').selectAll();
  const t = /^[1-9][0-9]*$/.test(ref) ? await q.where('id', '=', Number(ref)).executeTakeFirst() : await q.where('name', '=', ref).executeTakeFirst();
  if (!t) throw validationError({ team: [`No team "${ref}".`] });
  return t;
}

export async function isInitialized(db: Db): Promise<boolean> {
  return (await readSettings(db)).rootTeamId !== null;
}

export interface InitResult {
  team: { id: number; name: string };
  user: { id: number; email: string };
  token: string;
}

export async function initInstance(db: Db, input: { email?: string; team?: string; apiEnabled?: boolean }): Promise<InitResult> {
  const i = parse(z.object({ email, team: teamName, apiEnabled: z.boolean() }), {
    email: input.email ?? 'admin@localhost.localdomain',
    team: input.team ?? 'Root Team',
    apiEnabled: input.apiEnabled ?? true,
  });
  return atomically(db, async (trx) => {
    if (await isInitialized(trx)) throw conflict('This data directory already holds an initialized berth instance; nothing was changed.');
    const user = await insertUser(trx, i.email, 'Owner');
    const team = await insertTeam(trx, i.team, user.id, "The instance's root team.");
    const token = await insertToken(trx, { name: 'root', userId: user.id, teamId: team.id, permissions: ['root'], expires: 'never' });
    await writeSettings(trx, { rootTeamId: team.id, apiEnabled: i.apiEnabled, allowedIps: '' });
    return { team: { id: team.id, name: team.name }, user: { id: user.id, email: user.email }, token: token.token };
  });
}

export async function createUser(db: Db, input: { email: string; name?: string }) {
  const i = parse(z.object({ email, name: userName.optional() }), input);
  return atomically(db, async (trx) => {
    const u = await insertUser(trx, i.email, i.name ?? i.email.split('@')[0]!);
    return { id: u.id, email: u.email, name: u.name };
  });
}

export async function createTeam(db: Db, input: { name: string; owner: string; description?: string }) {
  const i = parse(z.object({ name: teamName, owner: email, description: z.string().max(1000).optional() }), input);
  return atomically(db, async (trx) => {
    const owner = await userByEmail(trx, i.owner);
    const t = await insertTeam(trx, i.name, owner.id, i.description ?? null);
    return { id: t.id, name: t.name };
  });
}

/**
 * Serializes the membership changes of one team until the transaction ends: an update of the
 * team's row takes its row lock on PostgreSQL (SQLite transactions begin IMMEDIATE, so they
 * are serialized already). Whatever reads the owners after it sees every earlier change committed.
 */
async function lockTeam(trx: Tx, teamId: number): Promise<void> {
  await trx
    .updateTable('teams')
    .set((eb) => ({ updated_at: eb.ref('updated_at') }))
    .where('id', '=', teamId)
    .execute();
}

/**
 * Refuses a change that takes the owner role from userId when no other owner is left (call with
 * the team locked).
 */
async function keepAnOwner(trx: Tx, teamId: number, userId: number): Promise<void> {
  const current = await trx.selectFrom('team_members').select('role').where('team_id', '=', teamId).where('user_id', '=', userId).executeTakeFirst();
  if (current?.role !== 'owner') return;
  const other = await trx.selectFrom('team_members').select('user_id').where('team_id', '=', teamId).where('role', '=', 'owner').where('user_id', '!=', userId).limit(1).executeTakeFirst();
  if (!other) throw conflict('A team must keep at least one owner.');
}

/**
 * Adds a member or changes their role. A role change applies to the member's tokens at their
 * next request (authentication caps a token by its holder's current role); the last owner
 * cannot be made an admin or member.
 */
export async function addMember(db: Db, input: { team: string; email: string; role: string }) {
  const i = parse(z.object({ team: z.string().min(1), email, role: z.enum(ROLES as [Role, ...Role[]]) }), input);
  return atomically(db, async (trx) => {
    const team = await teamByRef(trx, i.team);
    const user = await userByEmail(trx, i.email);
    await lockTeam(trx, team.id);
    if (i.role !== 'owner') await keepAnOwner(trx, team.id, user.id);
    await trx
      .insertInto('team_members')
      .values({ team_id: team.id, user_id: user.id, role: i.role, created_at: nowIso() })
      .onConflict((oc) => oc.columns(['team_id', 'user_id']).doUpdateSet({ role: i.role }))
      .execute();
    return { team: { id: team.id, name: team.name }, user: { id: user.id, email: user.email }, role: i.role };
  });
}

/**
 * A departing member's tokens for a team are deleted with the membership, OAuth approvals with
 * their grants and everything issued under them: authentication's membership check alone would
 * let them work again if the person were added back. Returns the revoked token ids.
 */
async function revokeMemberTokens(trx: Tx, teamId: number, userId: number): Promise<number[]> {
  const rows = await trx.selectFrom('api_tokens').select(['id', 'oauth_grant_id']).where('team_id', '=', teamId).where('user_id', '=', userId).orderBy('id').execute();
  for (const r of rows) if (r.oauth_grant_id) await forgetGrant(trx, r.oauth_grant_id);
  await trx.deleteFrom('api_tokens').where('team_id', '=', teamId).where('user_id', '=', userId).execute();
  return rows.map((r) => r.id);
}

/** Removing a member revokes their tokens for that team (re-adding them gives none back). */
export async function removeMember(db: Db, input: { team: string; email: string }) {
  const i = parse(z.object({ team: z.string().min(1), email }), input);
  return atomically(db, async (trx) => {
    const team = await teamByRef(trx, i.team);
    const user = await userByEmail(trx, i.email);
    await lockTeam(trx, team.id);
    await keepAnOwner(trx, team.id, user.id);
    const r = await trx.deleteFrom('team_members').where('team_id', '=', team.id).where('user_id', '=', user.id).executeTakeFirst();
    if (r.numDeletedRows === 0n) throw validationError({ email: [`${i.email} is not a member of ${team.name}.`] });
    const revokedTokens = await revokeMemberTokens(trx, team.id, user.id);
    return { team: { id: team.id, name: team.name }, user: { id: user.id, email: user.email }, revoked_tokens: revokedTokens };
  });
}

/** The holder and team a token would have, by the rules a new token must meet (422 otherwise). */
async function tokenHolder(trx: Tx, i: z.infer<typeof tokenInput>): Promise<{ user: UserRow; team: TeamRow }> {
  const user = await userByEmail(trx, i.email);
  const team = await teamByRef(trx, i.team);
  const m = await trx.selectFrom('team_members').select('role').where('team_id', '=', team.id).where('user_id', '=', user.id).executeTakeFirst();
  if (!m) throw validationError({ team: [`${i.email} is not a member of ${team.name}.`] });
  if (i.permissions.includes('root') && !mayGrantRoot(m.role)) {
    throw validationError({ permissions: ['root can be granted only to a team owner or admin.'] });
  }
  return { user, team };
}

export async function createToken(db: Db, input: z.input<typeof tokenInput>): Promise<IssuedToken> {
  const i = parse(tokenInput, input);
  return atomically(db, async (trx) => {
    const { user, team } = await tokenHolder(trx, i);
    return insertToken(trx, { name: i.name, userId: user.id, teamId: team.id, permissions: i.permissions, expires: i.expires });
  });
}

/** What createToken would refuse, refused the same way, with nothing made (`mcp-config --dry-run`). */
export async function checkToken(db: Db, input: z.input<typeof tokenInput>): Promise<void> {
  await tokenHolder(db, parse(tokenInput, input));
}

export async function listTokens(db: Db, teamRef: string) {
  const team = await teamByRef(db, teamRef);
  const rows = await db
    .selectFrom('api_tokens as t')
    .innerJoin('users as u', 'u.id', 't.user_id')
    .select(['t.id', 't.name', 'u.email', 't.permissions', 't.expires_at', 't.last_used_at', 't.created_at', 't.oauth_client_id'])
    .where('t.team_id', '=', team.id)
    .orderBy('t.id')
    .execute();
  // oauth_client_id: the row is a person's approval of that OAuth client (its name is the client's).
  return rows.map((r) => ({ ...r, permissions: JSON.parse(r.permissions) as string[], oauth_client_id: r.oauth_client_id ?? null }));
}

export async function revokeToken(db: Db, id: number): Promise<void> {
  if (!Number.isSafeInteger(id) || id <= 0) throw validationError({ id: ['Token id must be a positive integer.'] });
  await atomically(db, async (trx) => {
    const row = await trx.selectFrom('api_tokens').select('oauth_grant_id').where('id', '=', id).executeTakeFirst();
    if (!row) throw new BerthError('not_found');
    // An OAuth client's approval: its grant, codes and tokens go with it (refreshing fails too).
    if (row.oauth_grant_id) await forgetGrant(trx, row.oauth_grant_id);
    else await trx.deleteFrom('api_tokens').where('id', '=', id).execute();
  });
}

/** The default holder of a client's token (`berth mcp-config`): the root team's first owner. */
export async function rootOwner(db: Db): Promise<{ email: string; team: string }> {
  const { rootTeamId } = await readSettings(db);
  if (rootTeamId === null) throw validationError({ team: ['This instance has no root team; run `berth init`.'] });
  const owner = await db
    .selectFrom('team_members as m')
    .innerJoin('users as u', 'u.id', 'm.user_id')
    .select('u.email')
    .where('m.team_id', '=', rootTeamId)
    .where('m.role', '=', 'owner')
    .orderBy('m.created_at')
    .orderBy('u.id')
    .executeTakeFirst();
  if (!owner) throw validationError({ email: ['The root team has no owner; name one with --email.'] });
  return { email: owner.email, team: String(rootTeamId) };
}

/**
 * What a team member may do to another's membership, written once for the console: owners
 * anything (the last owner is kept); admins only to admins and members, and never make an owner;
 * members nothing.
 */
export function mayManage(actor: Role, target: Role, newRole?: Role): boolean {
  if (actor === 'owner') return true;
  if (actor !== 'admin') return false;
  return target !== 'owner' && newRole !== 'owner';
}

async function membership(trx: Tx, teamId: number, userId: number): Promise<Role | undefined> {
  const m = await trx.selectFrom('team_members').select('role').where('team_id', '=', teamId).where('user_id', '=', userId).executeTakeFirst();
  return m?.role;
}

/**
 * A person changes a member's role (the console). Both roles are read inside the transaction,
 * with the team locked, so a concurrent demotion of the actor or removal of the target is seen.
 * Not a member: 404 (as for a team that does not exist); a role that may not do it: 403.
 */
export async function changeRoleAs(db: Db, input: { teamId: number; actorId: number; userId: number; role: string }) {
  const role = parse(z.enum(ROLES as [Role, ...Role[]], { error: 'Choose owner, admin or member.' }), input.role);
  return atomically(db, async (trx) => {
    await lockTeam(trx, input.teamId);
    const actor = await membership(trx, input.teamId, input.actorId);
    if (!actor) throw new BerthError('not_found');
    const target = await membership(trx, input.teamId, input.userId);
    if (!target) throw new BerthError('not_found');
    if (!mayManage(actor, target, role)) throw new BerthError('role_not_allowed');
    if (role !== 'owner') await keepAnOwner(trx, input.teamId, input.userId);
    await trx.updateTable('team_members').set({ role }).where('team_id', '=', input.teamId).where('user_id', '=', input.userId).execute();
    return { role };
  });
}

/** A person removes a member (the console); the same rules, and their tokens for the team are revoked. Returns the revoked token ids. */
export async function removeMemberAs(db: Db, input: { teamId: number; actorId: number; userId: number }): Promise<number[]> {
  return atomically(db, async (trx) => {
    await lockTeam(trx, input.teamId);
    const actor = await membership(trx, input.teamId, input.actorId);
    if (!actor) throw new BerthError('not_found');
    const target = await membership(trx, input.teamId, input.userId);
    if (!target) throw new BerthError('not_found');
    if (!mayManage(actor, target)) throw new BerthError('role_not_allowed');
    await keepAnOwner(trx, input.teamId, input.userId);
    await trx.deleteFrom('team_members').where('team_id', '=', input.teamId).where('user_id', '=', input.userId).execute();
    return revokeMemberTokens(trx, input.teamId, input.userId);
  });
}
