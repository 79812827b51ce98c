// The soak bench's client side of three `berth serve` instances: a simple client-side round robin
// over REST (undici) and MCP (the real SDK clients over streamable HTTP), every answer classified.
//
// Outcome classes, which decide what the ledger may assume about a write:
//   ok       2xx: acknowledged, must hold.
//   503      the contract's "unavailable" (REST status, or the MCP error body / HTTP status):
//            must have written nothing.
//   4xx      a refusal (404/409/422...): wrote nothing.
//   500      an internal error: outcome unknown (the issue saw one where 503 was due).
//   unknown  the request left and no answer came back (connection cut, instance killed,
//            timeout): it may or may not have been applied.
//   notsent  every instance refused the connection (or, for MCP, the client could not connect or
//            initialize): the call itself was never sent.
// A refused connection is retried on the next instance at once (nothing was sent), as a load
// balancer would; nothing else is retried.
import { Client } from '@modelcontextprotocol/client';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1HttpTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Pool } from 'undici';

const REQUEST_TIMEOUT_MS = 30_000;

/** True when nothing can have been sent: the connection itself was refused. */
function refused(err) {
  for (let e = err, i = 0; e && i < 6; e = e.cause, i++) {
    if (e.notSent) return true;
    if (e.code === 'ECONNREFUSED' || /ECONNREFUSED/.test(String(e.message))) return true;
    if (Array.isArray(e.errors) && e.errors.some((x) => x?.code === 'ECONNREFUSED')) return true;
  }
  return false;
}

function classifyStatus(status) {
  if (status >= 200 && status < 300) return 'ok';
  if (status === 503) return '503';
  if (status >= 500) return '500';
  return '4xx';
}

/** The status an MCP error body stands for (the REST door's body, plus retry_after/hint). */
function mcpErrorStatus(body) {
  const m = String(body?.message ?? '');
  if (/unavailable/i.test(m)) return 503;
  if (m === 'Internal server error.') return 500;
  if (/not found/i.test(m)) return 404;
  if (/already exists|cannot be deleted|conflict/i.test(m)) return 409;
  if (m === 'Validation error.') return 422;
  if (/too many/i.test(m)) return 429;
  return 400;
}

export class Cluster {
  /** @param {{ urls: string[], token: string }} o */
  constructor({ urls, token }) {
    this.urls = urls;
    this.token = token;
    this.rr = 0;
    this.pools = urls.map((u) => new Pool(u, { connections: 32, headersTimeout: REQUEST_TIMEOUT_MS, bodyTimeout: REQUEST_TIMEOUT_MS }));
    /** Per instance: latencies (ms) of answered requests in the current sample window, and errors. */
    this.windows = urls.map(() => ({ lat: [], errors: 0 }));
    this.counts = {};
    /** When each 503 came and how long it took (how fast an outage is reported). */
    this.answers503 = [];
  }

  count(proto, kind, outcome) {
    const k = `${proto} ${kind} ${outcome}`;
    this.counts[k] = (this.counts[k] ?? 0) + 1;
  }

  /** Takes the current window of each instance and starts a new one. */
  takeWindows() {
    const w = this.windows;
    this.windows = this.urls.map(() => ({ lat: [], errors: 0 }));
    return w;
  }

  async #roundRobin(attempt) {
    for (let tries = 0; tries < this.urls.length; tries++) {
      const i = this.rr++ % this.urls.length;
      const t0 = performance.now();
      try {
        const r = await attempt(i);
        const ms = performance.now() - t0;
        this.windows[i].lat.push(ms);
        if (r.outcome !== 'ok' && r.outcome !== '4xx') this.windows[i].errors++;
        if (r.outcome === '503') this.answers503.push({ at: Date.now(), ms });
        return { ...r, inst: i, ms };
      } catch (err) {
        if (refused(err)) continue;
        this.windows[i].errors++;
        return { outcome: 'unknown', status: 0, error: String(err?.message ?? err).slice(0, 200), inst: i, ms: performance.now() - t0 };
      }
    }
    return { outcome: 'notsent', status: 0, inst: -1, ms: 0 };
  }

  /** One REST request; `kind` is 'read' or 'write' (for the counts). */
  async rest(method, path, body, kind = method === 'GET' ? 'read' : 'write') {
    const r = await this.#roundRobin(async (i) => {
      const res = await this.pools[i].request({
        path,
        method,
        headers: { authorization: `Bearer ${this.token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
        body: body ? JSON.stringify(body) : undefined,
      });
      const text = await res.body.text();
      let json;
      try {
        json = text ? JSON.parse(text) : undefined;
      } catch {
        json = undefined;
      }
      return { outcome: classifyStatus(res.statusCode), status: res.statusCode, json, headers: res.headers };
    });
    this.count('rest', kind, r.outcome);
    return r;
  }

  /** One MCP tools/call through `session`'s SDK client for the chosen instance. */
  async mcp(session, name, args, kind = 'write') {
    const r = await this.#roundRobin(async (i) => {
      let client;
      try {
        client = await session.clientFor(i);
      } catch (err) {
        // No client (connect or initialize failed): the tool call itself was never sent.
        throw Object.assign(new Error(`MCP connect failed: ${err?.message}`), { notSent: true });
      }
      let result;
      try {
        result = await client.call(name, args);
      } catch (err) {
        // An HTTP-level answer (e.g. 503 from the auth door) surfaces as an error with its status.
        // v1: StreamableHTTPError.code is the status; v2: SdkHttpError.data.status (its message has the body only).
        const status = [err?.data?.status, err?.code].find((x) => typeof x === 'number' && x >= 400 && x < 600);
        const code = status ?? Number(/\(HTTP (\d{3})\)/.exec(String(err?.message))?.[1] ?? 0);
        if (code && !refused(err)) {
          session.drop(i); // a fresh client next time: the SDK's state after an HTTP error is its own
          return { outcome: classifyStatus(code), status: code, error: String(err.message).slice(0, 200) };
        }
        session.drop(i);
        throw err;
      }
      if (result.isError) {
        let body;
        try {
          body = JSON.parse(result.content?.[0]?.text ?? '{}');
        } catch {
          body = { message: result.content?.[0]?.text };
        }
        const status = mcpErrorStatus(body);
        return { outcome: classifyStatus(status), status, json: body };
      }
      return { outcome: 'ok', status: 200, json: result.structuredContent };
    });
    this.count('mcp', kind, r.outcome);
    return r;
  }

  /** An MCP session of one virtual client: one SDK client per instance, made when first needed. */
  session(era) {
    const cluster = this;
    const clients = new Map();
    return {
      era,
      async clientFor(i) {
        let c = clients.get(i);
        if (!c) {
          c = connect(era, cluster.urls[i], cluster.token);
          clients.set(i, c);
          c.catch(() => clients.delete(i));
        }
        return c;
      },
      drop(i) {
        const c = clients.get(i);
        clients.delete(i);
        c?.then((x) => x.close()).catch(() => undefined);
      },
      async close() {
        await Promise.all([...clients.values()].map((c) => c.then((x) => x.close()).catch(() => undefined)));
      },
    };
  }

  async close() {
    await Promise.all(this.pools.map((p) => p.close()));
  }
}

/** A real SDK client: v2 in `auto` (modern era) or v1 (legacy era, initialize handshake). */
async function connect(era, base, token) {
  const url = new URL('/mcp', base);
  const requestInit = { headers: { Authorization: `Bearer ${token}`, 'X-Berth-Toolsets': 'all' } };
  if (era === 'legacy') {
    const c = new V1Client({ name: 'berth-soak-v1', version: '1.0.0' });
    await c.connect(new V1HttpTransport(url, { requestInit }));
    return { call: (name, args) => c.callTool({ name, arguments: args }, undefined, { timeout: REQUEST_TIMEOUT_MS }), close: () => c.close() };
  }
  const c = new Client({ name: 'berth-soak-v2', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
  await c.connect(new StreamableHTTPClientTransport(url, { requestInit }));
  return { call: (name, args) => c.callTool({ name, arguments: args }, { timeout: REQUEST_TIMEOUT_MS }), close: () => c.close() };
}
