import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PUBLIC_ROUTES } from '../../src/http-api/public-routes.js';
import { operations } from '../../src/core/operations/index.js';
import { routesOf } from '../../src/core/operation.js';
import { call, startTestServer, type TestServer } from '../helpers/server.js';

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(() => s.stop());

const SNAPSHOT = path.resolve(import.meta.dirname, '../__snapshots__/routes.json');

describe('OpenAPI and the route table', () => {
  it('GET /api/v1/openapi.json needs no token and is OpenAPI 3.1 with a bearer scheme', async () => {
    const r = await call(s.url, 'GET', '/api/v1/openapi.json');
    expect(r.status).toBe(200);
    expect(r.json.openapi).toBe('3.1.0');
    expect(r.json.components.securitySchemes.bearer).toMatchObject({ type: 'http', scheme: 'bearer' });
  });

  it('every route is in the document and every path in it is a route', async () => {
    const doc = (await call(s.url, 'GET', '/api/v1/openapi.json')).json as { paths: Record<string, Record<string, { operationId: string; 'x-berth-permission'?: string }>> };
    const documented = Object.entries(doc.paths).flatMap(([p, methods]) => Object.keys(methods).map((m) => `${m.toUpperCase()} ${p}`));
    const routes = [...operations.flatMap((o) => routesOf(o).map((r) => `${r.method} ${r.path}`)), ...PUBLIC_ROUTES.map((r) => `GET ${r.path}`)];
    expect(documented.sort()).toEqual(routes.sort());
    for (const op of operations) {
      for (const r of routesOf(op)) expect(doc.paths[r.path]![r.method.toLowerCase()]!['x-berth-permission']).toBe(op.permission);
    }
    // And every documented path answers something other than "no such route".
    for (const [p, methods] of Object.entries(doc.paths)) {
      for (const m of Object.keys(methods)) {
        const r = await call(s.url, m.toUpperCase(), p.replace(/\{\w+\}/g, 'zzzzzzzz'), { token: s.rootToken, body: m === 'get' || m === 'delete' ? undefined : {} });
        expect(r.text, `${m} ${p}`).not.toBe('{"message":"Not found."}');
      }
    }
  });

  it('the route table (method, path, permission) matches the reviewed snapshot; UPDATE_ROUTES=1 rewrites it', () => {
    const table = operations.map((o) => ({
      method: o.http.method,
      path: o.http.path,
      ...(o.http.aliases ? { aliases: o.http.aliases } : {}),
      ...(o.http.getMovedToPost ? { get_moved_to_post: true } : {}),
      permission: o.permission,
      ...(o.access?.rootTeamOnly ? { root_team_only: true } : {}),
    }));
    const text = JSON.stringify(table, null, 2) + '\n';
    if (process.env.UPDATE_ROUTES === '1' || (!fs.existsSync(SNAPSHOT) && !process.env.CI)) {
      fs.mkdirSync(path.dirname(SNAPSHOT), { recursive: true });
      fs.writeFileSync(SNAPSHOT, text);
    }
    expect(fs.readFileSync(SNAPSHOT, 'utf8'), 'routes changed: review, then run UPDATE_ROUTES=1 npm test').toBe(text);
  });
});
