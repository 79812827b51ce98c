import type { Permission } from '../auth/permissions.js';
import type { RateDecision } from '../limits/buckets.js';
import type { AuditDoor } from '../store/schema-audit.js';

/** Who is calling: the only way into the core. Built by authentication, never by a door. */
export interface Caller {
  userId: number;
  teamId: number;
  tokenId: number;
  permissions: ReadonlySet<Permission>;
  /** The token belongs to the instance's root team. */
  rootTeam: boolean;
  sourceIp: string;
  /** Where the call came in, for the audit log. */
  door: AuditDoor;
  /** Authenticated by an OAuth access token (its scopes already narrowed permissions). */
  oauth?: { clientId: string };
  /**
   * A person acting in the console or the CLI, not an agent (tokenId is 0): the approval policy
   * holds only agents' calls (docs/decisions/audit-and-approvals.md, "Approvals").
   */
  person?: 'console' | 'cli';
}

/** What a door knows about a request before authentication. */
export interface RequestAccess {
  authorization: string | undefined;
  sourceIp: string;
  /** The MCP door (either transport), which the MCP toggle can close on its own. */
  mcp?: boolean;
  /** Where the request came in (audit log); unset: 'mcp-http' when mcp, else 'rest'. */
  door?: AuditDoor;
  /**
   * The door accepts OAuth access tokens bound to this resource (RFC 8707): set by /mcp only;
   * other doors take API tokens alone.
   */
  oauthResource?: string;
  /** Set by the core when it charges (or reads) the request's rate-limit bucket, for headers. */
  rate?: RateDecision;
}
