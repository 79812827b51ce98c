import './quiet-runtime-notice.js';
import { hash } from 'node:crypto';
import type { Adapter, AdapterPayload } from 'oidc-provider';
import { atomically } from '../../store/atomic.js';
import type { Db } from '../../store/db.js';

/** How a record is keyed: the SHA-256 of its id (for codes and tokens the id is the secret). */
export const idHash = (id: string): string => hash('sha256', id, 'hex');

/** A registration that has not completed an authorization (no code issued) is removed after this long. */
export const UNUSED_REGISTRATION_S = 24 * 3600;

const DAY_MS = 86_400_000;
/** A client's expiry is pushed on at most this often (a refresh every few minutes need not write). */
const NOTE_EVERY_MS = 3_600_000;

/**
 * A client got a code or a token (or its token was used): its registration lives `idleDays` from
 * now. Expired rows are already unknown to every read, so a removed client is never brought back;
 * rows written before clients expired (null) are the sweep's (client-sweep.ts).
 */
export async function noteClientUse(db: Db, clientId: string, idleDays: number, now = Date.now()): Promise<void> {
  const until = now + idleDays * DAY_MS;
  await db
    .updateTable('oauth_store')
    .set({ expires_at: until })
    .where('model', '=', 'Client')
    .where('id_hash', '=', idHash(clientId))
    .where('expires_at', '>', now)
    .where('expires_at', '<', until - NOTE_EVERY_MS)
    .execute();
}

/** Expired rows are swept at most this often per process (reads already ignore them). */
const SWEEP_EVERY_MS = 60_000;
let lastSweep = 0;

/**
 * oidc-provider's storage in berth's store (migration 024), so every instance answers every step
 * of a flow. Only the SHA-256 of a record's id is kept: for codes and tokens the id is the
 * secret, so a copy of the store holds no usable token. Destroying a Grant also deletes the
 * person's approval (the api_tokens row bound to it), so a grant revoked by the protocol (token
 * revocation, a replayed refresh token or code) disappears from `berth token list` too.
 * A registered client expires (client-sweep.ts): 24 h after registering, pushed to `clientIdleDays`
 * after each code or token issued to it.
 */
export class StoreAdapter implements Adapter {
  constructor(
    private readonly db: Db,
    private readonly model: string,
    private readonly clientIdleDays: number,
  ) {}

  async upsert(id: string, payload: AdapterPayload, expiresIn: number): Promise<void> {
    const now = Date.now();
    // oidc-provider gives registrations no lifetime; berth's is until the first authorization.
    if (this.model === 'Client' && !expiresIn) expiresIn = UNUSED_REGISTRATION_S;
    const row = {
      payload: JSON.stringify(payload),
      grant_id: payload.grantId ?? null,
      uid: payload.uid ?? null,
      user_code: payload.userCode ?? null,
      expires_at: expiresIn ? now + expiresIn * 1000 : null,
    };
    await this.db
      .insertInto('oauth_store')
      .values({ model: this.model, id_hash: idHash(id), consumed_at: null, ...row })
      .onConflict((oc) => oc.columns(['model', 'id_hash']).doUpdateSet(row))
      .execute();
    // A code is a completed authorization; a token, a client in use.
    if ((this.model === 'AuthorizationCode' || this.model === 'AccessToken') && payload.clientId) await noteClientUse(this.db, payload.clientId, this.clientIdleDays, now);
    if (now - lastSweep > SWEEP_EVERY_MS) {
      lastSweep = now;
      await this.db.deleteFrom('oauth_store').where('expires_at', '<', now).execute();
    }
  }

  private async one(column: 'id_hash' | 'uid' | 'user_code', value: string): Promise<AdapterPayload | undefined> {
    const row = await this.db.selectFrom('oauth_store').select(['payload', 'expires_at', 'consumed_at']).where('model', '=', this.model).where(column, '=', value).executeTakeFirst();
    if (!row || (row.expires_at !== null && Number(row.expires_at) <= Date.now())) return undefined;
    const payload = JSON.parse(row.payload) as AdapterPayload;
    return row.consumed_at === null ? payload : { ...payload, consumed: Math.floor(Number(row.consumed_at) / 1000) };
  }

  find(id: string): Promise<AdapterPayload | undefined> {
    return this.one('id_hash', idHash(id));
  }

  findByUid(uid: string): Promise<AdapterPayload | undefined> {
    return this.one('uid', uid);
  }

  findByUserCode(userCode: string): Promise<AdapterPayload | undefined> {
    return this.one('user_code', userCode);
  }

  async consume(id: string): Promise<void> {
    await this.db.updateTable('oauth_store').set({ consumed_at: Date.now() }).where('model', '=', this.model).where('id_hash', '=', idHash(id)).execute();
  }

  async destroy(id: string): Promise<void> {
    if (this.model === 'Grant') return atomically(this.db, (trx) => forgetGrant(trx, id));
    await this.db.deleteFrom('oauth_store').where('model', '=', this.model).where('id_hash', '=', idHash(id)).execute();
  }

  async revokeByGrantId(grantId: string): Promise<void> {
    await this.db.deleteFrom('oauth_store').where('model', '=', this.model).where('grant_id', '=', grantId).execute();
  }
}

/**
 * A grant gone, whoever ended it (the protocol, `berth token revoke`, the console): the grant,
 * every code and token issued under it, and the person's approval row. Run inside the caller's
 * transaction when there is one.
 */
export async function forgetGrant(db: Db, grantId: string): Promise<void> {
  await db.deleteFrom('oauth_store').where('model', '=', 'Grant').where('id_hash', '=', idHash(grantId)).execute();
  await db.deleteFrom('oauth_store').where('grant_id', '=', grantId).execute();
  await db.deleteFrom('api_tokens').where('oauth_grant_id', '=', grantId).execute();
}
