/**
 * The Docker Engine API client's transport, over undici: unix socket, plain TCP, or TCP with TLS
 * client certificates. The calls of each area of the API are one class each in this folder
 * (images, networks and volumes, containers, exec and archives in client.ts), each extending the
 * one before, so EngineClient is every area at once. Works against Docker and podman alike.
 *
 * - The API version is negotiated once per client (`GET /version`): the engine's ApiVersion,
 *   capped at the newest version this client is written against.
 * - Every call has a timeout: short for metadata, none for calls that legitimately block (wait,
 *   archive uploads, which are watched for idleness instead).
 * - Idempotent calls (GET/HEAD, DELETE, stop) are retried a bounded number of times with
 *   exponential backoff and jitter on transport failures and 429/502/503/504. Nothing that
 *   creates, starts or uploads is ever retried.
 * - Failures are typed: EngineUnreachableError (no connection), EngineTimeoutError,
 *   NotFoundError (404), ConflictError (409), EngineError (anything else, with the status and
 *   the engine's own message).
 */
import type { LookupFunction, Socket } from 'node:net';
import type { Duplex, Readable } from 'node:stream';
import { Pool, type Dispatcher } from 'undici';
import { ConflictError, EngineError, EngineTimeoutError, EngineUnreachableError, NotFoundError } from '../engine-errors.js';
import { backoffDelay, DEFAULT_RETRY, sleepWithSignal, type RetryOptions } from '../retry.js';
import type { TlsClientOptions, VersionInfo } from '../../core/model/container-spec.js';

/** Newest Docker API version this client is written against; newer engines are spoken to in it. */
export const MAX_API_VERSION = '1.47';
/** Oldest engine API this client accepts (Docker 19.03; podman 4 reports 1.41). */
export const MIN_API_VERSION = '1.40';

export interface EngineTimeouts {
  /** TCP/unix connect (and TLS handshake). */
  connectMs: number;
  /** Headers and body of metadata calls (inspect, list, create, start, remove, …). */
  metadataMs: number;
  /** Until the engine starts answering an archive download or an image pull. */
  streamHeadersMs: number;
  /** Longest silence in the middle of an archive or pull stream (either direction). */
  streamIdleMs: number;
}

export const DEFAULT_TIMEOUTS: EngineTimeouts = {
  connectMs: 5_000,
  metadataMs: 20_000,
  streamHeadersMs: 60_000,
  streamIdleMs: 5 * 60_000,
};

export interface EngineClientOptions {
  /**
   * `unix:///var/run/docker.sock`, `tcp://host:2376` (plain, or TLS when `tls` is given),
   * `http(s)://host:port`; or any name for messages when `dial` makes the connections.
   */
  endpoint: string;
  /** Makes each connection to the engine (an SSH channel, say) instead of a socket to `endpoint`. */
  dial?: (signal?: AbortSignal) => Promise<Duplex>;
  /** Name resolution for tcp endpoints (a guard that refuses some addresses). */
  lookup?: LookupFunction;
  tls?: TlsClientOptions;
  timeouts?: Partial<EngineTimeouts>;
  retry?: Partial<RetryOptions>;
  /** Cap of the negotiated API version (defaults to MAX_API_VERSION). */
  maxApiVersion?: string;
  /** Connections kept to the engine (archive streams each hold one for their duration). */
  connections?: number;
}

export interface CallOptions {
  signal?: AbortSignal;
}

export type Query = Record<string, string | number | boolean | undefined>;
export type Filters = Record<string, string[]>;

/** One line of `GET /events` (the fields berth reads). */
export interface EngineEvent {
  Type?: string;
  Action?: string;
  status?: string;
  id?: string;
  Actor?: { ID?: string; Attributes?: Record<string, string> };
  time?: number;
  timeNano?: number;
}

export interface RequestSpec {
  method: Dispatcher.HttpMethod;
  /** Path without the version prefix. */
  path: string;
  query?: Query;
  /** JSON body, or a stream sent as is. */
  json?: unknown;
  stream?: Readable;
  headers?: Record<string, string>;
  /** Prefix the path with the negotiated `/vX.Y` (default true). */
  versioned?: boolean;
  /** Retry on transport failures and 429/502/503/504 (default: GET, HEAD and DELETE). */
  idempotent?: boolean;
  /** Statuses >= 300 that are answers, not errors (304 of stop/start, 404 of remove). */
  accept?: number[];
  headersTimeoutMs?: number;
  bodyTimeoutMs?: number;
  signal?: AbortSignal;
}

export interface Response {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Dispatcher.ResponseData['body'];
}

const CONNECT_ERROR_CODES = new Set(['ENOENT', 'ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'EHOSTDOWN', 'EACCES', 'ENOTFOUND', 'EAI_AGAIN', 'ENOTSOCK', 'EADDRNOTAVAIL', 'UND_ERR_CONNECT_TIMEOUT']);
const BROKEN_CONNECTION_CODES = new Set(['UND_ERR_SOCKET', 'ECONNRESET', 'EPIPE', 'UND_ERR_CLOSED']);
const TIMEOUT_CODES = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);
const RETRYABLE_STATUSES = new Set([429, 502, 503, 504]);

export function compareApiVersions(a: string, b: string): number {
  const pa = a.split('.').map(Number);
  const pb = b.split('.').map(Number);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (d !== 0) return d < 0 ? -1 : 1;
  }
  return 0;
}

export interface ParsedEndpoint {
  origin: string;
  socketPath?: string;
  host?: string;
}

export function parseEndpoint(endpoint: string, tls: boolean): ParsedEndpoint {
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    throw new TypeError(`invalid engine endpoint ${JSON.stringify(endpoint)}: expected unix:///path or tcp://host:port`);
  }
  switch (url.protocol) {
    case 'unix:': {
      const socketPath = decodeURIComponent(url.pathname);
      if (!socketPath.startsWith('/')) throw new TypeError(`invalid engine endpoint ${endpoint}: unix socket path must be absolute`);
      if (tls) throw new TypeError('TLS is for tcp:// endpoints, not unix sockets');
      return { origin: 'http://localhost', socketPath };
    }
    case 'tcp:':
    case 'http:':
    case 'https:': {
      if (!url.hostname || !url.port) {
        if (url.protocol === 'tcp:') throw new TypeError(`invalid engine endpoint ${endpoint}: expected tcp://host:port`);
      }
      const secure = tls || url.protocol === 'https:';
      if (url.protocol === 'http:' && tls) throw new TypeError('TLS options given for an http:// endpoint');
      return { origin: `${secure ? 'https' : 'http'}://${url.host}`, host: url.hostname.replace(/^\[|\]$/g, '') };
    }
    default:
      throw new TypeError(`invalid engine endpoint ${endpoint}: unsupported scheme ${url.protocol}`);
  }
}

export function encodeQuery(query: Query | undefined): string {
  if (!query) return '';
  const parts: string[] = [];
  for (const [k, v] of Object.entries(query)) {
    if (v === undefined) continue;
    parts.push(`${encodeURIComponent(k)}=${encodeURIComponent(typeof v === 'boolean' ? (v ? '1' : '0') : String(v))}`);
  }
  return parts.length ? `?${parts.join('&')}` : '';
}

export function filtersParam(filters: Filters | undefined): string | undefined {
  if (!filters) return undefined;
  const entries = Object.entries(filters).filter(([, v]) => v.length > 0);
  return entries.length ? JSON.stringify(Object.fromEntries(entries)) : undefined;
}

/** `{a: 'b', c: true}` or `['a=b', 'c']` → Docker's `label` filter values. */
export function labelFilter(labels: Record<string, string | true> | string[] | undefined): string[] {
  if (!labels) return [];
  if (Array.isArray(labels)) return labels;
  return Object.entries(labels).map(([k, v]) => (v === true ? k : `${k}=${v}`));
}

export const id = (s: string) => encodeURIComponent(s);

/** Splits an image reference into Docker's fromImage/tag pair, defaulting the tag to `latest` (never "all tags"). */
export function splitImageRef(ref: string): { fromImage: string; tag: string } {
  const at = ref.indexOf('@');
  if (at >= 0) return { fromImage: ref.slice(0, at), tag: ref.slice(at + 1) };
  const slash = ref.lastIndexOf('/');
  const colon = ref.lastIndexOf(':');
  if (colon > slash) return { fromImage: ref.slice(0, colon), tag: ref.slice(colon + 1) };
  return { fromImage: ref, tag: 'latest' };
}

/** Converts Go's os.FileMode bits (as in X-Docker-Container-Path-Stat) to Unix mode bits. */
export function goFileModeToUnix(mode: number): number {
  let unix = mode & 0o777;
  if (mode & (1 << 23)) unix |= 0o4000; // ModeSetuid
  if (mode & (1 << 22)) unix |= 0o2000; // ModeSetgid
  if (mode & (1 << 20)) unix |= 0o1000; // ModeSticky
  return unix;
}

export function header(res: Response, name: string): string | undefined {
  const v = res.headers[name.toLowerCase()];
  return Array.isArray(v) ? v[0] : v;
}

/** The connection, version negotiation, retries and typed errors every area's calls go through. */
export class EngineTransport {
  readonly endpoint: string;
  protected readonly pool: Pool;
  protected readonly origin: string;
  protected readonly timeouts: EngineTimeouts;
  protected readonly retry: RetryOptions;
  protected readonly maxApiVersion: string;
  protected negotiated: Promise<string> | null = null;
  protected closed = false;

  constructor(opts: EngineClientOptions) {
    this.endpoint = opts.endpoint;
    this.timeouts = { ...DEFAULT_TIMEOUTS, ...opts.timeouts };
    this.retry = { ...DEFAULT_RETRY, ...opts.retry };
    this.maxApiVersion = opts.maxApiVersion ?? MAX_API_VERSION;
    const connections = opts.connections ?? 8;
    if (opts.dial) {
      const dial = opts.dial;
      this.origin = 'http://localhost';
      this.pool = new Pool(this.origin, {
        connections,
        connect: (_options, callback) => {
          dial().then(
            (stream) => callback(null, stream as Socket),
            (err: Error) => callback(err, null),
          );
        },
      });
      return;
    }
    const parsed = parseEndpoint(opts.endpoint, opts.tls !== undefined);
    this.origin = parsed.origin;
    const tls = opts.tls;
    const isIp = parsed.host !== undefined && /^[\d.]+$|:/.test(parsed.host);
    this.pool = new Pool(parsed.origin, {
      connections,
      connect: {
        timeout: this.timeouts.connectMs,
        ...(opts.lookup ? { lookup: opts.lookup } : {}),
        ...(parsed.socketPath ? { socketPath: parsed.socketPath } : {}),
        ...(tls
          ? {
              ...(tls.ca ? { ca: tls.ca } : {}),
              ...(tls.cert ? { cert: tls.cert } : {}),
              ...(tls.key ? { key: tls.key } : {}),
              rejectUnauthorized: tls.rejectUnauthorized ?? true,
              ...(tls.servername ? { servername: tls.servername } : !isIp && parsed.host ? { servername: parsed.host } : {}),
            }
          : {}),
      },
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.pool.close();
  }

  /** Closes immediately, aborting calls in flight. */
  async destroy(): Promise<void> {
    this.closed = true;
    await this.pool.destroy();
  }

  // ---------------------------------------------------------------- transport

  protected async apiPrefix(signal?: AbortSignal): Promise<string> {
    if (!this.negotiated) {
      const p = this.negotiate(signal);
      this.negotiated = p;
      // A failed negotiation (engine down) is retried by the next call, not cached.
      p.catch(() => {
        if (this.negotiated === p) this.negotiated = null;
      });
    }
    return `/v${await this.negotiated}`;
  }

  protected async negotiate(signal?: AbortSignal): Promise<string> {
    const v = await this.version({ signal });
    const engine = v.ApiVersion;
    if (!engine || !/^\d+\.\d+$/.test(engine)) {
      throw new EngineError(`engine ${this.endpoint} reported no usable ApiVersion (${JSON.stringify(engine)})`, {
        endpoint: this.endpoint,
        method: 'GET',
        path: '/version',
      });
    }
    const chosen = compareApiVersions(engine, this.maxApiVersion) <= 0 ? engine : this.maxApiVersion;
    if (compareApiVersions(chosen, MIN_API_VERSION) < 0) {
      throw new EngineError(`engine ${this.endpoint} speaks API ${engine}, older than the minimum supported ${MIN_API_VERSION}`, {
        endpoint: this.endpoint,
      });
    }
    if (v.MinAPIVersion && compareApiVersions(chosen, v.MinAPIVersion) < 0) {
      throw new EngineError(`engine ${this.endpoint} requires API ${v.MinAPIVersion} or newer; this client speaks up to ${this.maxApiVersion}`, { endpoint: this.endpoint });
    }
    return chosen;
  }

  /** The API version calls are made with (negotiating it on first use). */
  async apiVersion(opts: CallOptions = {}): Promise<string> {
    return (await this.apiPrefix(opts.signal)).slice(2);
  }

  protected mapTransportError(err: unknown, spec: RequestSpec): unknown {
    if (err instanceof EngineError) return err;
    if (spec.signal?.aborted) return spec.signal.reason ?? err;
    const e = err as { code?: string; message?: string; name?: string; syscall?: string };
    const code = e?.code;
    const details = { endpoint: this.endpoint, method: spec.method, path: spec.path, cause: err };
    if (e?.name === 'AbortError') return err;
    // The SSH layer and the address guard explain themselves in words (ssh/connection.ts).
    if (code === 'BERTH_SSH' || code === 'BERTH_ADDRESS_REFUSED') {
      return new EngineUnreachableError({ ...details, code, reason: e?.message ?? String(err), permanent: (err as { permanent?: boolean }).permanent === true });
    }
    if ((code && CONNECT_ERROR_CODES.has(code)) || e?.syscall === 'connect' || (code && /^(ERR_TLS_|ERR_SSL_|CERT_|UNABLE_TO_|DEPTH_ZERO|SELF_SIGNED)/.test(code))) {
      return new EngineUnreachableError({ ...details, ...(code ? { code } : {}), reason: e?.message ?? String(err) });
    }
    if (code && TIMEOUT_CODES.has(code)) {
      return new EngineTimeoutError(`engine ${this.endpoint} did not answer ${spec.method} ${spec.path} in time (${code})`, details);
    }
    if (code && BROKEN_CONNECTION_CODES.has(code)) {
      return new EngineUnreachableError({
        ...details,
        code,
        reason: `connection closed before the engine answered ${spec.method} ${spec.path}`,
      });
    }
    return new EngineError(`${spec.method} ${spec.path} on engine ${this.endpoint} failed: ${e?.message ?? String(err)}`, details);
  }

  protected async errorFromResponse(res: Response, spec: RequestSpec): Promise<EngineError> {
    let text = '';
    try {
      text = await res.body.text();
    } catch {
      /* the status is enough */
    }
    let engineMessage = text.trim();
    try {
      const parsed = JSON.parse(text) as { message?: unknown };
      if (typeof parsed.message === 'string') engineMessage = parsed.message;
    } catch {
      /* not JSON */
    }
    if (engineMessage.length > 2_000) engineMessage = `${engineMessage.slice(0, 2_000)}…`;
    const details = { endpoint: this.endpoint, method: spec.method, path: spec.path, status: res.status, engineMessage };
    const message = `${spec.method} ${spec.path} on engine ${this.endpoint}: ${res.status} ${engineMessage || '(no message)'}`;
    if (res.status === 404) return new NotFoundError(message, details);
    if (res.status === 409) return new ConflictError(message, details);
    return new EngineError(message, details);
  }

  protected async request(spec: RequestSpec): Promise<Response> {
    if (this.closed) throw new EngineError(`engine client for ${this.endpoint} is closed`, { endpoint: this.endpoint });
    const idempotent = spec.idempotent ?? (spec.method === 'GET' || spec.method === 'HEAD' || spec.method === 'DELETE');
    if (spec.stream && idempotent) throw new Error('a streamed body cannot be retried'); // programming error
    // Negotiation is a GET /version with its own retries; its failure is not retried again here.
    const prefix = spec.versioned === false ? '' : await this.apiPrefix(spec.signal);
    for (let attempt = 0; ; attempt++) {
      let failure: unknown;
      let retryable = false;
      try {
        const headers: Record<string, string> = { ...spec.headers };
        let body: string | Readable | undefined;
        if (spec.json !== undefined) {
          body = JSON.stringify(spec.json);
          headers['content-type'] = 'application/json';
        } else if (spec.stream) {
          body = spec.stream;
        }
        const res = await this.pool.request({
          origin: this.origin,
          method: spec.method,
          path: prefix + spec.path + encodeQuery(spec.query),
          headers,
          body: body ?? null,
          headersTimeout: spec.headersTimeoutMs ?? this.timeouts.metadataMs,
          bodyTimeout: spec.bodyTimeoutMs ?? this.timeouts.metadataMs,
          signal: spec.signal ?? null,
        });
        const response: Response = { status: res.statusCode, headers: res.headers, body: res.body };
        if (res.statusCode < 300 || spec.accept?.includes(res.statusCode)) return response;
        failure = await this.errorFromResponse(response, spec);
        retryable = RETRYABLE_STATUSES.has(res.statusCode);
      } catch (err) {
        failure = this.mapTransportError(err, spec);
        retryable = (failure instanceof EngineUnreachableError && !failure.permanent) || failure instanceof EngineTimeoutError;
      }
      if (!idempotent || !retryable || attempt >= this.retry.retries || spec.signal?.aborted || this.closed) throw failure;
      try {
        await sleepWithSignal(backoffDelay(attempt, this.retry), spec.signal);
      } catch (err) {
        throw spec.signal?.aborted ? spec.signal.reason : err;
      }
    }
  }

  protected async json<T>(spec: RequestSpec): Promise<T> {
    const res = await this.request(spec);
    try {
      return (await res.body.json()) as T;
    } catch (err) {
      throw this.mapTransportError(err, spec);
    }
  }

  protected async empty(spec: RequestSpec): Promise<number> {
    const res = await this.request(spec);
    await res.body.dump().catch(() => undefined);
    return res.status;
  }

  // ---------------------------------------------------------------- system

  /** `GET /_ping` (unversioned): resolves when the engine answers OK. */
  async ping(opts: CallOptions = {}): Promise<void> {
    const res = await this.request({ method: 'GET', path: '/_ping', versioned: false, signal: opts.signal });
    const text = (await res.body.text()).trim();
    if (text !== 'OK') {
      // Not echoed: whatever answered is not ours to repeat.
      throw new EngineError(`engine ${this.endpoint} answered /_ping with something other than OK (${text.length} bytes)`, {
        endpoint: this.endpoint,
        method: 'GET',
        path: '/_ping',
        status: res.status,
      });
    }
  }

  /** `GET /version` (unversioned). */
  async version(opts: CallOptions = {}): Promise<VersionInfo> {
    return this.json<VersionInfo>({ method: 'GET', path: '/version', versioned: false, signal: opts.signal });
  }
}
