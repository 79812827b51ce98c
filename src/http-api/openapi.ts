import { z } from 'zod';
import { errorCatalogue } from '../errors.js';
import { pathParams, routesOf, type HttpMethod, type Operation } from '../core/operation.js';
import { BERTH_VERSION, COOLIFY_API_VERSION } from '../core/operations/platform.js';
import { PUBLIC_ROUTES } from './public-routes.js';

type JsonSchema = Record<string, unknown>;

const schemaOf = (s: z.ZodType, io: 'input' | 'output'): JsonSchema => {
  const { $schema: _ignored, ...rest } = z.toJSONSchema(s, { io, unrepresentable: 'any' }) as JsonSchema;
  return rest;
};

const errorBody = (extra: JsonSchema = {}) => ({
  type: 'object',
  properties: { message: { type: 'string' }, ...extra },
  required: ['message'],
});

const ERROR_RESPONSES: Record<string, { description: string; schema: JsonSchema }> = {
  '401': { description: `${errorCatalogue.unauthenticated.message} / ${errorCatalogue.invalid_token.message}`, schema: errorBody() },
  '403': {
    description: 'Missing permissions, API disabled, or source address not allowed.',
    schema: errorBody({ missing_permissions: { type: 'array', items: { type: 'string' } } }),
  },
  '404': { description: errorCatalogue.not_found.message, schema: errorBody() },
  '422': {
    description: errorCatalogue.validation.message,
    schema: errorBody({ errors: { type: 'object', additionalProperties: { type: 'array', items: { type: 'string' } } } }),
  },
  '429': { description: `${errorCatalogue.rate_limited.message} / ${errorCatalogue.queue_full.message}`, schema: errorBody() },
};

function operationObject(op: Operation, method: HttpMethod): JsonSchema {
  const shape = op.input.shape as Record<string, z.ZodType>;
  const inPath = pathParams(op.http.path);
  const rest = Object.keys(shape).filter((k) => !inPath.includes(k));
  const inQuery = method === 'GET' || method === 'DELETE';
  // A write takes from its query only what it declares (Coolify's `POST /deploy?uuid=`), in the body as well.
  const query = inQuery ? rest : rest.filter((k) => op.http.query?.includes(k));
  const parameters = [
    ...inPath.map((n) => ({ name: n, in: 'path', required: true, schema: schemaOf(shape[n]!, 'input') })),
    ...query.map((n) => ({ name: n, in: 'query', required: inQuery && !shape[n]!.safeParse(undefined).success, schema: schemaOf(shape[n]!, 'input') })),
  ];
  const restName = new Map(Object.entries(op.http.bodyNames ?? {}).map(([r, i]) => [i, r]));
  const body = !inQuery && rest.length ? z.strictObject(Object.fromEntries(rest.map((k) => [restName.get(k) ?? k, shape[k]!]))) : undefined;
  let success: JsonSchema;
  let headers: JsonSchema | undefined;
  if (op.http.text) success = { 'text/plain': { schema: { type: 'string' } } };
  else if (op.http.list) {
    const item = (op.output as unknown as z.ZodObject).shape.items as z.ZodType;
    success = { 'application/json': { schema: schemaOf(item, 'output') } };
    headers = { 'X-Total-Count': { schema: { type: 'integer' } }, 'X-Page': { schema: { type: 'integer' } }, 'X-Per-Page': { schema: { type: 'integer' } } };
  } else success = { 'application/json': { schema: schemaOf(op.output, 'output') } };
  return {
    operationId: op.name,
    summary: op.summary,
    description: op.description,
    tags: [op.toolset],
    'x-berth-permission': op.permission,
    ...(op.access?.rootTeamOnly ? { 'x-berth-root-team-only': true } : {}),
    // Coolify fields berth does not apply: the values it accepts (what it does anyway), and why any other is refused.
    ...(op.unsupported
      ? {
          'x-berth-coolify-fields': Object.fromEntries(
            Object.entries(op.unsupported).map(([k, f]) => [k, typeof f === 'string' ? { accepts: [], refused: f } : { accepts: f.accepts, refused: f.hint }]),
          ),
        }
      : {}),
    security: [{ bearer: [] }],
    ...(parameters.length ? { parameters } : {}),
    ...(body ? { requestBody: { required: !query.length, content: { 'application/json': { schema: schemaOf(body, 'input') } } } } : {}),
    responses: {
      [String(op.http.status ?? 200)]: { description: 'Success.', content: success, ...(headers ? { headers } : {}) },
      ...Object.fromEntries(Object.entries(ERROR_RESPONSES).map(([code, r]) => [code, { description: r.description, content: { 'application/json': { schema: r.schema } } }])),
    },
  };
}

/** OpenAPI 3.1 for the REST door, derived from the operation table. */
export function buildOpenApi(operations: readonly Operation[]): JsonSchema {
  const paths: Record<string, Record<string, JsonSchema>> = {};
  for (const op of operations)
    for (const { method, path, alsoPost } of routesOf(op)) {
      const alias = path !== op.http.path;
      const id = `${op.name}${alias ? '_alias' : ''}${alsoPost ? '_post' : ''}`;
      (paths[path] ??= {})[method.toLowerCase()] = { ...operationObject(op, method), operationId: id, ...(alias ? { deprecated: false } : {}) };
    }
  for (const r of PUBLIC_ROUTES) {
    const ok = r.text ? { description: r.text, content: { 'text/plain': { schema: { type: 'string' } } } } : { description: r.summary };
    paths[r.path] = {
      get: {
        operationId: r.operationId,
        summary: r.summary,
        security: [],
        responses: { '200': ok, ...(r.canBeUnavailable ? { '503': { description: 'The store or Redis cannot be reached.' } } : {}) },
      },
    };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'berth API',
      version: BERTH_VERSION,
      description: 'Team-scoped infrastructure management. Every request carries Authorization: Bearer <id>|<secret>.',
      'x-coolify-api-version': COOLIFY_API_VERSION,
    },
    servers: [{ url: '/' }],
    components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'An API token: <token_id>|<secret>.' } } },
    paths,
  };
}
