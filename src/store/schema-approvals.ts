import type { Generated } from 'kysely';

/** Approvals (migrations 030, 033). Times ISO-8601 UTC. */
export interface ApprovalPoliciesTable {
  team_id: number;
  /** JSON array of operation names and classes. */
  rules: string;
  expires_in_seconds: number;
  updated_at: string;
}

export type ApprovalStatus = 'pending' | 'running' | 'succeeded' | 'failed' | 'denied' | 'expired';

export interface ApprovalsTable {
  id: Generated<number>;
  uuid: string;
  team_id: number;
  token_id: number;
  user_id: number;
  oauth_client_id: string | null;
  operation: string;
  /** The rule of the policy that held the call (an operation name or a class). */
  rule: string;
  /** The uuid (or id) the call names, when it names one. */
  target: string | null;
  /** JSON: the validated input, whole; never shown. */
  input: string;
  /** JSON: the input with secret-looking fields replaced, what approvers and agents see. */
  shown_input: string;
  /** SHA-256 of the input's canonical JSON (approval-args-hash.ts, migration 033); null: never runs. */
  args_hash: string | null;
  permissions: string;
  source_ip: string;
  status: ApprovalStatus;
  decided_by_user_id: number | null;
  /** console or cli (mcp_elicitation on rows decided before issue 39: a client's answer no longer approves). */
  decided_via: string | null;
  decided_at: string | null;
  /** JSON: the operation's (redacted) output, once it ran. */
  result: string | null;
  /** JSON { kind, message } when it failed. */
  error: string | null;
  created_at: string;
  expires_at: string;
}
