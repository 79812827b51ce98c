import { approvalsFor, revokeApproval } from '../auth/oauth/approvals.js';
import type { Db } from '../store/db.js';

/** One app a person let act for them (an OAuth grant), as the console lists it. */
export interface AppGrant {
  id: string;
  clientName: string;
  /** The client's id (a Client ID Metadata Document's URL, or a registered id): two clients with one name differ here. */
  clientId: string;
  teamName: string;
  /** Who approved it (the person, or a member of a team they own or administer). */
  approvedBy: string;
  permissions: string[];
  createdAt: string;
  lastUsedAt: string | null;
}

/**
 * The hook the OAuth authorization server fills: list a person's grants and revoke one (the
 * client is refused at its next request). Until it is mounted, nobody has connected apps.
 */
export interface ConnectedApps {
  list(db: Db, userId: number): Promise<AppGrant[]>;
  /** false when the grant is not this person's (or does not exist): the page answers 404. */
  revoke(db: Db, userId: number, grantId: string): Promise<boolean>;
}

export const NO_CONNECTED_APPS: ConnectedApps = {
  list: async () => [],
  revoke: async () => false,
};

/**
 * The authorization server's approvals (src/auth/oauth/approvals.ts): a person's own in every
 * team, and their members' in teams they own or administer; revoking one stops the client.
 */
export const oauthConnectedApps: ConnectedApps = {
  async list(db, userId) {
    const approvals = await approvalsFor(db, userId);
    const ids = [...new Set(approvals.map((a) => a.user_id))];
    const emails = new Map(ids.length ? (await db.selectFrom('users').select(['id', 'email']).where('id', 'in', ids).execute()).map((u) => [u.id, u.email]) : []);
    return approvals.map((a) => ({
      id: String(a.id),
      clientName: a.client_name,
      clientId: a.client_id,
      teamName: a.team_name,
      approvedBy: a.user_id === userId ? 'you' : (emails.get(a.user_id) ?? 'a member'),
      permissions: a.permissions,
      createdAt: a.created_at,
      lastUsedAt: a.last_used_at,
    }));
  },
  revoke: (db, userId, grantId) => revokeApproval(db, userId, /^[1-9][0-9]{0,15}$/.test(grantId) ? Number(grantId) : NaN),
};
