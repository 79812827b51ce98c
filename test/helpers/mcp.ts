import path from 'node:path';
import { Client } from '@modelcontextprotocol/client';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1HttpTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StdioClientTransport as V1StdioTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

import { storeEnv } from './store.js';

export const CLI = path.resolve(import.meta.dirname, '../../dist/bundle/cli.js');

/** What the tests need of a client, whichever SDK generation it comes from. */
export interface AnyClient {
  listTools(): Promise<{ tools: Array<{ name: string; annotations?: Record<string, unknown>; outputSchema?: unknown; inputSchema: unknown; description?: string; title?: string }> }>;
  callTool(name: string, args?: Record<string, unknown>, onprogress?: (p: { progress: number; total?: number; message?: string }) => void): Promise<ToolResult>;
  close(): Promise<void>;
}

export interface ToolResult {
  isError?: boolean;
  content: Array<{ type: string; text?: string }>;
  structuredContent?: Record<string, unknown>;
}

export type ClientKind = 'v2-modern' | 'v2-legacy' | 'v1';
export const CLIENT_KINDS: ClientKind[] = ['v2-modern', 'v2-legacy', 'v1'];

function wrapV2(c: Client): AnyClient {
  return {
    listTools: () => c.listTools() as never,
    callTool: (name, args = {}, onprogress) => c.callTool({ name, arguments: args }, onprogress ? { onprogress } : undefined) as never,
    close: () => c.close(),
  };
}

function wrapV1(c: V1Client): AnyClient {
  return {
    listTools: () => c.listTools() as never,
    callTool: (name, args = {}, onprogress) => c.callTool({ name, arguments: args }, undefined, onprogress ? { onprogress } : undefined) as never,
    close: () => c.close(),
  };
}

export async function httpClient(kind: ClientKind, baseUrl: string, token: string, headers: Record<string, string> = {}): Promise<AnyClient> {
  // A base URL that names the endpoint already (e.g. with ?toolsets=) is used as it is.
  const url = new URL(baseUrl).pathname.startsWith('/mcp') ? new URL(baseUrl) : new URL('/mcp', baseUrl);
  // Tests see every operation unless they ask for a selection; the default list has its own tests.
  const requestInit = { headers: { Authorization: `Bearer ${token}`, 'X-Berth-Toolsets': 'all', ...headers } };
  if (kind === 'v1') {
    const c = new V1Client({ name: 'berth-test-v1', version: '1.0.0' });
    await c.connect(new V1HttpTransport(url, { requestInit }));
    return wrapV1(c);
  }
  const c = new Client({ name: 'berth-test-v2', version: '1.0.0' }, { versionNegotiation: { mode: kind === 'v2-modern' ? 'auto' : 'legacy' } });
  await c.connect(new StreamableHTTPClientTransport(url, { requestInit }));
  return wrapV2(c);
}

export async function stdioClient(kind: ClientKind, dataDir: string, token: string, args: string[] = [], env: Record<string, string> = {}): Promise<AnyClient> {
  const params = {
    command: process.execPath,
    args: [CLI, 'mcp', '--data', dataDir, ...(args.includes('--toolsets') ? [] : ['--toolsets', 'all']), ...args],
    env: { BERTH_TOKEN: token, LOG_LEVEL: 'warn', ...storeEnv(dataDir), ...env },
    stderr: 'pipe' as const,
  };
  if (kind === 'v1') {
    const c = new V1Client({ name: 'berth-test-v1', version: '1.0.0' });
    await c.connect(new V1StdioTransport(params));
    return wrapV1(c);
  }
  const c = new Client({ name: 'berth-test-v2', version: '1.0.0' }, { versionNegotiation: { mode: kind === 'v2-modern' ? 'auto' : 'legacy' } });
  await c.connect(new StdioClientTransport(params));
  return wrapV2(c);
}

/** The JSON error body a failed tool call carries. */
export function errorBody(r: ToolResult): Record<string, unknown> {
  if (!r.isError) throw new Error(`expected an error result, got ${JSON.stringify(r)}`);
  return JSON.parse(r.content[0]!.text!);
}
