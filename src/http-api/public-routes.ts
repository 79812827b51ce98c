/**
 * The routes that need no token, declared once: the router, OpenAPI and the README table are
 * derived from this list (the handlers live in app.ts).
 */
export interface PublicRoute {
  path: string;
  operationId: string;
  summary: string;
  /** The plain-text answer when all is well; none for JSON documents. */
  text?: string;
  /** 503 when a dependency cannot be reached. */
  canBeUnavailable?: boolean;
}

export const PUBLIC_ROUTES: readonly PublicRoute[] = [
  { path: '/api/health', operationId: 'health', summary: 'Liveness: `OK` (asks nothing of the store).', text: 'OK' },
  { path: '/api/v1/health', operationId: 'health_v1', summary: "Liveness at Coolify's path: `OK`.", text: 'OK' },
  { path: '/api/ready', operationId: 'ready', summary: 'Readiness: `READY` when the store (and Redis, if configured) answer; 503 otherwise.', text: 'READY', canBeUnavailable: true },
  { path: '/api/v1/openapi.json', operationId: 'openapi', summary: 'This API as an OpenAPI 3.1 document.' },
];
