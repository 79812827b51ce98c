import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Agent, request, type Dispatcher } from 'undici';
import { loadConfig, type Config } from '../../src/config/config.js';
import * as admin from '../../src/core/admin.js';
import { startServer, type RunningServer, type ServerOptions } from '../../src/serve.js';
import { openStore, type Db } from '../../src/store/db.js';
import { seedStore, storeUrlFor } from './store.js';

export function tempDir(prefix = 'berth-test-'): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

export interface TestServer extends RunningServer {
  dataDir: string;
  /** A second handle on the same store file, for arranging data the API cannot create. */
  db: Db;
  rootToken: string;
  rootTeamId: number;
  ownerEmail: string;
  /** A token for a new member of a team (created with the CLI's admin functions). */
  token(opts: { permissions: string[]; team?: string | number; email?: string; role?: 'owner' | 'admin' | 'member'; expires?: string }): Promise<{ id: number; token: string }>;
  /** A new team with its own owner; returns its id and a root token of its owner. */
  team(name: string): Promise<{ id: number; ownerEmail: string; rootToken: string }>;
  stop(): Promise<void>;
}

let seq = 0;

/** Cloud providers' APIs at .invalid addresses: what every test server (and a test's `berth mcp`) uses unless it brings a stand-in. */
export const OFFLINE_CLOUD = { BERTH_HETZNER_API_URL: 'https://hetzner.invalid/v1', BERTH_DIGITALOCEAN_API_URL: 'https://digitalocean.invalid/v2', BERTH_VULTR_API_URL: 'https://vultr.invalid/v2' };

/** A real berth server on an ephemeral loopback port over a fresh data directory. */
export async function startTestServer(overrides: Partial<Config> = {}, env: NodeJS.ProcessEnv = {}, options: ServerOptions = {}): Promise<TestServer> {
  const dataDir = tempDir();
  seedStore(dataDir);
  const db = await openStore(dataDir, storeUrlFor(dataDir));
  const init = await admin.initInstance(db, { email: 'owner@example.test', team: 'Root Team' });
  // Cloud providers' APIs never answer here (.invalid fails at once, offline); a test that needs one starts its own stand-in.
  const config = loadConfig({ LOG_LEVEL: 'silent', ...OFFLINE_CLOUD, ...env }, { dataDir, databaseUrl: storeUrlFor(dataDir), host: '127.0.0.1', port: 0, ...overrides });
  const server = await startServer(config, () => {}, options);
  const helper: TestServer = {
    ...server,
    dataDir,
    db,
    rootToken: init.token,
    rootTeamId: init.team.id,
    ownerEmail: init.user.email,
    async token({ permissions, team = init.team.id, email, role = 'member', expires = 'never' }) {
      const addr = email ?? `user${++seq}-${process.pid}@example.test`;
      if (!(await db.selectFrom('users').select('id').where('email', '=', addr).executeTakeFirst())) {
        await admin.createUser(db, { email: addr });
      }
      await admin.addMember(db, { team: String(team), email: addr, role });
      const t = await admin.createToken(db, { email: addr, team: String(team), name: 'test', permissions: permissions as never, expires: expires as never });
      return { id: t.id, token: t.token };
    },
    async team(name) {
      const ownerEmail = `owner-${name.toLowerCase().replace(/\W+/g, '-')}-${++seq}@example.test`;
      await admin.createUser(db, { email: ownerEmail });
      const t = await admin.createTeam(db, { name, owner: ownerEmail });
      const tok = await admin.createToken(db, { email: ownerEmail, team: String(t.id), name: 'root', permissions: ['root'], expires: 'never' });
      return { id: t.id, ownerEmail, rootToken: tok.token };
    },
    async stop() {
      await server.close();
      await db.destroy();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
  return helper;
}

export interface Reply {
  status: number;
  headers: Record<string, string>;
  text: string;
  json: any;
}

export interface CallOptions {
  token?: string;
  body?: unknown;
  headers?: Record<string, string>;
  /** Local address to connect from (any of 127.0.0.0/8 routes to loopback on Linux). */
  from?: string;
}

const agents = new Map<string, Dispatcher>();
function agentFor(from: string | undefined): Dispatcher | undefined {
  if (!from) return undefined;
  let a = agents.get(from);
  if (!a) agents.set(from, (a = new Agent({ localAddress: from })));
  return a;
}

/** One real HTTP request; the body, when given, is sent as JSON (a string is sent as is). */
export async function call(base: string, method: string, path: string, opts: CallOptions = {}): Promise<Reply> {
  const headers: Record<string, string> = { ...(opts.headers ?? {}) };
  if (opts.token !== undefined) headers.authorization = `Bearer ${opts.token}`;
  let body: string | undefined;
  if (opts.body !== undefined) {
    body = typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body);
    headers['content-type'] ??= 'application/json';
  }
  let res: Dispatcher.ResponseData;
  let text: string;
  try {
    res = await request(base + path, { method: method as never, headers, body, dispatcher: agentFor(opts.from) });
    text = await res.body.text();
  } catch (err) {
    // A connection error names no request by itself (a bare "read ECONNRESET" was all a failed run showed).
    throw new Error(`${method} ${base}${path}: ${(err as Error).message}`, { cause: err });
  }
  let json: unknown;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  return { status: res.statusCode, headers: res.headers as Record<string, string>, text, json };
}
