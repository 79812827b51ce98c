import { atomically } from '../../store/atomic.js';
import type { Db } from '../../store/db.js';
import { forgetGrant } from './adapter.js';

/** A person's approval of an OAuth client ("connected app"), as the console lists it. */
export interface Approval {
  id: number;
  client_name: string;
  client_id: string;
  team_id: number;
  team_name: string;
  user_id: number;
  permissions: string[];
  created_at: string;
  expires_at: string | null;
  last_used_at: string | null;
}

/**
 * The approvals a person may see and revoke: their own in every team, and every member's in the
 * teams they own or administer (as they may remove those members).
 */
export async function approvalsFor(db: Db, userId: number): Promise<Approval[]> {
  const rows = await db
    .selectFrom('api_tokens as t')
    .innerJoin('teams as team', 'team.id', 't.team_id')
    .leftJoin('team_members as me', (j) => j.onRef('me.team_id', '=', 't.team_id').on('me.user_id', '=', userId))
    .select(['t.id', 't.name', 't.oauth_client_id', 't.team_id', 'team.name as team_name', 't.user_id', 't.permissions', 't.created_at', 't.expires_at', 't.last_used_at'])
    .where('t.oauth_grant_id', 'is not', null)
    .where((eb) => eb.or([eb('t.user_id', '=', userId), eb('me.role', 'in', ['owner', 'admin'])]))
    .orderBy('t.id')
    .execute();
  return rows.map((r) => ({
    id: r.id,
    client_name: r.name,
    client_id: r.oauth_client_id ?? '',
    team_id: r.team_id,
    team_name: r.team_name,
    user_id: r.user_id,
    permissions: JSON.parse(r.permissions) as string[],
    created_at: r.created_at,
    expires_at: r.expires_at,
    last_used_at: r.last_used_at,
  }));
}

/**
 * Revokes an approval the person may revoke (approvalsFor's rule): its grant, codes and tokens
 * go with it, so the client is refused at its next request on every instance. false when there
 * is no such approval for this person (the same answer whether it exists or not).
 */
export async function revokeApproval(db: Db, userId: number, id: number): Promise<boolean> {
  if (!Number.isSafeInteger(id) || id <= 0) return false;
  return atomically(db, async (trx) => {
    const row = await trx
      .selectFrom('api_tokens as t')
      .leftJoin('team_members as me', (j) => j.onRef('me.team_id', '=', 't.team_id').on('me.user_id', '=', userId))
      .select(['t.oauth_grant_id', 't.user_id', 'me.role'])
      .where('t.id', '=', id)
      .where('t.oauth_grant_id', 'is not', null)
      .executeTakeFirst();
    if (!row?.oauth_grant_id || (row.user_id !== userId && row.role !== 'owner' && row.role !== 'admin')) return false;
    await forgetGrant(trx, row.oauth_grant_id);
    return true;
  });
}
