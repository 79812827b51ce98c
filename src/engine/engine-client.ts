/**
 * A Docker Engine API client over undici: unix socket, plain TCP, or TCP with TLS client
 * certificates. Works against Docker and against podman's Docker-compatible service.
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
import { pipeline, Transform, type Duplex, type Readable } from 'node:stream';
import { Pool, type Dispatcher } from 'undici';
import { demuxDockerStream, looksMultiplexed, type StreamFrame } from './docker-stream.js';
import { ConflictError, EngineError, EngineTimeoutError, EngineUnreachableError, NotFoundError } from './engine-errors.js';
import { backoffDelay, DEFAULT_RETRY, sleepWithSignal, type RetryOptions } from './retry.js';
import { DEFAULT_STOP_TIMEOUT_S } from '../core/model/container-spec.js';
import type {
  ContainerInspect,
  ContainerSpec,
  ContainerSummary,
  ImageInspect,
  LogEntry,
  NetworkInfo,
  PathStat,
  TlsClientOptions,
  VersionInfo,
  VolumeInfo,
  WaitResult,
} from '../core/model/container-spec.js';

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

type Query = Record<string, string | number | boolean | undefined>;
type Filters = Record<string, string[]>;

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

interface RequestSpec {
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

interface Response {
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

interface ParsedEndpoint {
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

function encodeQuery(query: Query | undefined): string {
  if (!query) return '';
  const parts: string[] = [];
  for (const [k, v] of Object.entries(query)) {
    if (v === undefined) continue;
    parts.push(`${encodeURIComponent(k)}=${encodeURIComponent(typeof v === 'boolean' ? (v ? '1' : '0') : String(v))}`);
  }
  return parts.length ? `?${parts.join('&')}` : '';
}

function filtersParam(filters: Filters | undefined): string | undefined {
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

const id = (s: string) => encodeURIComponent(s);

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

function header(res: Response, name: string): string | undefined {
  const v = res.headers[name.toLowerCase()];
  return Array.isArray(v) ? v[0] : v;
}

export class EngineClient {
  readonly endpoint: string;
  private readonly pool: Pool;
  private readonly origin: string;
  private readonly timeouts: EngineTimeouts;
  private readonly retry: RetryOptions;
  private readonly maxApiVersion: string;
  private negotiated: Promise<string> | null = null;
  private closed = false;

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

  private async apiPrefix(signal?: AbortSignal): Promise<string> {
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

  private async negotiate(signal?: AbortSignal): Promise<string> {
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

  private mapTransportError(err: unknown, spec: RequestSpec): unknown {
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

  private async errorFromResponse(res: Response, spec: RequestSpec): Promise<EngineError> {
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

  private async request(spec: RequestSpec): Promise<Response> {
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

  private async json<T>(spec: RequestSpec): Promise<T> {
    const res = await this.request(spec);
    try {
      return (await res.body.json()) as T;
    } catch (err) {
      throw this.mapTransportError(err, spec);
    }
  }

  private async empty(spec: RequestSpec): Promise<number> {
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

  // ---------------------------------------------------------------- images

  async inspectImage(ref: string, opts: CallOptions = {}): Promise<ImageInspect> {
    return this.json<ImageInspect>({ method: 'GET', path: `/images/${encodeURI(ref)}/json`, signal: opts.signal });
  }

  /** `GET /images/json` with a reference filter (a repository name: every tag of it). */
  async listImages(reference: string, opts: CallOptions = {}): Promise<{ Id: string; RepoTags?: string[] | null; Created: number }[]> {
    return this.json({ method: 'GET', path: '/images/json', query: { filters: filtersParam({ reference: [reference] }) }, signal: opts.signal });
  }

  /** `DELETE /images/{ref}` (one tag; the image goes with its last tag); false when there was none. A 409 (in use) throws. */
  async removeImage(ref: string, opts: CallOptions = {}): Promise<boolean> {
    const status = await this.empty({ method: 'DELETE', path: `/images/${encodeURI(ref)}`, accept: [404], signal: opts.signal });
    return status !== 404;
  }

  /**
   * `POST /images/create?fromImage=…`. The engine reports failures inside a 200 stream of JSON
   * progress lines; those become an EngineError with the engine's message. Not retried.
   */
  async pullImage(ref: string, opts: CallOptions & { auth?: { username: string; password: string; serveraddress?: string }; onProgress?: (status: string) => void } = {}): Promise<void> {
    const { fromImage, tag } = splitImageRef(ref);
    const spec: RequestSpec = {
      method: 'POST',
      path: '/images/create',
      query: { fromImage, tag },
      headers: opts.auth ? { 'x-registry-auth': Buffer.from(JSON.stringify(opts.auth)).toString('base64url') } : {},
      headersTimeoutMs: this.timeouts.streamHeadersMs,
      bodyTimeoutMs: this.timeouts.streamIdleMs,
      signal: opts.signal,
    };
    const res = await this.request(spec);
    const handle = (line: string) => {
      if (!line.trim()) return;
      let msg: { error?: string; errorDetail?: { message?: string }; status?: string };
      try {
        msg = JSON.parse(line) as typeof msg;
      } catch {
        return;
      }
      const error = msg.errorDetail?.message ?? msg.error;
      if (error) {
        throw new EngineError(`pulling ${ref} on engine ${this.endpoint} failed: ${error}`, {
          endpoint: this.endpoint,
          method: 'POST',
          path: '/images/create',
          status: res.status,
          engineMessage: error,
        });
      }
      if (msg.status) opts.onProgress?.(msg.status);
    };
    await this.jsonLines(res, spec, handle);
  }

  /** Feeds each line of a JSON-lines progress stream (pull, build) to `handle`, which may throw. */
  private async jsonLines(res: Response, spec: RequestSpec, handle: (line: string) => void): Promise<void> {
    let buffered = '';
    const decoder = new TextDecoder();
    try {
      for await (const chunk of res.body) {
        buffered += decoder.decode(chunk as Buffer, { stream: true });
        let nl: number;
        while ((nl = buffered.indexOf('\n')) >= 0) {
          handle(buffered.slice(0, nl));
          buffered = buffered.slice(nl + 1);
        }
      }
      handle(buffered);
    } catch (err) {
      res.body.destroy();
      throw this.mapTransportError(err, spec);
    }
  }

  /**
   * `POST /build` from a tar context: the image is tagged `tag`. Each output line goes to `onLine`.
   * A failed build still answers 200 with an error line at the end (podman and Docker): that
   * line is thrown as an EngineError with the engine's own words.
   */
  async build(context: Readable, opts: CallOptions & { tag: string; dockerfile: string; onLine?: (line: string) => void }): Promise<void> {
    const spec: RequestSpec = {
      method: 'POST',
      path: '/build',
      query: { t: opts.tag, dockerfile: opts.dockerfile, rm: '1', forcerm: '1' },
      stream: context,
      headers: { 'content-type': 'application/x-tar' },
      headersTimeoutMs: this.timeouts.streamHeadersMs,
      bodyTimeoutMs: this.timeouts.streamIdleMs,
      signal: opts.signal,
    };
    const res = await this.request(spec);
    let failure: string | undefined;
    const handle = (line: string) => {
      if (!line.trim()) return;
      let msg: { stream?: string; error?: string; errorDetail?: { message?: string } };
      try {
        msg = JSON.parse(line) as typeof msg;
      } catch {
        return;
      }
      const error = msg.errorDetail?.message ?? msg.error;
      if (error) failure ??= error;
      const text = (error ?? msg.stream ?? '').replace(/\n$/, '');
      if (text) opts.onLine?.(text);
    };
    await this.jsonLines(res, spec, handle);
    if (failure) throw new EngineError(`the build failed: ${failure}`, { endpoint: this.endpoint, method: 'POST', path: '/build', status: res.status, engineMessage: failure });
  }

  /**
   * `GET /events` for containers (optionally only those carrying `labels`), one callback per
   * event, until the engine closes the stream or `signal` aborts. Resolves when the stream ends
   * (the engine restarted, the connection dropped): the caller reconnects. The stream may stay
   * silent for hours, so no idle timeout applies. Not retried.
   */
  async events(opts: CallOptions & { labels?: Record<string, string | true>; onEvent: (e: EngineEvent) => void; onOpen?: () => void }): Promise<void> {
    const spec: RequestSpec = {
      method: 'GET',
      path: '/events',
      query: { filters: filtersParam({ type: ['container'], label: labelFilter(opts.labels) }) },
      idempotent: false,
      headersTimeoutMs: this.timeouts.streamHeadersMs,
      bodyTimeoutMs: 0,
      signal: opts.signal,
    };
    const res = await this.request(spec);
    opts.onOpen?.();
    await this.jsonLines(res, spec, (line) => {
      if (!line.trim()) return;
      try {
        opts.onEvent(JSON.parse(line) as EngineEvent);
      } catch {
        /* a line that is not an event is skipped */
      }
    });
  }

  /**
   * Runs a container's health check once, now (libpod's `GET /libpod/containers/{name}/healthcheck`):
   * podman without systemd never runs them on its own. The result lands in `.State.Health`.
   * Docker runs its checks itself and has no such endpoint (NotFoundError).
   */
  async runHealthcheck(idOrName: string, opts: CallOptions = {}): Promise<void> {
    try {
      await this.empty({ method: 'GET', path: `/libpod/containers/${id(idOrName)}/healthcheck`, idempotent: false, accept: [409], signal: opts.signal });
    } catch (err) {
      // A check that ran past its timeout is one failed attempt, counted in `.State.Health` like any
      // other (the retries decide when it is unhealthy); podman answers it with a 500.
      if (err instanceof EngineError && err.status === 500 && /exceeded timeout/.test(err.message)) return;
      throw err;
    }
  }

  /** `POST /containers/{id}/kill`; false when it was not running (409) or is gone (404). */
  async killContainer(idOrName: string, opts: CallOptions & { signalName?: string } = {}): Promise<boolean> {
    const status = await this.empty({ method: 'POST', path: `/containers/${id(idOrName)}/kill`, query: { signal: opts.signalName ?? 'SIGKILL' }, accept: [404, 409], signal: opts.signal });
    return status < 300;
  }

  /** `POST /containers/{id}/rename?name=…`. */
  async renameContainer(idOrName: string, name: string, opts: CallOptions = {}): Promise<void> {
    await this.empty({ method: 'POST', path: `/containers/${id(idOrName)}/rename`, query: { name }, signal: opts.signal });
  }

  // ---------------------------------------------------------------- networks

  async createNetwork(name: string, opts: CallOptions & { driver?: string; labels?: Record<string, string>; internal?: boolean; attachable?: boolean } = {}): Promise<{ Id: string }> {
    return this.json<{ Id: string }>({
      method: 'POST',
      path: '/networks/create',
      json: {
        Name: name,
        Driver: opts.driver ?? 'bridge',
        Labels: opts.labels ?? {},
        Internal: opts.internal ?? false,
        Attachable: opts.attachable ?? false,
        CheckDuplicate: true,
      },
      signal: opts.signal,
    });
  }

  async inspectNetwork(nameOrId: string, opts: CallOptions = {}): Promise<NetworkInfo> {
    return this.json<NetworkInfo>({ method: 'GET', path: `/networks/${id(nameOrId)}`, signal: opts.signal });
  }

  /** Resolves true when removed, false when there was no such network. */
  async removeNetwork(nameOrId: string, opts: CallOptions = {}): Promise<boolean> {
    const status = await this.empty({ method: 'DELETE', path: `/networks/${id(nameOrId)}`, accept: [404], signal: opts.signal });
    return status !== 404;
  }

  /** `POST /networks/{id}/connect`: one more network for a container (Docker creates on one only). */
  async connectNetwork(network: string, container: string, opts: CallOptions = {}): Promise<void> {
    await this.empty({ method: 'POST', path: `/networks/${id(network)}/connect`, json: { Container: container }, idempotent: false, signal: opts.signal });
  }

  /** `POST /networks/{id}/disconnect`; false when the container or network is gone (404). */
  async disconnectNetwork(network: string, container: string, opts: CallOptions = {}): Promise<boolean> {
    return (await this.empty({ method: 'POST', path: `/networks/${id(network)}/disconnect`, json: { Container: container, Force: true }, accept: [404], signal: opts.signal })) !== 404;
  }

  async listNetworks(opts: CallOptions = {}): Promise<NetworkInfo[]> {
    return this.json<NetworkInfo[]>({ method: 'GET', path: '/networks', signal: opts.signal });
  }

  // ---------------------------------------------------------------- cleanup

  /** `POST /images/prune`: dangling images only, or (dangling false) every image no container uses. */
  async pruneImages(opts: CallOptions & { danglingOnly: boolean }): Promise<{ deleted: number; reclaimed: number }> {
    const r = await this.json<{ ImagesDeleted?: unknown[] | null; SpaceReclaimed?: number }>({
      method: 'POST',
      path: '/images/prune',
      query: { filters: filtersParam({ dangling: [String(opts.danglingOnly)] }) },
      signal: opts.signal,
    });
    return { deleted: r.ImagesDeleted?.length ?? 0, reclaimed: r.SpaceReclaimed ?? 0 };
  }

  /** `POST /build/prune`; null when the engine has no build cache endpoint. */
  async pruneBuildCache(opts: CallOptions = {}): Promise<{ reclaimed: number } | null> {
    const res = await this.request({ method: 'POST', path: '/build/prune', accept: [404, 405, 501], signal: opts.signal });
    if (res.status >= 300) {
      await res.body.dump().catch(() => undefined);
      return null;
    }
    const r = (await res.body.json()) as { SpaceReclaimed?: number };
    return { reclaimed: r.SpaceReclaimed ?? 0 };
  }

  // ---------------------------------------------------------------- volumes

  async createVolume(name: string, opts: CallOptions & { labels?: Record<string, string>; driver?: string } = {}): Promise<VolumeInfo> {
    return this.json<VolumeInfo>({
      method: 'POST',
      path: '/volumes/create',
      json: { Name: name, Driver: opts.driver ?? 'local', Labels: opts.labels ?? {} },
      signal: opts.signal,
    });
  }

  async inspectVolume(name: string, opts: CallOptions = {}): Promise<VolumeInfo> {
    return this.json<VolumeInfo>({ method: 'GET', path: `/volumes/${id(name)}`, signal: opts.signal });
  }

  /** Resolves true when removed, false when there was no such volume. 409 (in use) throws ConflictError. */
  async removeVolume(name: string, opts: CallOptions & { force?: boolean } = {}): Promise<boolean> {
    // A forced removal answers 204 for a volume the engine does not have (Docker and podman
    // alike), and delete would report removing it: ask first.
    if (opts.force) {
      try {
        await this.inspectVolume(name, opts);
      } catch (err) {
        if (err instanceof NotFoundError) return false;
        throw err;
      }
    }
    const status = await this.empty({
      method: 'DELETE',
      path: `/volumes/${id(name)}`,
      query: { force: opts.force || undefined },
      accept: [404],
      signal: opts.signal,
    });
    return status !== 404;
  }

  async listVolumes(opts: CallOptions & { labels?: Record<string, string | true> | string[]; name?: string[]; dangling?: boolean } = {}): Promise<VolumeInfo[]> {
    const filters: Filters = { label: labelFilter(opts.labels), name: opts.name ?? [] };
    if (opts.dangling !== undefined) filters.dangling = [String(opts.dangling)];
    const res = await this.json<{ Volumes: VolumeInfo[] | null }>({
      method: 'GET',
      path: '/volumes',
      query: { filters: filtersParam(filters) },
      signal: opts.signal,
    });
    return res.Volumes ?? [];
  }

  // ---------------------------------------------------------------- containers

  /** `POST /containers/create?name=…`. Not retried (a lost answer would otherwise create twice). */
  async createContainer(name: string, spec: ContainerSpec, opts: CallOptions = {}): Promise<{ Id: string; Warnings: string[] }> {
    const exposed: Record<string, object> = {};
    const bindings: Record<string, { HostIp: string; HostPort: string }[]> = {};
    for (const p of spec.ports ?? []) {
      const key = `${p.containerPort}/${p.protocol ?? 'tcp'}`;
      exposed[key] = {};
      (bindings[key] ??= []).push({ HostIp: p.hostIp ?? '', HostPort: p.hostPort === undefined ? '' : String(p.hostPort) });
    }
    const hostConfig: Record<string, unknown> = {
      Mounts: (spec.volumes ?? []).map((v) => ({
        Type: 'volume',
        Source: v.volume,
        Target: v.target,
        ReadOnly: v.readOnly ?? false,
        ...(v.noCopy ? { VolumeOptions: { NoCopy: true } } : {}),
      })),
      PortBindings: bindings,
    };
    if (spec.binds) hostConfig.Binds = spec.binds;
    if (spec.privileged) hostConfig.Privileged = true;
    if (spec.networkMode) hostConfig.NetworkMode = spec.networkMode;
    if (spec.capAdd?.length) hostConfig.CapAdd = spec.capAdd;
    if (spec.capDrop?.length) hostConfig.CapDrop = spec.capDrop;
    if (spec.devices?.length) {
      hostConfig.Devices = spec.devices.map((d) => {
        const [host, inContainer, perms] = d.split(':');
        return { PathOnHost: host, PathInContainer: inContainer ?? host, CgroupPermissions: perms ?? 'rwm' };
      });
    }
    if (spec.pidMode) hostConfig.PidMode = spec.pidMode;
    if (spec.ipcMode) hostConfig.IpcMode = spec.ipcMode;
    if (spec.utsMode) hostConfig.UTSMode = spec.utsMode;
    if (spec.usernsMode) hostConfig.UsernsMode = spec.usernsMode;
    if (spec.securityOpt?.length) hostConfig.SecurityOpt = spec.securityOpt;
    const l = spec.limits ?? {};
    if (l.memory !== undefined) hostConfig.Memory = l.memory;
    if (l.memorySwap !== undefined) hostConfig.MemorySwap = l.memorySwap;
    if (l.memorySwappiness !== undefined) hostConfig.MemorySwappiness = l.memorySwappiness;
    if (l.memoryReservation !== undefined) hostConfig.MemoryReservation = l.memoryReservation;
    if (l.nanoCpus !== undefined) hostConfig.NanoCpus = l.nanoCpus;
    if (l.cpusetCpus !== undefined) hostConfig.CpusetCpus = l.cpusetCpus;
    if (l.cpuShares !== undefined) hostConfig.CpuShares = l.cpuShares;
    if (spec.init) hostConfig.Init = true;
    if (spec.ulimits?.length) hostConfig.Ulimits = spec.ulimits.map((u) => ({ Name: u.name, Soft: u.soft, Hard: u.hard }));
    if (spec.tmpfs && Object.keys(spec.tmpfs).length) hostConfig.Tmpfs = spec.tmpfs;
    if (spec.shmSize !== undefined) hostConfig.ShmSize = spec.shmSize;
    if (spec.restartPolicy) {
      hostConfig.RestartPolicy = { Name: spec.restartPolicy.name, MaximumRetryCount: spec.restartPolicy.maximumRetryCount ?? 0 };
    }
    const body: Record<string, unknown> = {
      Image: spec.image,
      Env: spec.env ?? [],
      Labels: spec.labels ?? {},
      ExposedPorts: exposed,
      HostConfig: hostConfig,
    };
    if (spec.cmd) body.Cmd = spec.cmd;
    if (spec.entrypoint) body.Entrypoint = spec.entrypoint;
    if (spec.user) body.User = spec.user;
    if (spec.workingDir) body.WorkingDir = spec.workingDir;
    if (spec.tty !== undefined) body.Tty = spec.tty;
    // Always set: podman's compat API makes an absent StopTimeout 0, so anyone's `podman stop`
    // would kill at once; 10 s is Docker's default and what berth's own stop waits.
    body.StopTimeout = spec.stopTimeoutS ?? DEFAULT_STOP_TIMEOUT_S;
    if (spec.hostname) body.Hostname = spec.hostname;
    if (spec.healthcheck) {
      // The Engine API counts durations in nanoseconds.
      const ns = (s: number | undefined) => (s === undefined ? undefined : Math.round(s * 1e9));
      const h = spec.healthcheck;
      body.Healthcheck = { Test: h.test, Interval: ns(h.intervalS), Timeout: ns(h.timeoutS), Retries: h.retries, StartPeriod: ns(h.startPeriodS) };
    }
    if (spec.networkMode && spec.networkAliases?.length && !['none', 'host', 'bridge', 'default'].includes(spec.networkMode)) {
      body.NetworkingConfig = { EndpointsConfig: { [spec.networkMode]: { Aliases: spec.networkAliases } } };
    }
    return this.json({ method: 'POST', path: '/containers/create', query: { name }, json: body, signal: opts.signal });
  }

  /** Resolves 'started', or 'already-running' (304). Not retried. */
  async startContainer(idOrName: string, opts: CallOptions = {}): Promise<'started' | 'already-running'> {
    const status = await this.empty({ method: 'POST', path: `/containers/${id(idOrName)}/start`, accept: [304], signal: opts.signal });
    return status === 304 ? 'already-running' : 'started';
  }

  /** Resolves 'stopped', or 'already-stopped' (304). Idempotent, so retried. */
  async stopContainer(idOrName: string, timeoutS = 10, opts: CallOptions = {}): Promise<'stopped' | 'already-stopped'> {
    const limit = (timeoutS + 30) * 1_000;
    const status = await this.empty({
      method: 'POST',
      path: `/containers/${id(idOrName)}/stop`,
      query: { t: timeoutS },
      accept: [304],
      idempotent: true,
      headersTimeoutMs: Math.max(limit, this.timeouts.metadataMs),
      bodyTimeoutMs: Math.max(limit, this.timeouts.metadataMs),
      signal: opts.signal,
    });
    return status === 304 ? 'already-stopped' : 'stopped';
  }

  /**
   * Resolves true when removed, false when there was no such container. Volumes are kept unless
   * asked. A forced removal that meets the container changing state under it (podman answers 500
   * "container state improper" for a container between two restarts of its restart policy) is
   * tried again, with backoff: it has either happened or it has not, so repeating it is safe.
   */
  async removeContainer(idOrName: string, opts: CallOptions & { force?: boolean; removeVolumes?: boolean } = {}): Promise<boolean> {
    for (let attempt = 0; ; attempt++) {
      try {
        const status = await this.empty({
          method: 'DELETE',
          path: `/containers/${id(idOrName)}`,
          query: { force: opts.force ?? false, v: opts.removeVolumes ?? false },
          accept: [404],
          headersTimeoutMs: Math.max(60_000, this.timeouts.metadataMs),
          signal: opts.signal,
        });
        return status !== 404;
      } catch (err) {
        const stateRace = opts.force && err instanceof EngineError && (err.status === 409 || err.status === 500);
        if (!stateRace || attempt >= this.retry.retries || opts.signal?.aborted) throw err;
        await sleepWithSignal(backoffDelay(attempt, this.retry), opts.signal);
      }
    }
  }

  async inspectContainer(idOrName: string, opts: CallOptions = {}): Promise<ContainerInspect> {
    return this.json<ContainerInspect>({ method: 'GET', path: `/containers/${id(idOrName)}/json`, signal: opts.signal });
  }

  async listContainers(opts: CallOptions & { all?: boolean; labels?: Record<string, string | true> | string[]; name?: string[]; status?: string[] } = {}): Promise<ContainerSummary[]> {
    const filters: Filters = { label: labelFilter(opts.labels), name: opts.name ?? [], status: opts.status ?? [] };
    const res = await this.json<ContainerSummary[] | null>({
      method: 'GET',
      path: '/containers/json',
      query: { all: opts.all ?? true, filters: filtersParam(filters) },
      signal: opts.signal,
    });
    return res ?? [];
  }

  /**
   * `POST /containers/{id}/wait`: resolves when the container reaches the condition
   * (default not-running). No timeout (pass a signal); not retried.
   */
  async waitContainer(idOrName: string, opts: CallOptions & { condition?: 'not-running' | 'next-exit' | 'removed' } = {}): Promise<WaitResult> {
    return this.json<WaitResult>({
      method: 'POST',
      path: `/containers/${id(idOrName)}/wait`,
      query: { condition: opts.condition ?? 'not-running' },
      headersTimeoutMs: 0,
      bodyTimeoutMs: 0,
      signal: opts.signal,
    });
  }

  /**
   * Logs as lines, demultiplexed into stdout/stderr when the container has no TTY. Bounded by
   * `maxBytes` (default 8 MiB): past it the rest is dropped and `truncated` is set.
   */
  async containerLogs(
    idOrName: string,
    opts: CallOptions & {
      tail?: number | 'all';
      timestamps?: boolean;
      stdout?: boolean;
      stderr?: boolean;
      since?: number;
      /** Whether the container has a TTY; asked from the engine when unknown. */
      tty?: boolean;
      maxBytes?: number;
    } = {},
  ): Promise<{ entries: LogEntry[]; truncated: boolean }> {
    const spec: RequestSpec = {
      method: 'GET',
      path: `/containers/${id(idOrName)}/logs`,
      query: {
        stdout: opts.stdout ?? true,
        stderr: opts.stderr ?? true,
        timestamps: opts.timestamps ?? false,
        tail: opts.tail === undefined ? 'all' : String(opts.tail),
        since: opts.since,
        follow: false,
      },
      headersTimeoutMs: this.timeouts.metadataMs,
      bodyTimeoutMs: this.timeouts.streamIdleMs,
      signal: opts.signal,
    };
    const res = await this.request(spec);
    // Docker 1.42+ says which format it sends; podman sends application/octet-stream for both.
    const type = header(res, 'content-type') ?? '';
    let tty: boolean | undefined = opts.tty;
    if (type.includes('multiplexed-stream')) tty = false;
    else if (type.includes('raw-stream')) tty = true;
    const maxBytes = opts.maxBytes ?? 8 * 1024 * 1024;
    const entries: LogEntry[] = [];
    const partial: Record<'stdout' | 'stderr', string> = { stdout: '', stderr: '' };
    let total = 0;
    let truncated = false;
    const timestamps = opts.timestamps ?? false;
    const pushLine = (stream: 'stdout' | 'stderr', raw: string) => {
      const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
      if (timestamps) {
        const sp = line.indexOf(' ');
        if (sp > 0 && /^\d{4}-\d\d-\d\dT/.test(line)) {
          entries.push({ stream, timestamp: line.slice(0, sp), line: line.slice(sp + 1) });
          return;
        }
      }
      entries.push({ stream, line });
    };
    const feed = (stream: 'stdout' | 'stderr', data: Buffer) => {
      if (truncated) return;
      if (total + data.length > maxBytes) {
        data = data.subarray(0, Math.max(0, maxBytes - total));
        truncated = true;
      }
      total += data.length;
      const text = partial[stream] + data.toString('utf8');
      const lines = text.split('\n');
      partial[stream] = lines.pop() ?? '';
      for (const l of lines) pushLine(stream, l);
    };
    try {
      const body = res.body as AsyncIterable<Buffer>;
      if (tty === undefined) {
        // Unknown: peek at the first bytes, and ask the engine only when they are ambiguous.
        const it = body[Symbol.asyncIterator]();
        let head = Buffer.alloc(0);
        while (head.length < 8) {
          const next = await it.next();
          if (next.done) break;
          head = Buffer.concat([head, next.value]);
        }
        if (head.length === 0) tty = false;
        else if (!looksMultiplexed(head)) tty = true;
        else tty = (await this.inspectContainer(idOrName, opts)).Config.Tty === true;
        const rest: AsyncIterable<Buffer> = {
          [Symbol.asyncIterator]: async function* () {
            if (head.length) yield head;
            for (let n = await it.next(); !n.done; n = await it.next()) yield n.value;
          },
        };
        await this.consumeLogs(rest, tty, feed, () => truncated);
      } else {
        await this.consumeLogs(body, tty, feed, () => truncated);
      }
    } catch (err) {
      res.body.destroy();
      throw this.mapTransportError(err, spec);
    }
    if (truncated) res.body.destroy();
    for (const stream of ['stdout', 'stderr'] as const) if (partial[stream]) pushLine(stream, partial[stream]);
    return { entries, truncated };
  }

  private async consumeLogs(body: AsyncIterable<Buffer>, tty: boolean, feed: (stream: 'stdout' | 'stderr', data: Buffer) => void, done: () => boolean): Promise<void> {
    if (tty) {
      for await (const chunk of body) {
        feed('stdout', chunk);
        if (done()) return;
      }
      return;
    }
    for await (const frame of demuxDockerStream(body)) {
      if (frame.stream !== 'stdin') feed(frame.stream, frame.data);
      if (done()) return;
    }
  }

  // ---------------------------------------------------------------- exec

  /**
   * Runs a command in a running container (`POST /containers/{id}/exec`, then `/exec/{id}/start`
   * without a TTY): its output demultiplexed as it comes, and its exit code once it has ended.
   * Not retried. The output must be consumed (or the call aborted).
   */
  async exec(idOrName: string, cmd: string[], opts: CallOptions = {}): Promise<{ output: AsyncGenerator<StreamFrame>; exitCode: () => Promise<number> }> {
    const Id = await this.createExec(idOrName, cmd, false, opts.signal);
    const res = await this.request({
      method: 'POST',
      path: `/exec/${id(Id)}/start`,
      json: { Detach: false, Tty: false },
      headersTimeoutMs: this.timeouts.streamHeadersMs,
      bodyTimeoutMs: this.timeouts.streamIdleMs,
      signal: opts.signal,
    });
    return { output: demuxDockerStream(res.body as AsyncIterable<Buffer>), exitCode: this.execExitCode(Id, opts.signal) };
  }

  /**
   * Like exec, with the command's stdin open: the start is hijacked (`Upgrade: tcp`, as `docker
   * exec -i` does), so bytes written to `input` reach the command at once, with no engine call
   * and no process started. Ending or destroying `input` gives the command end of file.
   */
  async execWithInput(idOrName: string, cmd: string[], opts: CallOptions = {}): Promise<{ output: AsyncGenerator<StreamFrame>; exitCode: () => Promise<number>; input: Duplex }> {
    const Id = await this.createExec(idOrName, cmd, true, opts.signal);
    const path = `${await this.apiPrefix(opts.signal)}/exec/${id(Id)}/start`;
    let socket: Duplex;
    try {
      // undici passes a body on to the request though its upgrade options do not declare one.
      const upgrade: Dispatcher.UpgradeOptions & { body: string } = {
        path,
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ Detach: false, Tty: false }),
        protocol: 'tcp',
        signal: opts.signal ?? null,
      };
      ({ socket } = await this.pool.upgrade(upgrade));
    } catch (err) {
      throw this.mapTransportError(err, { method: 'POST', path: `/exec/${id(Id)}/start` });
    }
    // Once upgraded the socket is berth's alone: an abort ends it, as it ends exec's streamed body.
    const signal = opts.signal;
    if (signal) {
      const abort = () => socket.destroy(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
      signal.addEventListener('abort', abort, { once: true });
      socket.once('close', () => signal.removeEventListener('abort', abort));
    }
    return { output: demuxDockerStream(socket as AsyncIterable<Buffer>), exitCode: this.execExitCode(Id, opts.signal), input: socket };
  }

  private async createExec(idOrName: string, cmd: string[], stdin: boolean, signal?: AbortSignal): Promise<string> {
    const { Id } = await this.json<{ Id: string }>({
      method: 'POST',
      path: `/containers/${id(idOrName)}/exec`,
      json: { Cmd: cmd, AttachStdout: true, AttachStderr: true, AttachStdin: stdin, Tty: false },
      signal,
    });
    return Id;
  }

  private execExitCode(Id: string, signal?: AbortSignal): () => Promise<number> {
    return async () => {
      const info = await this.json<{ ExitCode: number | null; Running: boolean }>({ method: 'GET', path: `/exec/${id(Id)}/json`, signal });
      if (info.Running || info.ExitCode === null) throw new EngineError(`exec ${Id} on ${this.endpoint} has not ended`, { endpoint: this.endpoint });
      return info.ExitCode;
    };
  }

  /** Runs a shell script in a running container; its output (bounded) and exit code. */
  async execScript(idOrName: string, script: string, opts: CallOptions & { maxBytes?: number } = {}): Promise<{ exitCode: number; stdout: string; stderr: string }> {
    return collectExec(await this.exec(idOrName, ['sh', '-c', script], opts), opts.maxBytes);
  }

  // ---------------------------------------------------------------- archives

  /** `HEAD /containers/{id}/archive?path=…`: what is at a path (works on stopped containers). */
  async statPath(idOrName: string, path: string, opts: CallOptions = {}): Promise<PathStat> {
    const res = await this.request({ method: 'HEAD', path: `/containers/${id(idOrName)}/archive`, query: { path }, signal: opts.signal });
    await res.body.dump().catch(() => undefined);
    const raw = header(res, 'x-docker-container-path-stat');
    if (!raw) {
      throw new EngineError(`engine ${this.endpoint} sent no X-Docker-Container-Path-Stat for ${path}`, {
        endpoint: this.endpoint,
        method: 'HEAD',
        path: `/containers/${idOrName}/archive`,
        status: res.status,
      });
    }
    const stat = JSON.parse(Buffer.from(raw, 'base64').toString('utf8')) as {
      name: string;
      size: number;
      mode: number;
      mtime: string;
      linkTarget?: string;
      isDir?: boolean;
    };
    return {
      name: stat.name,
      size: stat.size,
      mode: goFileModeToUnix(stat.mode),
      mtime: stat.mtime,
      isDir: stat.isDir ?? (stat.mode & 0x80000000) !== 0,
      linkTarget: stat.linkTarget ?? '',
    };
  }

  /**
   * `GET /containers/{id}/archive?path=…`: the tar of a path as a stream, never buffered. The
   * caller must consume or destroy it. `path/.` gives the directory's content without the
   * directory itself.
   */
  async getArchive(idOrName: string, path: string, opts: CallOptions = {}): Promise<Readable> {
    const res = await this.request({
      method: 'GET',
      path: `/containers/${id(idOrName)}/archive`,
      query: { path },
      headersTimeoutMs: this.timeouts.streamHeadersMs,
      bodyTimeoutMs: this.timeouts.streamIdleMs,
      signal: opts.signal,
    });
    return res.body;
  }

  /**
   * `PUT /containers/{id}/archive?path=…`: extracts a tar stream at a directory, streaming the
   * request body. Not retried. No overall timeout; a stall longer than streamIdleMs (nothing read
   * from `tar`, or no answer after the last byte) aborts it.
   */
  async putArchive(idOrName: string, path: string, tar: Readable, opts: CallOptions & { noOverwriteDirNonDir?: boolean } = {}): Promise<void> {
    const idle = new AbortController();
    const signal = opts.signal ? AbortSignal.any([opts.signal, idle.signal]) : idle.signal;
    const idleMs = this.timeouts.streamIdleMs;
    let timer: NodeJS.Timeout | undefined;
    const arm = () => {
      clearTimeout(timer);
      timer = setTimeout(() => idle.abort(new EngineTimeoutError(`engine ${this.endpoint}: archive upload to ${path} stalled for ${idleMs} ms`, { endpoint: this.endpoint })), idleMs);
      timer.unref?.();
    };
    arm();
    // Every chunk the engine takes re-arms the watchdog. pipeline() carries an error of `tar`
    // into the request (which then fails) and a failed request back into `tar` (destroyed).
    const watched = new Transform({
      transform(chunk, _enc, cb) {
        arm();
        cb(null, chunk);
      },
    });
    pipeline(tar, watched, () => undefined);
    const spec: RequestSpec = {
      method: 'PUT',
      path: `/containers/${id(idOrName)}/archive`,
      query: { path, noOverwriteDirNonDir: opts.noOverwriteDirNonDir || undefined },
      headers: { 'content-type': 'application/x-tar' },
      stream: watched,
      headersTimeoutMs: 0,
      bodyTimeoutMs: idleMs,
      signal,
    };
    try {
      await this.empty(spec);
    } catch (err) {
      if (idle.signal.aborted && !opts.signal?.aborted) throw idle.signal.reason;
      throw err;
    } finally {
      clearTimeout(timer);
      watched.destroy();
    }
  }
}

/** Pulls an image only when the engine does not have it. */
export async function ensureImage(engine: EngineClient, ref: string, opts: CallOptions = {}): Promise<ImageInspect> {
  try {
    return await engine.inspectImage(ref, opts);
  } catch (err) {
    if (!(err instanceof NotFoundError)) throw err;
  }
  await engine.pullImage(ref, opts);
  return engine.inspectImage(ref, opts);
}

/** A started exec's output (each stream kept up to `max` bytes) and its exit code, once it has ended. */
export async function collectExec(started: Awaited<ReturnType<EngineClient['exec']>>, max = 64 * 1024): Promise<{ exitCode: number; stdout: string; stderr: string }> {
  const out: Record<'stdout' | 'stderr', Buffer[]> = { stdout: [], stderr: [] };
  const size = { stdout: 0, stderr: 0 };
  for await (const f of started.output) {
    if (f.stream === 'stdin' || size[f.stream] >= max) continue;
    out[f.stream].push(f.data);
    size[f.stream] += f.data.length;
  }
  const text = (k: 'stdout' | 'stderr') => Buffer.concat(out[k]).toString('utf8').slice(0, max);
  return { exitCode: await started.exitCode(), stdout: text('stdout'), stderr: text('stderr') };
}
