/**
 * Prompts and completion (issue 38 items 4 and 5): the workflows an agent is asked for, built
 * from the team's own records, and completion of their arguments and of resource-template
 * variables with this team's uuids and names only. Real servers, real SDK clients of both
 * generations, over HTTP (both eras) and stdio.
 */
import type { Client } from '@modelcontextprotocol/client';
import type { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { httpClient, stdioClient, type AnyClient, type ClientKind } from '../helpers/mcp.js';
import { call, startTestServer, type TestServer } from '../helpers/server.js';

let s: TestServer;
let projectUuid: string;
let serverUuid: string;
let destUuid: string;
const apps: { uuid: string; name: string }[] = [];
let foreignApp: { uuid: string; name: string };
let readOnlyToken: string;
let noReadToken: string;

async function createApp(token: string, project: string, server: string, name: string) {
  const r = await call(s.url, 'POST', '/api/v1/applications/dockerimage', {
    token,
    body: { project_uuid: project, server_uuid: server, environment_name: 'production', name, docker_registry_image_name: 'nginx', docker_registry_image_tag: '1.27', ports_exposes: '80' },
  });
  expect(r.status, r.text).toBe(201);
  return { uuid: r.json.uuid as string, name };
}

beforeAll(async () => {
  // 150 creations and every client's calls: more than the default 200 a minute.
  s = await startTestServer({ apiRateLimit: 10_000 });
  const token = s.rootToken;
  projectUuid = (await call(s.url, 'POST', '/api/v1/projects', { token, body: { name: 'shop' } })).json.uuid;
  serverUuid = (await call(s.url, 'POST', '/api/v1/servers', { token, body: { name: 'box-one', ip: '10.0.0.9' } })).json.uuid;
  // 150 applications with a shared name prefix (more than one completion answer holds), and one other.
  for (let i = 0; i < 150; i++) apps.push(await createApp(token, projectUuid, serverUuid, `web-${String(i).padStart(3, '0')}`));
  apps.push(await createApp(token, projectUuid, serverUuid, 'billing'));
  destUuid = (await call(s.url, 'POST', `/api/v1/servers/${serverUuid}/destinations`, { token, body: { network: 'none', name: 'box-one-net' } })).json.uuid;
  // Another team with an application whose name shares the prefix: never a candidate here.
  const other = await s.team('Elsewhere');
  const op = (await call(s.url, 'POST', '/api/v1/projects', { token: other.rootToken, body: { name: 'theirs' } })).json.uuid;
  const os = (await call(s.url, 'POST', '/api/v1/servers', { token: other.rootToken, body: { name: 'their-box', ip: '10.0.0.10' } })).json.uuid;
  foreignApp = await createApp(other.rootToken, op, os, 'web-foreign');
  readOnlyToken = (await s.token({ permissions: ['read'] })).token;
  noReadToken = (await s.token({ permissions: ['deploy'] })).token;
}, 120_000);
afterAll(() => s.stop());

type Raw = Client | V1Client;
const rawOf = (c: AnyClient) =>
  c.raw as Raw & {
    listPrompts(): Promise<{ prompts: Array<{ name: string; description?: string; arguments?: Array<{ name: string; required?: boolean }> }> }>;
    getPrompt(p: { name: string; arguments?: Record<string, string> }): Promise<{ messages: Array<{ role: string; content: unknown }> }>;
    complete(p: { ref: { type: string; name?: string; uri?: string }; argument: { name: string; value: string } }): Promise<{ completion: { values: string[]; total?: number; hasMore?: boolean } }>;
  };
async function using<T>(c: AnyClient, f: (raw: ReturnType<typeof rawOf>) => Promise<T>): Promise<T> {
  try {
    return await f(rawOf(c));
  } finally {
    await c.close();
  }
}
const textOf = (r: { messages: Array<{ content: unknown }> }) => r.messages.map((m) => (m.content as { text?: string }).text ?? '').join('\n');

describe.each<ClientKind>(['v2-modern', 'v2-legacy', 'v1'])('over HTTP, %s client', (kind) => {
  it('lists at least four prompts, each with a description and its arguments', async () => {
    await using(await httpClient(kind, s.url, s.rootToken), async (c) => {
      const { prompts } = await c.listPrompts();
      expect(prompts.map((p) => p.name)).toEqual(expect.arrayContaining(['deploy_from_git', 'move_application', 'diagnose_application', 'recent_changes']));
      for (const p of prompts) expect(p.description).toBeTruthy();
      const move = prompts.find((p) => p.name === 'move_application')!;
      expect(move.arguments).toEqual([expect.objectContaining({ name: 'application', required: true }), expect.objectContaining({ name: 'destination', required: true })]);
    });
  });

  it('builds a prompt from the team’s records, by name or uuid, and refuses what the team does not have', async () => {
    await using(await httpClient(kind, s.url, s.rootToken), async (c) => {
      const moved = textOf(await c.getPrompt({ name: 'move_application', arguments: { application: 'billing', destination: destUuid } }));
      expect(moved).toContain(apps.at(-1)!.uuid);
      expect(moved).toContain(destUuid);
      expect(moved).toContain('migrate_application');
      const deploy = textOf(await c.getPrompt({ name: 'deploy_from_git', arguments: { repository: 'https://git.example.test/shop/web.git', project: 'shop', server: serverUuid } }));
      expect(deploy).toContain(projectUuid);
      expect(deploy).toContain('create_public_application');
      // Another team's application is as unknown as a missing one.
      await expect(c.getPrompt({ name: 'diagnose_application', arguments: { application: foreignApp.uuid } })).rejects.toMatchObject({ code: -32602 });
      await expect(c.getPrompt({ name: 'diagnose_application', arguments: { application: 'no-such-app' } })).rejects.toMatchObject({ code: -32602 });
      await expect(c.getPrompt({ name: 'recent_changes', arguments: { hours: 'lots' } })).rejects.toMatchObject({ code: -32602 });
      await expect(c.getPrompt({ name: 'no_such_prompt' })).rejects.toMatchObject({ code: -32602 });
    });
  });

  it('completes prompt arguments with this team’s names and uuids, at most 100 with the total', async () => {
    await using(await httpClient(kind, s.url, s.rootToken), async (c) => {
      const r = await c.complete({ ref: { type: 'ref/prompt', name: 'diagnose_application' }, argument: { name: 'application', value: 'web-' } });
      expect(r.completion.values).toHaveLength(100);
      expect(r.completion.total).toBe(150);
      expect(r.completion.hasMore).toBe(true);
      expect(r.completion.values).not.toContain('web-foreign');
      expect(r.completion.values[0]).toBe('web-000');
      const one = await c.complete({ ref: { type: 'ref/prompt', name: 'move_application' }, argument: { name: 'application', value: 'BILL' } });
      expect(one.completion).toMatchObject({ values: ['billing'], total: 1, hasMore: false });
      const byUuid = await c.complete({ ref: { type: 'ref/prompt', name: 'move_application' }, argument: { name: 'application', value: apps[7]!.uuid.slice(0, 10) } });
      expect(byUuid.completion.values).toContain(apps[7]!.uuid);
      const dest = await c.complete({ ref: { type: 'ref/prompt', name: 'move_application' }, argument: { name: 'destination', value: '' } });
      expect(dest.completion.values).toEqual(expect.arrayContaining([destUuid, 'box-one-net']));
    });
  });

  it('completes resource-template variables with uuids only, and an unknown reference with nothing', async () => {
    await using(await httpClient(kind, s.url, s.rootToken), async (c) => {
      const r = await c.complete({ ref: { type: 'ref/resource', uri: 'berth://applications/{uuid}' }, argument: { name: 'uuid', value: apps[3]!.uuid.slice(0, 8) } });
      expect(r.completion.values).toContain(apps[3]!.uuid);
      expect(r.completion.values.every((v) => v.length > 8 && !v.startsWith('web'))).toBe(true);
      const foreign = await c.complete({ ref: { type: 'ref/resource', uri: 'berth://applications/{uuid}' }, argument: { name: 'uuid', value: foreignApp.uuid } });
      expect(foreign.completion.values).toEqual([]);
      for (const ref of [
        { type: 'ref/prompt', name: 'test_prompt_with_arguments' },
        { type: 'ref/resource', uri: 'berth://nothing/{uuid}' },
      ]) {
        const none = await c.complete({ ref, argument: { name: 'arg1', value: 'test' } });
        expect(none.completion.values).toEqual([]);
      }
    });
  });
});

describe('permissions', () => {
  it('a read token gets prompts and completions; a token without read gets neither data nor names', async () => {
    await using(await httpClient('v2-modern', s.url, readOnlyToken), async (c) => {
      expect(textOf(await c.getPrompt({ name: 'diagnose_application', arguments: { application: 'billing' } }))).toContain('billing');
    });
    await using(await httpClient('v2-modern', s.url, noReadToken), async (c) => {
      const r = await c.complete({ ref: { type: 'ref/prompt', name: 'diagnose_application' }, argument: { name: 'application', value: '' } });
      expect(r.completion.values).toEqual([]);
      await expect(c.getPrompt({ name: 'diagnose_application', arguments: { application: 'billing' } })).rejects.toMatchObject({ code: -32602 });
    });
  });
});

describe.each<ClientKind>(['v2-modern', 'v1'])('over stdio, %s client', (kind) => {
  it('serves the same prompts and completions', { timeout: 60_000 }, async () => {
    await using(await stdioClient(kind, s.dataDir, s.rootToken), async (c) => {
      const { prompts } = await c.listPrompts();
      expect(prompts.length).toBeGreaterThanOrEqual(4);
      const r = await c.complete({ ref: { type: 'ref/prompt', name: 'diagnose_application' }, argument: { name: 'application', value: 'bil' } });
      expect(r.completion.values).toEqual(['billing']);
      expect(textOf(await c.getPrompt({ name: 'recent_changes', arguments: { hours: '2', application: 'billing' } }))).toContain(apps.at(-1)!.uuid);
    });
  });
});
