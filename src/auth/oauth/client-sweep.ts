import { atomically } from '../../store/atomic.js';
import type { Db } from '../../store/db.js';
import { forgetGrant, idHash, noteClientUse } from './adapter.js';

const DAY_MS = 86_400_000;

// Client ID Metadata Document clients are named by their URL and never stored: nothing to expire.
const stored = (clientId: string): boolean => !clientId.includes('://');

export interface ClientSweep {
  /** oauth_store rows past their expiry (clients, and codes, tokens, sessions…). */
  expired: number;
  /** Approvals (api_tokens rows) of clients that are gone. */
  approvals: number;
}

/**
 * Dynamic registration is open to anyone, so registrations must not pile up: a client that never
 * completed an authorization expires 24 h after registering, one not used for `idleDays` then
 * (the adapter's upsert and noteClientUse keep its expiry). This removes what has expired, after counting
 * an approval's recent use at /mcp as the client's (a long-lived access token needs no token
 * endpoint), and forgets the approvals of removed clients: their grants cannot be refreshed any
 * more, and the console should not list them. Idempotent; any instance may run it.
 */
export async function sweepOAuthClients(db: Db, idleDays: number, now = Date.now()): Promise<ClientSweep> {
  // Registrations from before clients expired: one idle period from the first sweep.
  await db
    .updateTable('oauth_store')
    .set({ expires_at: now + idleDays * DAY_MS })
    .where('model', '=', 'Client')
    .where('expires_at', 'is', null)
    .execute();
  const used = await db
    .selectFrom('api_tokens')
    .select('oauth_client_id')
    .distinct()
    .where('oauth_client_id', 'is not', null)
    .where('last_used_at', '>=', new Date(now - idleDays * DAY_MS).toISOString())
    .execute();
  for (const u of used) if (u.oauth_client_id && stored(u.oauth_client_id)) await noteClientUse(db, u.oauth_client_id, idleDays, now);
  const gone = await db.deleteFrom('oauth_store').where('expires_at', '<=', now).executeTakeFirst();

  const approvals = await db.selectFrom('api_tokens').select(['oauth_grant_id', 'oauth_client_id']).where('oauth_grant_id', 'is not', null).execute();
  const clientIds = [...new Set(approvals.map((a) => a.oauth_client_id).filter((c): c is string => !!c && stored(c)))];
  const present = new Set<string>();
  for (let i = 0; i < clientIds.length; i += 500) {
    const hashes = clientIds.slice(i, i + 500).map(idHash);
    for (const r of await db.selectFrom('oauth_store').select('id_hash').where('model', '=', 'Client').where('id_hash', 'in', hashes).execute()) present.add(r.id_hash);
  }
  let forgotten = 0;
  for (const a of approvals) {
    if (!a.oauth_grant_id || !a.oauth_client_id || !stored(a.oauth_client_id) || present.has(idHash(a.oauth_client_id))) continue;
    await atomically(db, (trx) => forgetGrant(trx, a.oauth_grant_id!));
    forgotten++;
  }
  return { expired: Number(gone.numDeletedRows), approvals: forgotten };
}
