/**
 * The one error catalogue. Every door (REST, MCP) turns a BerthError into its wire form from
 * here; no route or tool picks a status code itself.
 */
export type ValidationErrors = Record<string, string[]>;

interface ErrorSpec {
  status: number;
  message: string;
  headers?: Record<string, string>;
}

export const errorCatalogue = {
  unauthenticated: { status: 401, message: 'Unauthenticated.', headers: { 'WWW-Authenticate': 'Bearer' } },
  invalid_token: {
    status: 401,
    message: 'Invalid token.',
    headers: { 'WWW-Authenticate': 'Bearer error="invalid_token"' },
  },
  /** A request the resource's state refuses as Coolify does with 400 (deleting a project or environment that still has resources). */
  bad_request: { status: 400, message: 'Bad request.' },
  /** An agent's call the team's approval policy holds for a person: nothing ran yet (details.approval says where to approve). */
  approval_pending: { status: 202, message: "This call waits for a person's approval; it has not run." },
  /** Approving needs a person (console or CLI) with the owner or admin role, never a token. */
  approval_not_allowed: { status: 403, message: 'Approvals are granted by a team owner or admin in the console or with `berth approvals approve`, never by a token.' },
  api_disabled: { status: 403, message: 'API is disabled.' },
  mcp_disabled: { status: 403, message: 'MCP server is disabled.' },
  ip_not_allowed: { status: 403, message: 'You are not allowed to access the API.' },
  missing_permissions: { status: 403, message: 'Missing required permissions.' },
  origin_not_allowed: { status: 403, message: 'Origin not allowed.' },
  host_not_allowed: { status: 403, message: 'Host not allowed.' },
  /** The console: a form without this session's CSRF token (or from another site). */
  csrf_failed: { status: 403, message: 'This form is out of date or came from another site; reload the page and try again.' },
  /** The console: a page a person's role in that team does not open (members of a team they only belong to). */
  role_not_allowed: { status: 403, message: 'Your role in this team does not allow this.' },
  root_team_only: { status: 403, message: "Only a token of the instance's root team may do this." },
  not_found: { status: 404, message: 'Resource not found.' },
  route_not_found: { status: 404, message: 'Not found.' },
  method_not_allowed: { status: 405, message: 'Method not allowed.' },
  /** GET on a route Coolify moved to POST (deploy, start/stop/restart, enable/disable, server validate): Coolify's own words. */
  post_required: { status: 405, message: 'This endpoint has changed to a POST request.', headers: { Allow: 'POST' } },
  conflict: { status: 409, message: 'Conflict.' },
  validation: { status: 422, message: 'Validation error.' },
  rate_limited: { status: 429, message: 'Too many requests.' },
  queue_full: { status: 429, message: 'Deployment queue is full.' },
  internal: { status: 500, message: 'Internal server error.' },
  /** A documented operation that needs a third party's network berth does not call (GitHub's API, a cloud provider's); the message names it. */
  needs_provider: { status: 501, message: 'This needs a provider berth does not reach.' },
  /** A third party's API (a cloud provider's) berth called did not answer, or refused: the message names it and what it said. */
  provider_failed: { status: 502, message: "The provider's API did not answer as expected." },
  store_unavailable: { status: 503, message: 'The store is unavailable; try again shortly.', headers: { 'Retry-After': '5' } },
} as const satisfies Record<string, ErrorSpec>;

export type ErrorKind = keyof typeof errorCatalogue;

export interface ErrorDetails {
  missingPermissions?: string[];
  /** What the token holds, beside missingPermissions (the MCP door shows it; REST keeps Coolify's body). */
  heldPermissions?: string[];
  /** The refusal is read-only mode's (X-Berth-Read-Only, --read-only), not the token's. */
  readOnlySession?: boolean;
  errors?: ValidationErrors;
  allow?: string[];
  /** Seconds until a retry may succeed (429s). */
  retryAfter?: number;
  /** Unix seconds when another request may be made (rate limit 429). */
  resetAt?: number;
  /** The bucket state behind a rate-limit answer, for its headers. */
  rate?: { limit: number; remaining: number };
  /** Overrides the catalogue's message where the kind allows a specific one (conflict, bad_request). */
  message?: string;
  /**
   * The door is an OAuth protected resource (/mcp): its metadata URL (RFC 9728) goes into the
   * 401's and 403's WWW-Authenticate, so MCP clients can discover how to get a token.
   */
  resourceMetadata?: string;
  /** A 403 for an OAuth token whose scopes lack the permission: answered as insufficient_scope. */
  insufficientScope?: boolean;
  /** The pending approval of an approval_pending answer (its public view). */
  approval?: Record<string, unknown> & { uuid: string };
}

export class BerthError extends Error {
  readonly kind: ErrorKind;
  readonly details: ErrorDetails;

  constructor(kind: ErrorKind, details: ErrorDetails = {}) {
    super(details.message ?? errorCatalogue[kind].message);
    this.name = 'BerthError';
    this.kind = kind;
    this.details = details;
  }
}

export const notFound = () => new BerthError('not_found');
export const validationError = (errors: ValidationErrors) => new BerthError('validation', { errors });

export interface WireError {
  status: number;
  headers: Record<string, string>;
  body: Record<string, unknown>;
}

/** The contract's status, headers and body for an error, the same bytes for every door. */
export function toWire(err: BerthError): WireError {
  const spec: ErrorSpec = errorCatalogue[err.kind];
  const headers: Record<string, string> = { ...(spec.headers ?? {}) };
  const body: Record<string, unknown> = { message: err.message };
  const d = err.details;
  if (err.kind === 'missing_permissions') {
    const missing = d.missingPermissions ?? [];
    body.message = `Missing required permissions: ${missing.join(', ')}`;
    body.missing_permissions = missing;
  }
  if (err.kind === 'validation') body.errors = d.errors ?? {};
  if (d.approval) {
    body.approval = d.approval;
    headers.Location = `/api/v1/approvals/${d.approval.uuid}`;
  }
  if (d.resourceMetadata !== undefined) headers['WWW-Authenticate'] = bearerChallenge(err, d.resourceMetadata);
  if (d.allow) headers.Allow = d.allow.join(', ');
  if (d.retryAfter !== undefined) {
    const seconds = Math.max(1, Math.ceil(d.retryAfter));
    headers['Retry-After'] = String(seconds);
    if (err.kind === 'rate_limited') {
      headers['X-RateLimit-Reset'] = String(d.resetAt ?? Math.ceil(Date.now() / 1000) + seconds);
    }
  }
  return { status: spec.status, headers, body };
}

/** RFC 6750 / RFC 9728 challenge of an OAuth protected resource (the MCP authorization spec). */
function bearerChallenge(err: BerthError, resourceMetadata: string): string {
  const parts: string[] = [];
  if (err.kind === 'invalid_token') parts.push('error="invalid_token"');
  if (err.kind === 'missing_permissions' && err.details.insufficientScope) {
    parts.push('error="insufficient_scope"', `scope="${(err.details.missingPermissions ?? []).join(' ')}"`);
  }
  parts.push(`resource_metadata="${resourceMetadata}"`);
  return `Bearer ${parts.join(', ')}`;
}

/**
 * The error an answer of another berth or Coolify stands for (remote mode), read back from its
 * status and message, so an agent gets the same hint whichever door answered.
 */
export function fromWire(status: number, body: Record<string, unknown>): BerthError | undefined {
  const message = typeof body.message === 'string' ? body.message : '';
  const kinds = (Object.keys(errorCatalogue) as ErrorKind[]).filter((k) => errorCatalogue[k].status === status);
  const kind =
    kinds.find((k) => errorCatalogue[k].message === message) ??
    (status === 403 && message.startsWith('Missing required permissions') ? 'missing_permissions' : undefined) ??
    ({ 401: 'invalid_token', 404: 'not_found', 422: 'validation', 429: 'rate_limited' } as Partial<Record<number, ErrorKind>>)[status];
  if (!kind) return undefined;
  const missing = Array.isArray(body.missing_permissions) ? body.missing_permissions.map(String) : undefined;
  const retryAfter = typeof body.retry_after === 'number' ? body.retry_after : undefined;
  return new BerthError(kind, { ...(missing ? { missingPermissions: missing } : {}), ...(retryAfter !== undefined ? { retryAfter } : {}) });
}

/** Connection-level failures of the store (PostgreSQL, a locked SQLite file) or of Redis: not the request's fault. */
const STORE_DOWN_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EHOSTUNREACH',
  'SQLITE_BUSY',
  '57P01',
  '57P02',
  '57P03',
  '08000',
  '08001',
  '08003',
  '08004',
  '08006',
  '53300',
]);

/**
 * An unexpected error as the door should answer it: 503 when the store cannot be reached (the
 * request may be repeated once it is back; a transaction that failed wrote nothing), else 500.
 */
export function unexpected(err: unknown): BerthError {
  if (err instanceof BerthError) return err;
  const e = err as { code?: unknown; message?: unknown } | null;
  const message = typeof e?.message === 'string' ? e.message : '';
  if (
    (typeof e?.code === 'string' && STORE_DOWN_CODES.has(e.code)) ||
    /^Connection terminated|timeout exceeded when trying to connect|Cannot reach the PostgreSQL store|^Connection is closed|max retries per request|Query read timeout|not queryable|Stream isn't writeable|enableOfflineQueue/.test(
      message,
    )
  ) {
    return new BerthError('store_unavailable');
  }
  return fromConstraint(err) ?? new BerthError('internal');
}

/** The store refused a row whose parent is gone, or the delete of a parent still referenced. */
export const isForeignKeyViolation = (err: unknown): boolean => ['23503', 'SQLITE_CONSTRAINT_FOREIGNKEY'].includes(String((err as { code?: unknown } | null)?.code));

/** What a unique row is, per table, in the words its own check uses (the race's loser answers the same). */
const UNIQUE_MESSAGES: Record<string, string> = {
  environments: 'Environment with this name already exists.',
  tags: 'Tag with this name already exists.',
  environment_variables: 'Environment variable already exists. Use PATCH request to update it.',
  shared_environment_variables: 'Environment variable already exists. Use PATCH request to update it.',
  destinations: 'A destination with this network already exists on the server.',
  application_destinations: 'Destination is already attached.',
};

/**
 * A constraint the store enforced, as the contract answers it, for both dialects in one place:
 * a row whose parent vanished under the request (foreign key) is 404, a duplicate (unique) is
 * 409, and a serialization failure or deadlock that outlived its retries (store/atomic.ts) is a
 * 409 to retry. Checks inside the operations answer these first; this is what a race leaves.
 */
export function fromConstraint(err: unknown): BerthError | undefined {
  const e = err as { code?: unknown; message?: unknown; table?: unknown } | null;
  const code = String(e?.code ?? '');
  const message = typeof e?.message === 'string' ? e.message : '';
  if (isForeignKeyViolation(err)) return new BerthError('not_found');
  if (code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY') {
    // PostgreSQL names the table; SQLite says "UNIQUE constraint failed: table.column, ...".
    const table = typeof e?.table === 'string' ? e.table : (/constraint failed: (\w+)\./.exec(message)?.[1] ?? '');
    return new BerthError('conflict', { message: UNIQUE_MESSAGES[table] ?? 'Conflict.' });
  }
  if (code === '40001' || code === '40P01') return new BerthError('conflict', { message: 'Another request changed this at the same moment; try again.' });
  return undefined;
}

/** What the failing call was about, for a hint that names it. */
export interface HintContext {
  /** "application", "server", ... */
  thing?: string;
  /** The tool that lists the uuids of that kind. */
  listTool?: string;
}

/**
 * What to do next, for an agent. Declared here beside each kind's status and message; the MCP
 * door adds it to its error results, REST bodies stay Coolify's. A hint depends only on the
 * call, never on what exists, so "missing" and "another team's" still read the same.
 */
export function agentHint(err: BerthError, ctx: HintContext = {}): string | undefined {
  const d = err.details;
  switch (err.kind) {
    case 'not_found':
      return `An id in this call matches nothing visible to this token's team. ${ctx.listTool ?? 'list_resources'} lists the ${ctx.thing ?? 'resource'}s it can see.`;
    case 'missing_permissions':
      if (d.readOnlySession) return 'This session is read-only: it runs only tools that change nothing. Reconnect without read-only mode to use this one.';
      return `This token lacks ${(d.missingPermissions ?? []).join(', ')}${d.heldPermissions ? ` (it has ${d.heldPermissions.join(', ') || 'no permissions'})` : ''}. Ask the person who gave you the token for one that has it; do not retry with this one.`;
    case 'rate_limited':
    case 'queue_full':
      return `Wait ${Math.max(1, Math.ceil(d.retryAfter ?? 1))} s (retry_after), then retry once; never in parallel.`;
    case 'validation':
      return 'Fix the fields named in errors and call again; describe_operation shows the accepted form of every field.';
    case 'invalid_token':
    case 'unauthenticated':
      return 'The token is missing, invalid, expired or revoked: ask for a new one.';
    case 'api_disabled':
      return 'The API is turned off for this instance; a root token of the root team can call enable_api.';
    case 'mcp_disabled':
      return 'The MCP server is turned off for this instance; a root token of the root team can call enable_mcp over stdio, or POST /api/v1/mcp/enable.';
    case 'root_team_only':
      return "Only a token of the instance's root team can do this.";
    case 'ip_not_allowed':
      return "This address is not on the instance's allow-list.";
    case 'approval_pending':
      return `Nothing ran yet: a person must approve this call at ${String(d.approval?.approve_url ?? 'the console')}. Tell them, then check it with get_approval (uuid ${d.approval?.uuid ?? ''}); do not call again.`;
    case 'approval_not_allowed':
      return 'Only a person (team owner or admin) approves, in the console or with the CLI; ask them.';
    case 'store_unavailable':
      return 'berth cannot reach its database right now; nothing was changed. Retry in a few seconds.';
    default:
      return undefined;
  }
}
