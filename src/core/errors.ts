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
  api_disabled: { status: 403, message: 'API is disabled.' },
  ip_not_allowed: { status: 403, message: 'You are not allowed to access the API.' },
  missing_permissions: { status: 403, message: 'Missing required permissions.' },
  origin_not_allowed: { status: 403, message: 'Origin not allowed.' },
  host_not_allowed: { status: 403, message: 'Host not allowed.' },
  root_team_only: { status: 403, message: "Only a token of the instance's root team may do this." },
  not_found: { status: 404, message: 'Resource not found.' },
  route_not_found: { status: 404, message: 'Not found.' },
  method_not_allowed: { status: 405, message: 'Method not allowed.' },
  conflict: { status: 409, message: 'Conflict.' },
  validation: { status: 422, message: 'Validation error.' },
  rate_limited: { status: 429, message: 'Too many requests.' },
  queue_full: { status: 429, message: 'Deployment queue is full.' },
  internal: { status: 500, message: 'Internal server error.' },
} as const satisfies Record<string, ErrorSpec>;

export type ErrorKind = keyof typeof errorCatalogue;

export interface ErrorDetails {
  missingPermissions?: string[];
  errors?: ValidationErrors;
  allow?: string[];
  /** Seconds until a retry may succeed (429s). */
  retryAfter?: number;
  /** Unix seconds when another request may be made (rate limit 429). */
  resetAt?: number;
  /** The bucket state behind a rate-limit answer, for its headers. */
  rate?: { limit: number; remaining: number };
  /** Overrides the catalogue's message where the kind allows a specific one (conflict). */
  message?: string;
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
