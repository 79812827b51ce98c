/** oidc-provider's records (migration 024): one row per model and hashed id. */
export interface OAuthStoreTable {
  model: string;
  /** Hex SHA-256 of the record's id (for tokens and codes, the id is the secret itself). */
  id_hash: string;
  /** The record as oidc-provider gave it, JSON. */
  payload: string;
  grant_id: string | null;
  uid: string | null;
  user_code: string | null;
  /** Milliseconds since the epoch. */
  expires_at: number | null;
  consumed_at: number | null;
}
