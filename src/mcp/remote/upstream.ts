import { Agent } from 'undici';
import { PacedClient } from './paced-client.js';

/** Where the upstream API lives: `https://host[/prefix]`, operation paths (`/api/v1/...`) go after it. */
export interface Upstream {
  /** scheme://host[:port] */
  origin: string;
  /** A path prefix before `/api` (a reverse proxy's sub-path), '' when none. */
  basePath: string;
  /** For messages: the API address as the user would write it. */
  display: string;
}

/**
 * `https://host`, `https://host/api/v1`, `https://host/prefix/api/v1/` all name the same API.
 * Credentials never go in the URL: the token comes from BERTH_TOKEN only.
 */
export function parseApiUrl(raw: string): Upstream {
  let url: URL;
  try {
    url = new URL(raw.trim());
  } catch {
    throw new Error(`--api-url ${JSON.stringify(raw)} is not a URL; use https://host[/api/v1]`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error(`--api-url must be an http:// or https:// URL, not ${url.protocol}`);
  if (url.username || url.password) throw new Error('--api-url must not carry credentials; put the API token in BERTH_TOKEN');
  const basePath = url.pathname.replace(/\/+$/, '').replace(/\/api(\/v1)?$/, '');
  return { origin: url.origin, basePath, display: `${url.origin}${basePath}/api/v1` };
}

export interface UpstreamClientOptions {
  /** Per-request timeout (headers and body), ms. */
  timeoutMs: number;
  /** Past this total wait for one request (429 / Retry-After / backoff), give up with "retry after N s". */
  maxWaitMs: number;
  /** Requests in flight at once. */
  concurrency?: number;
}

export interface UpstreamClient {
  client: PacedClient;
  /** The same pool, no retries: the start-up probe fails fast on a wrong URL. */
  probeClient: PacedClient;
  close(): Promise<void>;
}

/**
 * The one HTTP client of remote mode: an undici keep-alive pool (connect, header and body
 * timeouts) under the paced client (Bottleneck, Retry-After / X-RateLimit-Reset, full-jitter
 * backoff, no automatic retries of writes). The token is the only credential it sends.
 */
export function connectUpstream(upstream: Upstream, token: string, opts: UpstreamClientOptions): UpstreamClient {
  const concurrency = opts.concurrency ?? 4;
  const agent = new Agent({
    connections: concurrency * 2,
    keepAliveTimeout: 30_000,
    keepAliveMaxTimeout: 120_000,
    connect: { timeout: Math.min(opts.timeoutMs, 10_000) },
    headersTimeout: opts.timeoutMs,
    bodyTimeout: opts.timeoutMs,
  });
  const paced = (maxRetries: number) =>
    new PacedClient({
      baseUrl: upstream.origin,
      headers: { authorization: `Bearer ${token}`, accept: 'application/json, text/plain;q=0.9', 'user-agent': 'berth-mcp-remote' },
      concurrency,
      maxRetries,
      maxWaitMs: opts.maxWaitMs,
      timeoutMs: opts.timeoutMs,
      dispatcher: agent,
    });
  const client = paced(4);
  const probeClient = paced(0);
  return {
    client,
    probeClient,
    async close() {
      await client.close();
      await probeClient.close();
      await agent.close().catch(() => undefined);
    },
  };
}

/** A network failure in one line: the error's code (ECONNREFUSED, UND_ERR_...) and its message. */
export function describeNetworkError(err: unknown): { code?: string; text: string } {
  const e = err as (Error & { code?: string; cause?: Error & { code?: string } }) | undefined;
  const code = e?.code ?? e?.cause?.code;
  const message = e?.cause?.message && e.cause.message !== e.message ? `${e?.message}: ${e.cause.message}` : (e?.message ?? String(err));
  return { code, text: code && !message.includes(code) ? `${code}: ${message}` : message };
}
