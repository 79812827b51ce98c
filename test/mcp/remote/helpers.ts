import { spawn } from 'node:child_process';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as V1StdioTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { CLI, type AnyClient, type ClientKind } from '../../helpers/mcp.js';

export interface RemoteClient extends AnyClient {
  /** What `berth mcp --api-url` wrote on stderr so far. */
  stderr(): string;
}

/** `berth mcp --api-url <url>` over stdio, driven by a real SDK client. */
export async function remoteClient(kind: ClientKind, apiUrl: string, token: string, args: string[] = [], env: Record<string, string> = {}): Promise<RemoteClient> {
  const params = {
    command: process.execPath,
    args: [CLI, 'mcp', '--api-url', apiUrl, ...(args.includes('--toolsets') ? [] : ['--toolsets', 'all']), ...args],
    env: { PATH: process.env.PATH ?? '', BERTH_TOKEN: token, LOG_LEVEL: 'warn', ...env },
    stderr: 'pipe' as const,
  };
  let err = '';
  if (kind === 'v1') {
    const t = new V1StdioTransport(params);
    t.stderr?.on('data', (d: Buffer) => (err += d));
    const c = new V1Client({ name: 'berth-remote-test-v1', version: '1.0.0' });
    await c.connect(t).catch((e: Error) => {
      throw new Error(`${e.message}; stderr: ${err}`);
    });
    return {
      listTools: () => c.listTools() as never,
      callTool: (name, a = {}, onprogress) => c.callTool({ name, arguments: a }, undefined, onprogress ? { onprogress, timeout: 120_000 } : { timeout: 120_000 }) as never,
      close: () => c.close(),
      stderr: () => err,
    };
  }
  const t = new StdioClientTransport(params);
  t.stderr?.on('data', (d: Buffer) => (err += d));
  const c = new Client({ name: 'berth-remote-test-v2', version: '1.0.0' }, { versionNegotiation: { mode: kind === 'v2-modern' ? 'auto' : 'legacy' } });
  await c.connect(t).catch((e: Error) => {
    throw new Error(`${e.message}; stderr: ${err}`);
  });
  return {
    listTools: () => c.listTools() as never,
    callTool: (name, a = {}, onprogress) => c.callTool({ name, arguments: a }, onprogress ? { onprogress, timeout: 120_000 } : { timeout: 120_000 }) as never,
    close: () => c.close(),
    stderr: () => err,
  };
}

/** Runs `berth mcp --api-url` with stdin closed at once: for start-up failures. */
export function remoteStart(apiUrl: string | undefined, env: Record<string, string>, timeoutMs = 60_000): Promise<{ out: string; err: string; code: number | null }> {
  return new Promise((resolve, reject) => {
    const args = apiUrl === undefined ? [CLI, 'mcp'] : [CLI, 'mcp', '--api-url', apiUrl];
    const p = spawn(process.execPath, args, { env: { PATH: process.env.PATH, LOG_LEVEL: 'info', ...env } });
    let out = '';
    let err = '';
    const timer = setTimeout(() => {
      p.kill('SIGKILL');
      reject(new Error(`berth mcp --api-url did not exit:\n${err}`));
    }, timeoutMs);
    p.stdout.on('data', (d) => (out += d));
    p.stderr.on('data', (d) => (err += d));
    p.on('close', (code) => {
      clearTimeout(timer);
      resolve({ out, err, code });
    });
    p.stdin.end();
  });
}
