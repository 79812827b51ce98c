import type { Generated } from 'kysely';

/** Where a call came in. */
export type AuditDoor = 'rest' | 'mcp-stdio' | 'mcp-http' | 'cli' | 'console' | 'job';

/** The audit log (migration 030): append-only, one row per changing call. */
export interface AuditLogTable {
  id: Generated<number>;
  uuid: string;
  at: string;
  team_id: number;
  user_id: number | null;
  token_id: number | null;
  oauth_client_id: string | null;
  source_ip: string | null;
  door: AuditDoor;
  operation: string;
  /** JSON array of uuids. */
  targets: string;
  /** JSON object, secrets replaced; null when refused before the input was read. */
  arguments: string | null;
  /** 'ok', 'forbidden', or the error kind. */
  result: string;
  status: number;
  duration_ms: number;
  started_uuid: string | null;
}
