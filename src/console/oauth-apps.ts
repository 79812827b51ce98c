import { hash } from 'node:crypto';
import { approvalsFor, revokeApproval } from '../auth/oauth/approvals.js';
import type { Db } from '../store/db.js';
import type { AppGrant, ConnectedApps } from './apps.js';

/** Where a client sends people back: its first registered redirect URI's host (or its metadata URL's). */
async function redirectHostOf(db: Db, clientId: string): Promise<string> {
  const row = await db.selectFrom('oauth_store').select('payload').where('model', '=', 'Client').where('id_hash', '=', hash('sha256', clientId, 'hex')).executeTakeFirst();
  const uri = row ? (JSON.parse(row.payload) as { redirect_uris?: string[] }).redirect_uris?.[0] : clientId;
  try {
    return new URL(uri ?? '').host;
  } catch {
    return '';
  }
}

/** The console's connected apps, filled by the authorization server's approvals (api_tokens rows bound to grants). */
export const OAUTH_CONNECTED_APPS: ConnectedApps = {
  async list(db, userId): Promise<AppGrant[]> {
    const approvals = await approvalsFor(db, userId);
    return Promise.all(
      approvals.map(async (a) => ({
        id: String(a.id),
        clientName: a.client_name,
        redirectHost: await redirectHostOf(db, a.client_id),
        teamName: a.team_name,
        permissions: a.permissions,
        createdAt: a.created_at,
        lastUsedAt: a.last_used_at,
      })),
    );
  },
  revoke: (db, userId, id) => revokeApproval(db, userId, /^[1-9][0-9]{0,15}$/.test(id) ? Number(id) : NaN),
};
