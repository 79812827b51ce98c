import type { Generated, Insertable, Selectable } from 'kysely';

/** Timestamps are ISO-8601 UTC strings: portable between SQLite and PostgreSQL text columns. */
export interface SettingsTable {
  key: string;
  value: string;
}

export interface UsersTable {
  id: Generated<number>;
  email: string;
  name: string;
  created_at: string;
  updated_at: string;
}

export interface TeamsTable {
  id: Generated<number>;
  name: string;
  description: string | null;
  personal_team: number;
  created_at: string;
  updated_at: string;
}

export interface TeamMembersTable {
  team_id: number;
  user_id: number;
  role: 'owner' | 'admin' | 'member';
  created_at: string;
}

export interface ApiTokensTable {
  id: Generated<number>;
  name: string;
  user_id: number;
  team_id: number;
  /** Hex SHA-256 of the secret part; the secret itself is never stored. */
  token_hash: string;
  /** JSON array of permission names. */
  permissions: string;
  expires_at: string | null;
  last_used_at: string | null;
  created_at: string;
}

export interface OutboxTable {
  id: Generated<number>;
  /** What the message is about, unique per subject so it is queued once: "token-expiry:<id>". */
  dedupe_key: string;
  recipient: string;
  subject: string;
  body: string;
  /** pending → sending → sent; "kept" when no SMTP is configured; "unknown" when a send was cut off. */
  status: 'pending' | 'sending' | 'sent' | 'kept' | 'unknown';
  attempts: number;
  last_error: string | null;
  created_at: string;
  sent_at: string | null;
}

export interface FeedbackTable {
  id: Generated<number>;
  content: string;
  user_id: number | null;
  team_id: number | null;
  source_ip: string;
  forwarded_at: string | null;
  created_at: string;
}

export interface Database {
  settings: SettingsTable;
  users: UsersTable;
  teams: TeamsTable;
  team_members: TeamMembersTable;
  api_tokens: ApiTokensTable;
  outbox: OutboxTable;
  feedback: FeedbackTable;
}

export type UserRow = Selectable<UsersTable>;
export type TeamRow = Selectable<TeamsTable>;
export type ApiTokenRow = Selectable<ApiTokensTable>;
export type NewApiToken = Insertable<ApiTokensTable>;
export type OutboxRow = Selectable<OutboxTable>;
