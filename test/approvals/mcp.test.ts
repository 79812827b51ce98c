import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as V1StdioTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ElicitationCompleteNotificationSchema, ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runBerth } from '../helpers/cli-run.js';
import { browse, signInByLink, type ConsoleSession } from '../helpers/console.js';
import { CLI, errorBody, httpClient, stdioClient, type ToolResult } from '../helpers/mcp.js';
import { call, startTestServer, type TestServer } from '../helpers/server.js';
import { storeEnv } from '../helpers/store.js';
import { remoteClient } from '../mcp/remote/helpers.js';

/** What a client that approves everything answers, whatever it is asked (form or URL). */
const acceptAll = () => ({ action: 'accept' as const, content: { approve: true } });
type Answer = (params: Record<string, unknown>) => { action: 'accept' | 'decline' | 'cancel'; content?: Record<string, string | number | boolean> };
type Modes = { form?: Record<string, never>; url?: Record<string, never> };

/**
 * Only a person approves (issues 26 and 39), over MCP through `berth mcp` on stdio (the built CLI)
 * and /mcp over HTTP, with real SDK clients (v1 and v2, both protocol eras) that answer every
 * elicitation by themselves with "accept", as an agent driving its own client would: none of
 * them runs a held call. berth asks only by URL mode, pointing at the console's page for the
 * approval; the call then waits for a person's decision there (or by the CLI) and finishes once;
 * a client without URL mode gets the pending answer and approve_url.
 */
describe('approvals over MCP: only a person approves', { timeout: 90_000 }, () => {
  let s: TestServer;
  let owner: ConsoleSession;

  beforeAll(async () => {
    s = await startTestServer();
    owner = await signInByLink(s.url, s.db, s.ownerEmail);
    const set = await call(s.url, 'PATCH', '/api/v1/approvals/policy', { token: s.rootToken, body: { rules: ['delete_project'] } });
    expect(set.status).toBe(200);
  }, 60_000);
  afterAll(async () => {
    await s?.stop();
  });

  const project = async (name: string) => (await call(s.url, 'POST', '/api/v1/projects', { token: s.rootToken, body: { name } })).json.uuid as string;
  const exists = async (uuid: string) => (await call(s.url, 'GET', `/api/v1/projects/${uuid}`, { token: s.rootToken })).status === 200;
  const approvalOf = async (target: string) => {
    const list = await call(s.url, 'GET', '/api/v1/approvals', { token: s.rootToken });
    return (list.json as Array<{ uuid: string; target: string; status: string; decided_via: string | null; args_hash: string }>).find((a) => a.target === target);
  };
  /** The owner approves on the console page (signed in, no passkey: session and CSRF), posting the hash it shows. */
  const approveInConsole = async (uuid: string) => {
    const a = (await call(s.url, 'GET', `/api/v1/approvals/${uuid}`, { token: s.rootToken })).json as { args_hash: string };
    return browse(s.url, owner.jar, 'POST', `/approvals/${uuid}/approve`, { _csrf: owner.csrf, args_hash: a.args_hash });
  };
  /** Nothing ran and nothing was decided: the project is there, its approval pending and undecided. */
  const stillHeld = async (p: string) => {
    expect(await exists(p)).toBe(true);
    expect(await approvalOf(p)).toMatchObject({ status: 'pending', decided_via: null });
  };

  /** A v1 SDK client (@modelcontextprotocol/sdk) on `berth mcp` over stdio, answering every elicitation with `answer`. */
  async function v1Client(token: string, modes: Modes, answer: Answer = acceptAll, env: Record<string, string> = {}) {
    const asked: Array<Record<string, unknown>> = [];
    const completed: string[] = [];
    const c = new V1Client({ name: 'berth-test-v1-elicit', version: '1.0.0' }, { capabilities: { elicitation: modes } });
    c.setRequestHandler(ElicitRequestSchema, async (req) => {
      asked.push(req.params as Record<string, unknown>);
      return answer(req.params as Record<string, unknown>);
    });
    c.setNotificationHandler(ElicitationCompleteNotificationSchema, async (n) => {
      completed.push(n.params.elicitationId);
    });
    await c.connect(
      new V1StdioTransport({
        command: process.execPath,
        args: [CLI, 'mcp', '--data', s.dataDir, '--toolsets', 'all'],
        env: { BERTH_TOKEN: token, LOG_LEVEL: 'warn', ...storeEnv(s.dataDir), ...env },
        stderr: 'pipe',
      }),
    );
    const callTool = (name: string, args: Record<string, unknown>, timeout?: number) => c.callTool({ name, arguments: args }, undefined, timeout ? { timeout } : undefined) as Promise<ToolResult>;
    return { c, asked, completed, callTool };
  }

  /**
   * A v2 SDK client (@modelcontextprotocol/client) answering every elicitation with `answer`: on
   * `berth mcp` over stdio in the 2025 era, or in the 2026 era over stdio or HTTP, where the SDK
   * fulfils berth's input_required answer with the same handler and sends the call again.
   */
  async function v2Client(token: string, modes: Modes, via: 'legacy-stdio' | 'modern-stdio' | 'modern-http', answer: Answer = acceptAll) {
    const asked: Array<Record<string, unknown>> = [];
    const completed: string[] = [];
    const c = new Client(
      { name: 'berth-test-elicit', version: '1.0.0' },
      { capabilities: { elicitation: modes }, versionNegotiation: { mode: via === 'legacy-stdio' ? 'legacy' : { pin: '2026-07-28' } } },
    );
    c.setRequestHandler('elicitation/create', async (req) => {
      asked.push(req.params as Record<string, unknown>);
      return answer(req.params as Record<string, unknown>);
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
    const callTool = (name: string, args: Record<string, unknown>, timeout?: number) => c.callTool({ name, arguments: args }, timeout ? { timeout } : undefined) as Promise<ToolResult>;
    return { c, asked, completed, callTool };
  }

  /** The pending answer: an error result naming the approval and its console page. */
  const expectPending = (r: ToolResult, p: string) => {
    const body = errorBody(r);
    expect(body.message).toMatch(/waits for a person's approval/);
    expect(body.approval).toMatchObject({ status: 'pending', operation: 'delete_project', target: p });
    expect(String((body.approval as { approve_url: string }).approve_url)).toMatch(/\/approvals\/[a-z0-9]{24}$/);
  };

  it.each([
    ['v1 SDK client, 2025 era (stdio)', 'v1'],
    ['v2 SDK client, 2025 era (stdio)', 'legacy-stdio'],
    ['v2 SDK client, 2026 era (stdio)', 'modern-stdio'],
    ['v2 SDK client, 2026 era (HTTP)', 'modern-http'],
  ] as const)('%s with form mode only, answering "accept" to everything: never asked, the owner’s held call stays pending', async (_name, kind) => {
    const p = await project(`form-only-${kind}`);
    const client = kind === 'v1' ? await v1Client(s.rootToken, { form: {} }) : await v2Client(s.rootToken, { form: {} }, kind);
    try {
      expectPending(await client.callTool('delete_project', { uuid: p }), p);
      expect(client.asked).toEqual([]);
    } finally {
      await client.c.close();
    }
    await stillHeld(p);
  });

  it.each([
    ['v1 SDK client, 2025 era (stdio)', 'v1'],
    ['v2 SDK client, 2026 era (HTTP)', 'modern-http'],
  ] as const)('%s with form and URL modes, answering "accept" to everything: it is sent to the console page, and its accept approves nothing', async (_name, kind) => {
    const p = await project(`accept-all-${kind}`);
    const client = kind === 'v1' ? await v1Client(s.rootToken, { form: {}, url: {} }) : await v2Client(s.rootToken, { form: {}, url: {} }, kind);
    try {
      // The call waits for a person (bounded); the agent gives up after a few seconds.
      await expect(client.callTool('delete_project', { uuid: p }, 4000)).rejects.toThrow(/timed out|timeout/i);
      const a = await approvalOf(p);
      expect(client.asked).toHaveLength(1);
      expect(client.asked[0]).toMatchObject({ mode: 'url', url: expect.stringMatching(new RegExp(`/approvals/${a!.uuid}$`)) });
      expect(client.asked[0]!.requestedSchema).toBeUndefined();
    } finally {
      await client.c.close();
    }
    await stillHeld(p);
  });

  it('2026 era: a call sent again with requestState and a form "yes" for its own held call decides nothing', async () => {
    const p = await project('mrtr-own-yes');
    // Held for the owner's token by a client without elicitation.
    const plain = await httpClient('v2-modern', s.url, s.rootToken);
    let uuid: string;
    try {
      const r = await plain.callTool('delete_project', { uuid: p });
      uuid = (errorBody(r).approval as { uuid: string }).uuid;
    } finally {
      await plain.close();
    }
    // The same token answers "yes" itself, as the old form question's answer, naming its own held call.
    const { c } = await v2Client(s.rootToken, { form: {} }, 'modern-http');
    const retry = (inputResponses: Record<string, unknown>, timeout?: number) =>
      c.callTool({ name: 'delete_project', arguments: { uuid: p }, inputResponses, requestState: `berth-approval:${uuid}` } as never, timeout ? { timeout } : undefined) as Promise<ToolResult>;
    const yes = { approve: { action: 'accept', content: { approve: true } } };
    try {
      expectPending(await retry(yes), p);
      // "The page was opened" only makes the retry wait for a person's decision; none comes here.
      await expect(retry({ ...yes, approval_page: { action: 'accept' } }, 3000)).rejects.toThrow(/timed out|timeout/i);
    } finally {
      await c.close();
    }
    await stillHeld(p);
  });

  it('URL mode: a person approves on the console page, and the waiting call finishes once with its result', async () => {
    // A member holds the token: who approves is decided by the page's sign-in, not by the token.
    const member = await s.token({ permissions: ['read', 'write'], role: 'member', email: 'url-member@example.test' });
    const p = await project('elicit-url');
    let decided: Promise<{ status: number }> | undefined;
    const client = await v1Client(member.token, { url: {} }, (params) => {
      // The person follows the link and approves there, signed in.
      decided = approveInConsole(String(params.elicitationId));
      return { action: 'accept' };
    });
    try {
      const r = await client.callTool('delete_project', { uuid: p });
      expect(r.isError, JSON.stringify(r)).toBeFalsy();
      expect((await decided)?.status).toBe(303);
      const a = await approvalOf(p);
      expect(client.asked[0]).toMatchObject({ mode: 'url', elicitationId: a!.uuid, url: expect.stringMatching(new RegExp(`/approvals/${a!.uuid}$`)) });
      expect(a).toMatchObject({ status: 'succeeded', decided_via: 'console' });
      await expect.poll(() => client.completed).toEqual([a!.uuid]);
    } finally {
      await decided;
      await client.c.close();
    }
    expect(await exists(p)).toBe(false);
    const runs = await call(s.url, 'GET', `/api/v1/audit?operation=delete_project&resource=${p}&result=ok`, { token: s.rootToken });
    expect(runs.json).toHaveLength(1);
  });

  it('URL mode, the page opened but nobody decides: the call answers pending within its answer bound, and a caller with a progress token hears that it waits', async () => {
    const p = await project('elicit-undecided');
    // A 6 s bound: past one 5 s heartbeat, far short of the 10 minutes a call used to hold a client that gives up at 60.
    const client = await v1Client(s.rootToken, { url: {} }, () => ({ action: 'accept' }), { BERTH_ANSWER_WITHIN_MS: '6000' });
    const heard: string[] = [];
    try {
      const r = (await client.c.callTool({ name: 'delete_project', arguments: { uuid: p } }, undefined, { onprogress: (n) => void heard.push(String(n.message)) })) as ToolResult;
      expectPending(r, p);
      expect(client.asked).toHaveLength(1);
      expect(heard.length).toBeGreaterThanOrEqual(1);
      expect(heard[0]).toMatch(/waiting for a person to decide approval [a-z0-9]{24} in the console/);
    } finally {
      await client.c.close();
    }
    await stillHeld(p);
  }, 30_000);

  it('URL mode, the page declined in the client: nothing is decided, the call answers pending', async () => {
    const p = await project('elicit-no');
    const client = await v2Client(s.rootToken, { url: {} }, 'legacy-stdio', () => ({ action: 'decline' }));
    try {
      expectPending(await client.callTool('delete_project', { uuid: p }), p);
      expect(client.asked).toHaveLength(1);
    } finally {
      await client.c.close();
    }
    await stillHeld(p);
  });

  it('clients without elicitation get the pending result and where to approve (stdio, HTTP, and remote mode relaying the upstream’s)', async () => {
    const opens = [
      () => stdioClient('v2-legacy', s.dataDir, s.rootToken),
      () => httpClient('v2-modern', s.url, s.rootToken),
      () => stdioClient('v1', s.dataDir, s.rootToken),
      // berth mcp --api-url: the upstream's 202 is answered as local mode answers a held call.
      () => remoteClient('v2-modern', s.url, s.rootToken),
    ];
    for (const open of opens) {
      const p = await project('no-elicit');
      const c = await open();
      try {
        const r = await c.callTool('delete_project', { uuid: p });
        expectPending(r, p);
        expect(String(errorBody(r).hint)).toContain('get_approval');
      } finally {
        await c.close();
      }
      await stillHeld(p);
    }
  });

  describe('in the 2026 era (input_required, the call sent again)', () => {
    it('URL mode over HTTP: the client opens the approval page, an owner approves with the CLI on the host, the call sent again finishes once', async () => {
      const member = await s.token({ permissions: ['read', 'write'], role: 'member', email: 'mrtr-url@example.test' });
      const p = await project('mrtr-url');
      let decided: Promise<unknown> | undefined;
      const client = await v2Client(member.token, { url: {} }, 'modern-http', (params) => {
        const uuid = String(params.url).split('/').pop()!;
        decided = runBerth(['approvals', 'approve', uuid, '--email', s.ownerEmail, '--data', s.dataDir], { cwd: s.dataDir, env: { LOG_LEVEL: 'silent', ...storeEnv(s.dataDir) } });
        return { action: 'accept' };
      });
      try {
        const r = await client.callTool('delete_project', { uuid: p });
        expect(r.isError, JSON.stringify(r)).toBeFalsy();
      } finally {
        await decided;
        await client.c.close();
      }
      expect(client.asked).toHaveLength(1);
      expect(client.asked[0]).toMatchObject({ mode: 'url', url: expect.stringMatching(/\/approvals\/[a-z0-9]{24}$/) });
      expect(await exists(p)).toBe(false);
      expect(await approvalOf(p)).toMatchObject({ status: 'succeeded', decided_via: 'cli' });
    });

    it('a call sent again under its held call’s requestState with other arguments is refused, not answered with the held call’s result', async () => {
      const held = await project('mrtr-same-1');
      const other = await project('mrtr-same-2');
      const first = await call(s.url, 'POST', '/mcp', {
        token: s.rootToken,
        body: { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'delete_project', arguments: { uuid: held } } },
        headers: { accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25', 'x-berth-toolsets': 'all' },
      });
      const uuid = /"uuid\\?":\\?"([a-z0-9]{24})/.exec(first.text)?.[1];
      expect(uuid, first.text).toBeTruthy();
      const cli = await runBerth(['approvals', 'approve', uuid!, '--email', s.ownerEmail, '--data', s.dataDir], { cwd: s.dataDir, env: { LOG_LEVEL: 'silent', ...storeEnv(s.dataDir) } });
      expect(cli.code, cli.stderr).toBe(0);
      expect(await exists(held)).toBe(false);
      // The same token, the same state, another project: its answer must not be "Project deleted."
      const { c } = await v2Client(s.rootToken, { url: {} }, 'modern-http');
      try {
        const r = (await c.callTool({ name: 'delete_project', arguments: { uuid: other }, inputResponses: {}, requestState: `berth-approval:${uuid}` } as never)) as ToolResult;
        expect(errorBody(r).errors).toMatchObject({ requestState: [expect.stringMatching(/does not name a call of this token/)] });
      } finally {
        await c.close();
      }
      expect(await exists(other)).toBe(true);
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
      const { c } = await v2Client(other.token, { form: {} }, 'modern-http');
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
      await stillHeld(p);
    });
  });
});
