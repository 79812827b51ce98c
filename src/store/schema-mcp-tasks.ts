import type { Generated } from 'kysely';

export type McpTaskStatus = 'working' | 'input_required' | 'completed' | 'failed' | 'cancelled';

/** MCP tasks (migration 035). Times ISO-8601 UTC; lease_until in ms since the epoch. */
export interface McpTasksTable {
  id: Generated<number>;
  /** The id the client sees (random; never the row id). */
  task_id: string;
  team_id: number;
  /** The token that made it: the only one that sees it. */
  token_id: number;
  tool: string;
  status: McpTaskStatus;
  status_message: string | null;
  /** JSON CallToolResult, when completed. */
  result: string | null;
  /** JSON { code, message, data? }, when failed. */
  error: string | null;
  /** The deployment or migration the call queued, cancelled with the task. */
  job_kind: 'deployment' | 'migration' | null;
  job_uuid: string | null;
  ttl_ms: number;
  lease_owner: string | null;
  lease_until: number | null;
  created_at: string;
  updated_at: string;
  expires_at: string;
}
