/** The console's sign-in tables (migration 023). Hashes are hex SHA-256; times ISO-8601 UTC. */
export interface ConsoleSessionsTable {
  id_hash: string;
  user_id: number;
  /** Sent back in every form of the session and compared in constant time. */
  csrf_token: string;
  created_at: string;
  expires_at: string;
}

export interface LoginLinksTable {
  token_hash: string;
  user_id: number;
  created_at: string;
  expires_at: string;
}

export interface PasskeysTable {
  credential_id: string;
  user_id: number;
  name: string;
  /** The COSE public key, base64url. */
  public_key: string;
  counter: number;
  /** JSON array of the authenticator's transports. */
  transports: string;
  created_at: string;
  last_used_at: string | null;
}

export interface WebauthnChallengesTable {
  id_hash: string;
  /** approve: a person's passkey check at approving a held call (issue 39). */
  purpose: 'register' | 'authenticate' | 'approve';
  user_id: number | null;
  challenge: string;
  expires_at: string;
}
