import { auditArguments } from './audit/entry.js';
import type { AuditDoor } from '../store/schema-audit.js';
import { capTo, isPermission, PERMISSIONS, type Permission, type Role } from '../auth/permissions.js';
import { consoleUrl, type Config } from '../config/config.js';
import { BerthError, notFound, unexpected } from '../errors.js';
import { newUuid } from '../ids.js';
import type { Db } from '../store/db.js';
import type { Selectable } from 'kysely';
import type { ApprovalStatus, ApprovalsTable } from '../store/schema-approvals.js';
import { approvalArgsHash } from '../store/approval-args-hash.js';
import { readSettings } from '../store/settings.js';
import type { Caller } from './caller.js';
import type { Operation } from './operation.js';
import { operationTable } from './operations/table.js';
import { resourceInProduction } from './production.js';
import { hasSensitive, redact } from './redact.js';

/**
 * Approvals (issue 26): an agent's call that the team's policy names waits for a person. The
 * gate (holdForApproval, called by Core.run) records it and answers approval_pending; a person
 * approves, signed in to the console or with the CLI on the host, never a token, OAuth client or
 * MCP answer (issue 39); decide() claims it with one conditional UPDATE, so it runs at most once,
 * on whichever instance, as the caller that asked, with the arguments the person saw (args_hash).
 */

/** The classes a policy may name beside operation names. */
export const APPROVAL_CLASSES = ['delete', 'migrate', 'stop', 'production_env'] as const;
export type ApprovalClass = (typeof APPROVAL_CLASSES)[number];
export const DEFAULT_EXPIRY_S = 3600;
/** Who may approve: the roles that may also hold root. */
export const APPROVER_ROLES: ReadonlySet<Role> = new Set(['owner', 'admin']);
/** Changing the policy itself, while it holds anything, waits for a person too. */
export const POLICY_RULE = 'approval_policy';
const UPDATE_POLICY_OP = 'update_approval_policy';
const DECISIONS: ReadonlySet<string> = new Set(['approve_approval', 'deny_approval']);

export interface ApprovalPolicy {
  rules: string[];
  expiresInSeconds: number;
}

/** The classes an operation belongs to (production_env also needs its target to be in production). */
export function classesOf(op: Pick<Operation, 'name' | 'http' | 'annotations' | 'destroysData'>): ApprovalClass[] {
  const out: ApprovalClass[] = [];
  // Every call that destroys data: each DELETE, and the calls declared destroysData (restore, Docker cleanup).
  if (op.http.method === 'DELETE' || op.destroysData) out.push('delete');
  if (op.name.startsWith('migrate_')) out.push('migrate');
  if (op.name.startsWith('stop_')) out.push('stop');
  if (!op.annotations.readOnly && /_envs?(_bulk)?$/.test(op.name)) out.push('production_env');
  return out;
}

export async function readPolicy(db: Db, teamId: number): Promise<ApprovalPolicy> {
  const row = await db.selectFrom('approval_policies').select(['rules', 'expires_in_seconds']).where('team_id', '=', teamId).executeTakeFirst();
  return row ? { rules: JSON.parse(row.rules) as string[], expiresInSeconds: row.expires_in_seconds } : { rules: [], expiresInSeconds: DEFAULT_EXPIRY_S };
}

export async function writePolicy(db: Db, teamId: number, policy: ApprovalPolicy): Promise<ApprovalPolicy> {
  const values = { rules: JSON.stringify([...new Set(policy.rules)].sort()), expires_in_seconds: policy.expiresInSeconds, updated_at: new Date().toISOString() };
  await db
    .insertInto('approval_policies')
    .values({ team_id: teamId, ...values })
    .onConflict((oc) => oc.column('team_id').doUpdateSet(values))
    .execute();
  return readPolicy(db, teamId);
}

/** Whether the variables a call changes are in production: the operation's own answer, else its resource's. */
const inProduction = (db: Db, op: Operation, caller: Caller, input: Record<string, unknown>): Promise<boolean> =>
  op.inProduction ? op.inProduction(db, caller, input) : resourceInProduction(db, caller.teamId, input.uuid);

/** The rule of the policy that holds this call, if any. */
async function ruleFor(db: Db, op: Operation, caller: Caller, input: Record<string, unknown>, policy: ApprovalPolicy): Promise<string | undefined> {
  if (op.name === UPDATE_POLICY_OP && policy.rules.length) return POLICY_RULE;
  if (!policy.rules.length) return undefined;
  if (policy.rules.includes(op.name)) return op.name;
  for (const c of classesOf(op)) {
    if (!policy.rules.includes(c)) continue;
    if (c === 'production_env' && !(await inProduction(db, op, caller, input))) continue;
    return c;
  }
  return undefined;
}

const targetOf = (input: Record<string, unknown>): string | null => {
  for (const k of ['uuid', 'id', 'application_uuid', 'database_uuid', 'service_uuid', 'server_uuid', 'project_uuid']) {
    const v = input[k];
    if (typeof v === 'string' || typeof v === 'number') return String(v);
  }
  return null;
};

/** The console's page for an approval: BERTH_PUBLIC_URL, else a running serve's recorded address (from `berth mcp`), else this process's own. */
export const approvalUrl = (config: Config, uuid: string) => `${consoleUrl(config)}/approvals/${uuid}`;

/**
 * Core.run's hook: an agent's call (every token caller; people in the console and CLI are not
 * held) that the team's policy names is recorded as pending and answered with approval_pending.
 * Read-only operations are never held. Returns normally when the call may run now. checkFirst
 * (the gate's) runs only for a call the policy holds, before anything is recorded.
 */
export async function holdForApproval(deps: { db: Db; config: Config }, op: Operation, caller: Caller, input: Record<string, unknown>, checkFirst?: () => Promise<void>): Promise<void> {
  // A decision on a held call is never held itself: a token's approve is refused whatever the
  // policy (holding it queued a call that could only fail), and a deny withdraws, it runs nothing.
  if (op.annotations.readOnly || caller.person || DECISIONS.has(op.name)) return;
  const policy = await readPolicy(deps.db, caller.teamId);
  if (!policy.rules.length && op.name !== UPDATE_POLICY_OP) return;
  const rule = await ruleFor(deps.db, op, caller, input, policy);
  if (!rule) return;
  // A call for nothing holds nothing (issue 39): its 404 or 422 first, as without a policy.
  await checkFirst?.();
  const now = new Date();
  const row = {
    uuid: newUuid(),
    team_id: caller.teamId,
    token_id: caller.tokenId,
    user_id: caller.userId,
    oauth_client_id: caller.oauth?.clientId ?? null,
    operation: op.name,
    rule,
    target: targetOf(input),
    input: JSON.stringify(input),
    args_hash: approvalArgsHash(JSON.stringify(input)),
    shown_input: JSON.stringify(auditArguments(op, input)),
    permissions: JSON.stringify([...caller.permissions]),
    source_ip: caller.sourceIp,
    status: 'pending' as const,
    created_at: now.toISOString(),
    expires_at: new Date(now.getTime() + policy.expiresInSeconds * 1000).toISOString(),
  };
  await deps.db.insertInto('approvals').values(row).execute();
  throw new BerthError('approval_pending', { approval: approvalView(deps.config, { ...row, decided_by_user_id: null, decided_via: null, decided_at: null, result: null, error: null }) });
}

/** The columns a view reads: the table's own, less what only the re-run needs. */
type Row = Omit<Selectable<ApprovalsTable>, 'id' | 'team_id' | 'input' | 'permissions' | 'source_ip'>;

const effectiveStatus = (r: Pick<Row, 'status' | 'expires_at'>): ApprovalStatus => (r.status === 'pending' && r.expires_at <= new Date().toISOString() ? 'expired' : r.status);

/** What an approver, the agent and the console see: never the stored input, only its redacted copy. */
export function approvalView(config: Config, r: Row) {
  return {
    uuid: r.uuid,
    status: effectiveStatus(r),
    operation: r.operation,
    rule: r.rule,
    target: r.target,
    arguments: JSON.parse(r.shown_input) as Record<string, unknown>,
    args_hash: r.args_hash,
    requested_by: { user_id: r.user_id, token_id: r.token_id, oauth_client_id: r.oauth_client_id },
    created_at: r.created_at,
    expires_at: r.expires_at,
    decided_by_user_id: r.decided_by_user_id,
    decided_via: r.decided_via,
    decided_at: r.decided_at,
    result: r.result === null ? null : (JSON.parse(r.result) as unknown),
    error: r.error === null ? null : (JSON.parse(r.error) as { kind: string; message: string }),
    approve_url: approvalUrl(config, r.uuid),
  };
}
export type ApprovalView = ReturnType<typeof approvalView>;

/** Pending approvals past their time become expired (the view says so already; this keeps the store honest). */
async function expireDue(db: Db, teamId: number): Promise<void> {
  await db.updateTable('approvals').set({ status: 'expired' }).where('team_id', '=', teamId).where('status', '=', 'pending').where('expires_at', '<=', new Date().toISOString()).execute();
}

export async function listApprovals(db: Db, config: Config, teamId: number, q: { status?: ApprovalStatus; page: number; perPage: number }) {
  await expireDue(db, teamId);
  let base = db.selectFrom('approvals').where('team_id', '=', teamId);
  if (q.status) base = base.where('status', '=', q.status);
  const { total } = await base.select((eb) => eb.fn.countAll<number | string>().as('total')).executeTakeFirstOrThrow();
  const rows = await base
    .selectAll()
    .orderBy('id', 'desc')
    .limit(q.perPage)
    .offset((q.page - 1) * q.perPage)
    .execute();
  return { items: rows.map((r) => approvalView(config, r)), total: Number(total), page: q.page, per_page: q.perPage };
}

/** One approval of the team; another team's is the same 404 as a missing one. */
export async function getApproval(db: Db, config: Config, teamId: number, uuid: string): Promise<ApprovalView> {
  const row = await db.selectFrom('approvals').selectAll().where('uuid', '=', uuid).where('team_id', '=', teamId).executeTakeFirst();
  if (!row) throw notFound();
  return approvalView(config, row);
}

/** The role of a user in a team, or null when they are not a member. */
export async function roleIn(db: Db, teamId: number, userId: number): Promise<Role | null> {
  const m = await db.selectFrom('team_members').select('role').where('team_id', '=', teamId).where('user_id', '=', userId).executeTakeFirst();
  return m?.role ?? null;
}

/** A person acting for themselves in one team (console, CLI): the permissions their role may hold. */
export async function personCaller(db: Db, teamId: number, userId: number, via: 'console' | 'cli', sourceIp: string): Promise<Caller> {
  const role = await roleIn(db, teamId, userId);
  if (!role) throw notFound();
  const { rootTeamId } = await readSettings(db);
  return { userId, teamId, tokenId: 0, permissions: capTo(role, PERMISSIONS), rootTeam: teamId === rootTeamId, sourceIp, door: via, person: via };
}

/**
 * The caller that asked, as it stands now: its token must still exist, be unexpired and be held
 * by a member of the team; its permissions are those it had when it asked, narrowed by what the
 * token and the holder's role allow now. Null when it may no longer act.
 */
async function askingCaller(db: Db, row: { token_id: number; team_id: number; permissions: string; source_ip: string; oauth_client_id: string | null }, door: AuditDoor): Promise<Caller | null> {
  const t = await db
    .selectFrom('api_tokens as t')
    .innerJoin('team_members as m', (j) => j.onRef('m.team_id', '=', 't.team_id').onRef('m.user_id', '=', 't.user_id'))
    .select(['t.id', 't.user_id', 't.team_id', 't.permissions', 't.expires_at', 'm.role'])
    .where('t.id', '=', row.token_id)
    .where('t.team_id', '=', row.team_id)
    .executeTakeFirst();
  if (!t || (t.expires_at !== null && Date.parse(t.expires_at) <= Date.now())) return null;
  const now = capTo(t.role, (JSON.parse(t.permissions) as string[]).filter(isPermission));
  const asked = new Set((JSON.parse(row.permissions) as string[]).filter(isPermission));
  const permissions = new Set<Permission>([...now].filter((p) => asked.has(p)));
  const { rootTeamId } = await readSettings(db);
  return {
    userId: t.user_id,
    teamId: t.team_id,
    tokenId: t.id,
    permissions,
    rootTeam: t.team_id === rootTeamId,
    sourceIp: row.source_ip,
    door,
    ...(row.oauth_client_id ? { oauth: { clientId: row.oauth_client_id } } : {}),
  };
}

export interface Decider {
  userId: number;
  teamId: number;
  /**
   * Where the decision was made: a person's door (console, cli) for an approve; a token's deny
   * names its door (rest, mcp-stdio, mcp-http). Rows decided before issue 39 may say mcp_elicitation.
   */
  via: AuditDoor;
  /** The arguments hash the person was shown (the console posts it back); refused when it is not the held call's. */
  argsHash?: string;
}

/** Runs a held operation as its original caller, skipping the gate (Core.runHeld). */
export type HeldRunner = (op: Operation, caller: Caller, input: unknown) => Promise<unknown>;

let operationsByName: Map<string, Operation> | undefined;
function operationNamed(name: string): Operation | undefined {
  // From the registered table: the table's own module imports the approvals operations, which import this one.
  operationsByName ??= new Map(operationTable().map((o) => [o.name, o]));
  return operationsByName.get(name);
}

const changedArgs = (shown: string) =>
  new BerthError('conflict', {
    message: `The arguments you approved (hash ${shown.slice(0, 12)}) are not the ones this call holds: nothing ran. Open the approval again and check what it would run.`,
  });

/**
 * A person's decision. Approve: the one conditional UPDATE out of 'pending' (and unexpired, and
 * still holding the arguments the person was shown) that any instance may race for; the winner
 * runs the call, the others get 409, so a replayed approve never runs it twice. The caller that
 * asked is re-checked now (a revoked token's call fails and never runs) and the stored input is
 * hashed again: input that no longer matches the hash held with it never runs. Deny: the same claim.
 */
export async function decide(deps: { db: Db; config: Config }, runHeld: HeldRunner, who: Decider, uuid: string, decision: 'approve' | 'deny'): Promise<ApprovalView> {
  const { db, config } = deps;
  const existing = await db.selectFrom('approvals').selectAll().where('uuid', '=', uuid).where('team_id', '=', who.teamId).executeTakeFirst();
  if (!existing) throw notFound();
  const shown = decision === 'approve' ? who.argsHash : undefined;
  if (decision === 'approve') {
    const role = await roleIn(db, who.teamId, who.userId);
    if (!role || !APPROVER_ROLES.has(role)) throw new BerthError('approval_not_allowed');
    if (shown !== undefined && shown !== existing.args_hash) throw changedArgs(shown);
  }
  const now = new Date().toISOString();
  let claim = db
    .updateTable('approvals')
    .set({ status: decision === 'approve' ? 'running' : 'denied', decided_by_user_id: who.userId, decided_via: who.via, decided_at: now })
    .where('id', '=', existing.id)
    .where('status', '=', 'pending')
    .where('expires_at', '>', now);
  if (shown !== undefined) claim = claim.where('args_hash', '=', shown);
  const claimed = await claim.returningAll().executeTakeFirst();
  if (!claimed) {
    // Read again: another instance may have decided it since (the usual loser of a race).
    const latest = (await db.selectFrom('approvals').selectAll().where('id', '=', existing.id).executeTakeFirst()) ?? existing;
    const state = effectiveStatus(latest);
    if (state === 'pending' && shown !== undefined) throw changedArgs(shown);
    if (state === 'expired') await expireDue(db, who.teamId);
    throw new BerthError('conflict', { message: `This approval is ${state === 'running' ? 'already approved' : state}; it can be decided only once, while pending.` });
  }
  if (decision === 'deny') return approvalView(config, claimed);

  const finish = async (set: { status: ApprovalStatus; result?: string | null; error?: string | null }) => {
    const row = await db.updateTable('approvals').set(set).where('id', '=', claimed.id).returningAll().executeTakeFirstOrThrow();
    return approvalView(config, row);
  };
  if (claimed.args_hash === null || approvalArgsHash(claimed.input) !== claimed.args_hash) {
    return finish({ status: 'failed', error: JSON.stringify({ kind: 'conflict', message: 'The stored arguments no longer match the hash they were held with: the call did not run.' }) });
  }
  const op = operationNamed(claimed.operation);
  const caller = await askingCaller(db, claimed, who.via);
  if (!op || !caller) {
    return finish({ status: 'failed', error: JSON.stringify({ kind: 'invalid_token', message: 'The token that asked was revoked, expired or left the team: the call did not run.' }) });
  }
  try {
    const output = await runHeld(op, caller, JSON.parse(claimed.input));
    // Kept for whoever reads the approval (read tokens too): sensitive fields never stored.
    return finish({ status: 'succeeded', result: JSON.stringify((hasSensitive(op.output) ? redact(op.output, output) : output) ?? null) });
  } catch (err) {
    const e = unexpected(err);
    return finish({ status: 'failed', error: JSON.stringify({ kind: e.kind, message: e.message }) });
  }
}
