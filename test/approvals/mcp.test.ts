import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runBerth } from '../helpers/cli-run.js';
import { CLI, errorBody, httpClient, stdioClient, type ToolResult } from '../helpers/mcp.js';
import { call, startTestServer, type TestServer } from '../helpers/server.js';
import { storeEnv } from '../helpers/store.js';

/**
 * Approvals over MCP (issue 26), through `berth mcp` on stdio (the built CLI) and /mcp over HTTP:
 * a held call asks the person in a client that supports elicitation and finishes in the same
 * call; a client without it gets the pending result naming where to approve.
 */
describe('approvals over MCP', { timeout: 90_000 }, () => {
  let s: TestServer;

  beforeAll(async () => {
    s = await startTestServer();
    const set = await call(s.url, 'PATCH', '/api/v1/approvals/policy', { token: s.rootToken, body: { rules: ['delete_project'] } });
    expect(set.status).toBe(200);
  }, 60_000);
  afterAll(async () => {
    await s?.stop();
  });

  const project = async (name: string) => (await call(s.url, 'POST', '/api/v1/projects', { token: s.rootToken, body: { name } })).json.uuid as string;
  const exists = async (uuid: string) => (await call(s.url, 'GET', `/api/v1/projects/${uuid}`, { token: s.rootToken })).status === 200;

  /**
   * A real SDK client that declares form elicitation and answers with `answer`: on `berth mcp`
   * over stdio in the 2025 era by default, or (`via`) in the 2026 era over stdio or HTTP, where
   * the SDK's client fulfils berth's input_required answer with the same handler and sends the
   * call again.
   */
  async function elicitingClient(
    token: string,
    answer: (message: string, params: Record<string, unknown>) => { action: 'accept' | 'decline' | 'cancel'; content?: Record<string, string | number | boolean> },
    modes: { form?: Record<string, never>; url?: Record<string, never> } = { form: {} },
    via: 'legacy-stdio' | 'modern-stdio' | 'modern-http' = 'legacy-stdio',
  ) {
    const asked: string[] = [];
    const completed: string[] = [];
    const c = new Client(
      { name: 'berth-test-elicit', version: '1.0.0' },
      { capabilities: { elicitation: modes }, versionNegotiation: { mode: via === 'legacy-stdio' ? 'legacy' : { pin: '2026-07-28' } } },
    );
    c.setRequestHandler('elicitation/create', async (req) => {
      asked.push(req.params.message);
      return answer(req.params.message, req.params as Record<string, unknown>);
    });
    c.setNotificationHandler('notifications/elicitation/complete', async (n) => {
      completed.push(n.params.elicitationId);
    });
    await c.connect(
      via === 'modern-http'
        ? new StreamableHTTPClientTransport(new URL('/mcp', s.url), { requestInit: { headers: { Authorization: `Bearer ${token}`, 'X-Berth-Toolsets': 'all' } } })
        : new StdioClientTransport({
            command: process.execPath,
            args: [CLI, 'mcp', '--data', s.dataDir, '--toolsets', 'all'],
            env: { BERTH_TOKEN: token, LOG_LEVEL: 'warn', ...storeEnv(s.dataDir) },
            stderr: 'pipe',
          }),
    );
    return { c, asked, completed };
  }

  const approvalOf = async (uuid: string) => {
    const list = await call(s.url, 'GET', '/api/v1/approvals', { token: s.rootToken });
    return (list.json as Array<{ target: string; status: string; decided_via: string | null }>).find((a) => a.target === uuid);
  };

  it('a client with elicitation asks its person and the call completes in one turn', async () => {
    const p = await project('elicit-yes');
    const { c, asked } = await elicitingClient(s.rootToken, () => ({ action: 'accept', content: { approve: true } }));
    try {
      const r = (await c.callTool({ name: 'delete_project', arguments: { uuid: p } })) as ToolResult;
      expect(r.isError).toBeFalsy();
      expect(asked).toHaveLength(1);
      expect(asked[0]).toContain('delete_project');
      expect(asked[0]).toContain(p);
    } finally {
      await c.close();
    }
    expect(await exists(p)).toBe(false);
    expect(await approvalOf(p)).toMatchObject({ status: 'succeeded', decided_via: 'mcp_elicitation' });
  });

  it('a client with URL elicitation opens the approval page; a person approves there and the call completes once', async () => {
    // A member holds the token: no yes/no in the client would count, the page's sign-in decides who approves.
    const member = await s.token({ permissions: ['read', 'write'], role: 'member', email: 'url-member@example.test' });
    const p = await project('elicit-url');
    const opened: Array<Record<string, unknown>> = [];
    let decided: Promise<unknown> | undefined;
    const { c, completed } = await elicitingClient(
      member.token,
      (_m, params) => {
        opened.push(params);
        // The person follows the link and an owner approves it (here through the CLI, on the same store).
        decided = runBerth(['approvals', 'approve', String(params.elicitationId), '--email', s.ownerEmail, '--data', s.dataDir], {
          cwd: s.dataDir,
          env: { LOG_LEVEL: 'silent', ...storeEnv(s.dataDir) },
        });
        return { action: 'accept' };
      },
      { url: {} },
    );
    try {
      const r = (await c.callTool({ name: 'delete_project', arguments: { uuid: p } })) as ToolResult;
      expect(r.isError, JSON.stringify(r)).toBeFalsy();
      expect(opened).toHaveLength(1);
      const a = await approvalOf(p);
      expect(opened[0]).toMatchObject({ mode: 'url', elicitationId: expect.any(String), url: expect.stringMatching(/\/approvals\/[a-z0-9]{24}$/) });
      expect(String(opened[0]!.url).endsWith(`/approvals/${String(opened[0]!.elicitationId)}`)).toBe(true);
      expect(a).toMatchObject({ status: 'succeeded', decided_via: 'cli' });
      await expect.poll(() => completed).toEqual([opened[0]!.elicitationId]);
    } finally {
      await decided;
      await c.close();
    }
    expect(await exists(p)).toBe(false);
    const runs = await call(s.url, 'GET', `/api/v1/audit?operation=delete_project&resource=${p}&result=ok`, { token: s.rootToken });
    expect(runs.json).toHaveLength(1);
  });

  it('declined in the client, the call is denied and never runs', async () => {
    const p = await project('elicit-no');
    const { c } = await elicitingClient(s.rootToken, () => ({ action: 'decline' }));
    try {
      const r = (await c.callTool({ name: 'delete_project', arguments: { uuid: p } })) as ToolResult;
      expect(errorBody(r).message).toMatch(/denied/);
    } finally {
      await c.close();
    }
    expect(await exists(p)).toBe(true);
    expect((await approvalOf(p))?.status).toBe('denied');
  });

  it('a member holder is not asked: the call stays pending for an owner or admin', async () => {
    const member = await s.token({ permissions: ['read', 'write'], role: 'member' });
    const p = await project('elicit-member');
    const { c, asked } = await elicitingClient(member.token, () => ({ action: 'accept', content: { approve: true } }));
    try {
      const r = (await c.callTool({ name: 'delete_project', arguments: { uuid: p } })) as ToolResult;
      expect(errorBody(r).approval).toMatchObject({ status: 'pending', operation: 'delete_project' });
      expect(asked).toEqual([]);
    } finally {
      await c.close();
    }
    expect(await exists(p)).toBe(true);
  });

  it('clients without elicitation get the pending result and where to approve (stdio and HTTP)', async () => {
    for (const open of [() => stdioClient('v2-legacy', s.dataDir, s.rootToken), () => httpClient('v2-modern', s.url, s.rootToken)]) {
      const p = await project('no-elicit');
      const c = await open();
      try {
        const r = await c.callTool('delete_project', { uuid: p });
        const body = errorBody(r);
        expect(body.message).toMatch(/waits for a person's approval/);
        expect(body.approval).toMatchObject({ status: 'pending', operation: 'delete_project', target: p });
        expect(String((body.approval as { approve_url: string }).approve_url)).toMatch(/\/approvals\/[a-z0-9]{24}$/);
        expect(String(body.hint)).toContain('get_approval');
      } finally {
        await c.close();
      }
      expect(await exists(p)).toBe(true);
    }
  });
  describe('in the 2026 era (input_required, the call sent again with the answer)', () => {
    it.each(['modern-stdio', 'modern-http'] as const)('%s: asked by form, yes runs it once; no denies it', async (via) => {
      const yes = await project(`mrtr-yes-${via}`);
      const asking = await elicitingClient(s.rootToken, () => ({ action: 'accept', content: { approve: true } }), { form: {} }, via);
      try {
        const r = (await asking.c.callTool({ name: 'delete_project', arguments: { uuid: yes } })) as ToolResult;
        expect(r.isError, JSON.stringify(r)).toBeFalsy();
        expect(asking.asked).toHaveLength(1);
        expect(asking.asked[0]).toContain(yes);
      } finally {
        await asking.c.close();
      }
      expect(await exists(yes)).toBe(false);
      expect(await approvalOf(yes)).toMatchObject({ status: 'succeeded', decided_via: 'mcp_elicitation' });
      const runs = await call(s.url, 'GET', `/api/v1/audit?operation=delete_project&resource=${yes}&result=ok`, { token: s.rootToken });
      expect(runs.json).toHaveLength(1);

      const no = await project(`mrtr-no-${via}`);
      const refusing = await elicitingClient(s.rootToken, () => ({ action: 'decline' }), { form: {} }, via);
      try {
        const r = (await refusing.c.callTool({ name: 'delete_project', arguments: { uuid: no } })) as ToolResult;
        expect(errorBody(r).message).toMatch(/denied/);
      } finally {
        await refusing.c.close();
      }
      expect(await exists(no)).toBe(true);
      expect((await approvalOf(no))?.status).toBe('denied');
    });

    it('URL mode over HTTP: the client opens the approval page, an owner approves there, the call sent again finishes once', async () => {
      const member = await s.token({ permissions: ['read', 'write'], role: 'member', email: 'mrtr-url@example.test' });
      const p = await project('mrtr-url');
      const opened: Array<Record<string, unknown>> = [];
      let decided: Promise<unknown> | undefined;
      const { c } = await elicitingClient(
        member.token,
        (_m, params) => {
          opened.push(params);
          const uuid = String(params.url).split('/').pop()!;
          // The person follows the link and an owner approves it (here through the CLI, on the same store).
          decided = runBerth(['approvals', 'approve', uuid, '--email', s.ownerEmail, '--data', s.dataDir], { cwd: s.dataDir, env: { LOG_LEVEL: 'silent', ...storeEnv(s.dataDir) } });
          return { action: 'accept' };
        },
        { url: {} },
        'modern-http',
      );
      try {
        const r = (await c.callTool({ name: 'delete_project', arguments: { uuid: p } })) as ToolResult;
        expect(r.isError, JSON.stringify(r)).toBeFalsy();
      } finally {
        await decided;
        await c.close();
      }
      expect(opened).toHaveLength(1);
      expect(opened[0]).toMatchObject({ mode: 'url', url: expect.stringMatching(/\/approvals\/[a-z0-9]{24}$/) });
      expect(await exists(p)).toBe(false);
      expect(await approvalOf(p)).toMatchObject({ status: 'succeeded', decided_via: 'cli' });
    });

    it('a requestState naming another token’s held call decides nothing', async () => {
      const p = await project('mrtr-forged');
      // Held for the owner's token (an agent without elicitation).
      const held = await call(s.url, 'POST', '/mcp', {
        token: s.rootToken,
        body: { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'delete_project', arguments: { uuid: p } } },
        headers: { accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25', 'x-berth-toolsets': 'all' },
      });
      const uuid = /"uuid\\?":\\?"([a-z0-9]{24})/.exec(held.text)?.[1];
      expect(uuid, held.text).toBeTruthy();
      // Another admin's token answers "yes" for it, naming it in a made-up requestState.
      const other = await s.token({ permissions: ['read', 'write'], role: 'admin' });
      const { c } = await elicitingClient(other.token, () => ({ action: 'accept', content: { approve: true } }), { form: {} }, 'modern-http');
      try {
        const r = (await c.callTool({
          name: 'delete_project',
          arguments: { uuid: p },
          inputResponses: { approve: { action: 'accept', content: { approve: true } } },
          requestState: `berth-approval:${uuid}`,
        } as never)) as ToolResult;
        expect(errorBody(r).errors).toMatchObject({ requestState: [expect.stringMatching(/does not name a call of this token/)] });
      } finally {
        await c.close();
      }
      expect(await exists(p)).toBe(true);
      expect(await approvalOf(p)).toMatchObject({ status: 'pending' });
    });
  });
});
