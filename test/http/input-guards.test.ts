import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inputProblem, MAX_INPUT_DEPTH } from '../../src/core/input-guard.js';
import { redactUrl } from '../../src/logging/logger.js';
import { errorBody, httpClient } from '../helpers/mcp.js';
import { spawnServe } from '../helpers/process.js';
import { call, startTestServer, type TestServer } from '../helpers/server.js';
import { buildWorld, COMPOSE, type World } from '../helpers/world.js';

/**
 * Input that cannot surprise (issue 22): keys that reach a prototype, nesting past any input,
 * credentials in URLs written to logs. Over real HTTP and real MCP clients.
 */

let s: TestServer;
let w: World;
beforeAll(async () => {
  s = await startTestServer();
  w = await buildWorld(s);
});
afterAll(() => s.stop());

const invalid = (field: string, message = 'This key is not allowed.') => ({ message: 'Validation error.', errors: { [field]: [message] } });
const deep = (n: number) => '{"a":'.repeat(n) + '1' + '}'.repeat(n);

describe('prototype keys are a 422 naming the field, in every body', () => {
  it('REST JSON bodies, at the top and nested, and query strings', async () => {
    const cases: Array<[string, string]> = [
      ['{"name":"p1","__proto__":{"polluted":true}}', '__proto__'],
      ['{"name":"p2","constructor":{"prototype":{"polluted":true}}}', 'constructor'],
      ['{"name":"p3","prototype":1}', 'prototype'],
      ['{"name":"p4","description":{"__proto__":1}}', 'description.__proto__'],
      ['{"name":"p5","list":[{"constructor":1}]}', 'list.0.constructor'],
    ];
    for (const [body, field] of cases) {
      const r = await call(s.url, 'POST', '/api/v1/projects', { token: s.rootToken, body });
      expect(r.status, body).toBe(422);
      expect(r.json, body).toEqual(invalid(field));
    }
    for (const q of ['__proto__=1', 'constructor=1', 'prototype=x']) {
      const r = await call(s.url, 'GET', `/api/v1/projects?${q}`, { token: s.rootToken });
      expect(r.status, q).toBe(422);
      expect(r.json).toEqual(invalid(q.split('=')[0]!));
    }
    // Nothing was created, and nothing leaked onto Object.prototype.
    const names = (await call(s.url, 'GET', '/api/v1/projects', { token: s.rootToken })).json.map((p: { name: string }) => p.name);
    expect(names.filter((n: string) => /^p\d$/.test(n))).toEqual([]);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('an unknown field named like an Object member is an ordinary unknown field', async () => {
    const r = await call(s.url, 'POST', '/api/v1/projects', { token: s.rootToken, body: { name: 'x', toString: 1, hasOwnProperty: 2 } });
    expect(r.status).toBe(422);
    expect(r.json.errors).toEqual({ toString: ['This field is not allowed.'], hasOwnProperty: ['This field is not allowed.'] });
  });

  it('env bulk: a variable named __proto__, constructor or prototype is refused, and none of the batch is written', async () => {
    for (const key of ['__proto__', 'constructor', 'prototype']) {
      const r = await call(s.url, 'PATCH', `/api/v1/applications/${w.appUuid}/envs/bulk`, {
        token: s.rootToken,
        body: {
          data: [
            { key: 'FINE_ONE', value: 'x' },
            { key, value: 'x' },
          ],
        },
      });
      expect(r.status, key).toBe(422);
      expect(r.json.errors).toEqual({ 'data.1.key': ['This name is not allowed.'] });
    }
    const envs = (await call(s.url, 'GET', `/api/v1/applications/${w.appUuid}/envs`, { token: s.rootToken })).json.map((e: { key: string }) => e.key);
    expect(envs).not.toContain('FINE_ONE');
  });

  it('compose files: a __proto__ or constructor key is refused under docker_compose_raw', async () => {
    const place = { project_uuid: w.projectUuid, server_uuid: w.serverUuid, destination_uuid: w.destinationUuid, environment_name: 'production' };
    for (const [yaml, where] of [
      [`${COMPOSE}\n__proto__:\n  polluted: true\n`, '__proto__'],
      [COMPOSE.replace('  web:\n', '  constructor:\n'), 'services.constructor'],
      [COMPOSE.replace('      GREETING: hello\n', '      GREETING: hello\n    labels:\n      __proto__: x\n'), 'services.web.labels.__proto__'],
    ] as const) {
      const r = await call(s.url, 'POST', '/api/v1/services', { token: s.rootToken, body: { ...place, name: 'proto', docker_compose_raw: yaml } });
      expect(r.status, yaml).toBe(422);
      expect(r.json.errors, yaml).toEqual({ docker_compose_raw: [`${where}: This key is not allowed.`] });
    }
  });

  it('MCP arguments, by a tool and through call_operation', async () => {
    const c = await httpClient('v2-modern', s.url, s.rootToken);
    expect(errorBody(await c.callTool('create_project', JSON.parse('{"name":"m1","__proto__":{"polluted":true}}')))).toMatchObject(invalid('__proto__'));
    expect(errorBody(await c.callTool('create_project', { name: 'm2', constructor: 1 } as never))).toMatchObject(invalid('constructor'));
    await c.close();
    const d = await httpClient('v1', s.url, s.rootToken, { 'X-Berth-Toolsets': 'default' });
    const viaCall = errorBody(await d.callTool('call_operation', { name: 'create_project', arguments: JSON.parse('{"name":"m3","__proto__":1}') }));
    expect(viaCall).toMatchObject(invalid('arguments.__proto__'));
    await d.close();
  });
});

describe('nesting past any input', () => {
  const modern = { accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25', 'x-berth-toolsets': 'all' };
  const toolCall = (args: string) => `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"create_project","arguments":${args}}}`;

  it('deep MCP arguments answer JSON-RPC invalid params (-32602), never -32603 or 500, however deep', async () => {
    for (const n of [MAX_INPUT_DEPTH + 1, 5_000, 50_000]) {
      const r = await call(s.url, 'POST', '/mcp', { token: s.rootToken, body: toolCall(`{"name":"x","description":${deep(n)}}`), headers: modern });
      expect(r.status, String(n)).toBe(400);
      expect(r.json).toMatchObject({ jsonrpc: '2.0', id: 7, error: { code: -32602, message: expect.stringContaining('nested more than') } });
    }
    // Nesting an input may have is fine (the schema judges it).
    const ok = await call(s.url, 'POST', '/mcp', { token: s.rootToken, body: toolCall(`{"name":"x","description":${deep(3)}}`), headers: modern });
    expect(ok.status).toBe(200);
    expect(ok.text).toContain('Validation error.');
  });

  it('arguments that are not an object are a JSON-RPC error, not an internal one', async () => {
    for (const args of ['[1,2]', '"text"', '42']) {
      const r = await call(s.url, 'POST', '/mcp', { token: s.rootToken, body: toolCall(args), headers: modern });
      expect(r.status, args).toBeLessThan(500);
      expect(r.text, args).toContain('-32602');
      expect(r.text).not.toContain('-32603');
    }
  });

  it('a deep REST body is a 422 naming where', async () => {
    const r = await call(s.url, 'POST', '/api/v1/projects', { token: s.rootToken, body: `{"name":"x","description":${deep(5_000)}}` });
    expect(r.status).toBe(422);
    expect(Object.values(r.json.errors)).toEqual([[`Nested more than ${MAX_INPUT_DEPTH} levels deep.`]]);
  });

  it('inputProblem walks without recursion and reports the first problem with its path', () => {
    expect(inputProblem(JSON.parse(deep(200_000)))).toMatchObject({ kind: 'too_deep' });
    expect(inputProblem({ a: [{ b: 1 }, { prototype: 1 }] })).toEqual({ kind: 'prototype_key', field: 'a.1.prototype', message: 'This key is not allowed.' });
    expect(inputProblem({ a: { b: ['constructor'] } })).toBeUndefined();
  });
});

describe('credentials in URLs never reach a log line', () => {
  it('redactUrl replaces credential query values and URL passwords, and keeps the rest', () => {
    expect(redactUrl('/mcp?api_token=1%7Csecret&toolsets=all')).toBe('/mcp?api_token=[redacted]&toolsets=all');
    expect(redactUrl('/x?Token=a&password=b&secret=c&private_key=d&page=2#top')).toBe('/x?Token=[redacted]&password=[redacted]&secret=[redacted]&private_key=[redacted]&page=2#top');
    expect(redactUrl('/x?%61pi_token=zz')).toBe('/x?%61pi_token=[redacted]');
    expect(redactUrl('https://user:hunter2@git.example/repo.git')).toBe('https://user:[redacted]@git.example/repo.git');
    expect(redactUrl('/api/v1/projects?page=1')).toBe('/api/v1/projects?page=1');
    // Every value not known to be harmless, whatever its name: an env's value is as secret as a password.
    expect(redactUrl('/api/v1/applications/a/envs?key=DBPASS&value=hunter2&note=x&per_page=5&uuid=abc')).toBe(
      '/api/v1/applications/a/envs?key=[redacted]&value=[redacted]&note=[redacted]&per_page=5&uuid=abc',
    );
    // A bare key may be the secret itself; a harmless flag name stays.
    expect(redactUrl('/x?ghp_abc123&full&page=2')).toBe('/x?[redacted]&full&page=2');
    expect(redactUrl(42)).toBe(42);
  });

  it('a served request with ?api_token= and other query secrets is logged without them', { timeout: 60_000 }, async () => {
    const served = await spawnServe(s.dataDir, { LOG_LEVEL: 'info' });
    try {
      const secret = 'query-secret-value-0123456789';
      await call(served.url, 'GET', `/api/v1/version?api_token=${encodeURIComponent(s.rootToken)}&password=${secret}&key=${secret}`, { token: s.rootToken });
      await call(served.url, 'GET', `/api/v1/nowhere?token=${secret}`);
      await call(served.url, 'POST', `/api/v1/projects?key=DBPASS&value=${secret}`, { token: s.rootToken, body: {} });
      await call(served.url, 'POST', `/mcp?api_token=${secret}`, { token: s.rootToken, body: '[]', headers: modern() });
      const lines = () =>
        served
          .output()
          .split('\n')
          .filter((l) => l.includes('"msg":"request"'));
      for (let i = 0; i < 100 && lines().length < 4; i++) await new Promise((r) => setTimeout(r, 50));
      const out = served.output();
      expect(lines().some((l) => l.includes('api_token=[redacted]'))).toBe(true);
      expect(out).not.toContain(secret);
      expect(out).not.toContain(s.rootToken.split('|')[1]!);
    } finally {
      await served.stop();
    }
  });
});

function modern() {
  return { accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25' };
}
