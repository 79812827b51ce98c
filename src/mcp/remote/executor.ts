import type { Logger } from 'pino';
import type { z } from 'zod';
import { pathParams, type CallOptions, type Operation, type ProgressReporter } from '../../core/operation.js';
import { pageOf } from '../../core/pagination.js';
import { parseInput } from '../../core/validation.js';
import { BerthError } from '../../errors.js';
import { RetryLaterError, type Method, type PacedClient, type PacedResponse } from './paced-client.js';
import { ToolCallError, type ToolExecutor } from '../server.js';
import { ERROR_BODY_LIMIT, redactText, upstreamErrorBody } from './redact-upstream.js';
import { describeNetworkError, type Upstream } from './upstream.js';

/** One upstream request for one tool call, from the operation's HTTP binding. */
export interface UpstreamRequest {
  method: Method;
  /** basePath + the operation's path with its parameters filled in, + query. */
  path: string;
  body?: Record<string, unknown>;
}

const scalar = (v: unknown) => (typeof v === 'object' && v !== null ? JSON.stringify(v) : String(v));

/**
 * Path parameters from the input; for GET and DELETE the other fields go in the query, otherwise
 * in a JSON body, except the query fields the declaration names (http.query: Coolify reads
 * `restart?latest=` there, and drops it from a body). The agent's own arguments are sent
 * (validated here first, never rewritten), so the upstream applies its own defaults and judges
 * them exactly as its REST door would.
 */
export function upstreamRequest(op: Operation, args: Record<string, unknown>, basePath = ''): UpstreamRequest {
  const names = pathParams(op.http.path);
  const path = op.http.path.replace(/\{([a-z_]+)\}/g, (_m, name: string) => encodeURIComponent(scalar(args[name])));
  const rest = Object.entries(args).filter(([k, v]) => !names.includes(k) && v !== undefined);
  const inQuery = op.http.method === 'GET' || op.http.method === 'DELETE' ? () => true : (k: string) => op.http.query?.includes(k) === true;
  const query = new URLSearchParams();
  for (const [k, v] of rest) {
    if (v === null || !inQuery(k)) continue;
    for (const item of Array.isArray(v) ? v : [v]) query.append(k, scalar(item));
  }
  const qs = query.toString();
  const target = `${basePath}${path}${qs ? `?${qs}` : ''}`;
  if (op.http.method === 'GET' || op.http.method === 'DELETE') return { method: op.http.method, path: target };
  // An operation without body fields gets no body at all (Coolify refuses an empty JSON body).
  const hasBodyFields = Object.keys(op.input.shape).some((k) => !names.includes(k) && !op.http.query?.includes(k));
  // Fields the REST body names otherwise (Operation.http.bodyNames) go by that name.
  const restName = new Map(Object.entries(op.http.bodyNames ?? {}).map(([r, i]) => [i, r]));
  const body = Object.fromEntries(rest.filter(([k]) => !inQuery(k)).map(([k, v]) => [restName.get(k) ?? k, v]));
  return { method: op.http.method, path: target, ...(hasBodyFields ? { body } : {}) };
}

const header = (h: PacedResponse['headers'], name: string) => {
  const v = h[name];
  return Array.isArray(v) ? v[0] : v;
};
const intHeader = (h: PacedResponse['headers'], name: string) => {
  const v = header(h, name);
  const n = v === undefined ? NaN : Number(v);
  return Number.isInteger(n) ? n : undefined;
};

function notJson(op: Operation, res: PacedResponse, secrets: readonly string[]): ToolCallError {
  return new ToolCallError({
    message: `The upstream's answer to ${op.name} is not JSON.`,
    upstream_status: res.status,
    upstream_body: redactText(res.body, secrets).slice(0, ERROR_BODY_LIMIT),
  });
}

/**
 * The upstream's success answer as the operation's output: a list's bare array (+ X-Total-Count,
 * X-Page, X-Per-Page from berth) back into `{ items, total, page, per_page }` — an upstream that
 * sends the whole list without those headers (Coolify) is paged here, so total is its length —
 * and a text answer (GET /version) into `{ [field]: text }` (plus berth_version from a berth).
 */
export function outputFrom(op: Operation, res: PacedResponse, input: Record<string, unknown>, secrets: readonly string[] = []): unknown {
  if (op.http.text) {
    // A berth upstream names its own version in a header, for outputs that carry it.
    const berth = res.headers['x-berth-version'];
    const wants = 'berth_version' in ((op.output as unknown as { shape?: object }).shape ?? {});
    return { [op.http.text]: res.body.trim(), ...(wants && typeof berth === 'string' ? { berth_version: berth } : {}) };
  }
  let json: unknown;
  try {
    json = res.body.trim() === '' ? {} : JSON.parse(res.body);
  } catch {
    throw notJson(op, res, secrets);
  }
  if (!op.http.list) return json;
  if (!Array.isArray(json)) {
    throw new ToolCallError({ message: `The upstream's answer to ${op.name} does not match the tool's output: expected a JSON array (a list).`, errors: { items: ['Expected an array.'] } });
  }
  const total = intHeader(res.headers, 'x-total-count');
  const page = Number(input.page ?? 1);
  const perPage = Number(input.per_page ?? 100);
  if (total === undefined) return pageOf(json, { page, per_page: perPage });
  return { items: json, total, page: intHeader(res.headers, 'x-page') ?? page, per_page: intHeader(res.headers, 'x-per-page') ?? perPage };
}

/**
 * The upstream's answer checked against the output schema: a mismatch is a tool error naming the
 * fields. Fields the schema does not know (Coolify sends many) are dropped, as the MCP client
 * holds structured content to the tool's declared output schema.
 */
export function checkOutput(op: Operation, value: unknown): unknown {
  const r = (op.output as z.ZodType).safeParse(value);
  if (r.success) return conform(value, r.data);
  const errors: Record<string, string[]> = {};
  for (const issue of r.error.issues) {
    const field = issue.path.map(String).join('.') || '(answer)';
    (errors[field] ??= []).push(issue.message);
  }
  const first = Object.entries(errors)[0]!;
  throw new ToolCallError({
    message: `The upstream's answer to ${op.name} does not match the tool's output schema (field ${first[0]}: ${first[1][0]}).`,
    errors,
  });
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The parsed value, keys in the upstream's order (so the text rendering matches local mode's). */
function conform(raw: unknown, parsed: unknown): unknown {
  if (Array.isArray(parsed) && Array.isArray(raw)) return parsed.map((p, i) => conform(raw[i], p));
  if (isObject(parsed) && isObject(raw)) {
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(raw)) if (Object.hasOwn(parsed, k)) out[k] = conform(raw[k], parsed[k]);
    for (const k of Object.keys(parsed)) if (!Object.hasOwn(out, k)) out[k] = parsed[k];
    return out;
  }
  return parsed;
}

/** Progress notifications while a call waits: one at the start of a wait, then one a second. */
function waitReporter(progress: ProgressReporter | undefined, logger: Logger, tool: string) {
  let n = 0;
  let timer: NodeJS.Timeout | undefined;
  const stop = () => {
    if (timer) clearInterval(timer);
    timer = undefined;
  };
  return {
    onWait(ms: number, reason: string) {
      logger.info({ tool, waitMs: ms, reason }, 'waiting for the upstream');
      stop();
      if (!progress) return;
      const until = Date.now() + ms;
      const tick = () => {
        const left = Math.max(0, Math.ceil((until - Date.now()) / 1000));
        progress({ progress: ++n, message: `Waiting ${left} s for the upstream (${reason}) before retrying ${tool}.` }).catch((err: unknown) =>
          logger.debug({ err }, 'progress notification not sent'),
        );
      };
      tick();
      timer = setInterval(() => (Date.now() >= until - 200 ? stop() : tick()), 1000);
      timer.unref();
    },
    stop,
  };
}

/**
 * A berth upstream's 202 for a call its team's policy holds: the pending approval (uuid, page on
 * the upstream's console), answered as local mode answers a held call rather than as an output
 * that does not match (which dropped where to approve). Undefined for any other 202.
 */
function heldApproval(body: string): (Record<string, unknown> & { uuid: string }) | undefined {
  try {
    const json = JSON.parse(body) as { approval?: unknown };
    const a = json.approval;
    return isObject(a) && typeof a.uuid === 'string' && /^[a-z0-9]{24}$/.test(a.uuid) ? (a as Record<string, unknown> & { uuid: string }) : undefined;
  } catch {
    return undefined;
  }
}

const SAFE = new Set(['GET', 'HEAD']);
/** Errors raised before a request left this machine: a write was certainly not made. */
const NOT_SENT = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_CONNECT_TIMEOUT']);

export interface RemoteExecutorOptions {
  client: PacedClient;
  upstream: Upstream;
  logger: Logger;
  /** Strings that must never reach the agent (the token and its secret part). */
  secrets: readonly string[];
}

/**
 * The remote executor: the same tool definitions as local mode, run by calling the upstream's
 * REST API through the paced client. Input is validated here with the operation's own schema
 * (local mode's error shape); the answer is checked against its output schema.
 */
export function remoteExecutor(opts: RemoteExecutorOptions): ToolExecutor {
  const { client, upstream, logger, secrets } = opts;
  return async (tool, rawArgs, options: CallOptions) => {
    const op = tool.op;
    const args = (rawArgs ?? {}) as Record<string, unknown>;
    const input = parseInput(op, args);
    // An MCP list keeps its pages (an agent's context is small), while a REST list without page
    // or per_page answers every item as Coolify's does: ask the upstream for the page by name.
    const paged = op.http.list && 'per_page' in op.input.shape ? { page: input.page ?? 1, per_page: input.per_page ?? 100, ...args } : args;
    const req = upstreamRequest(op, paged, upstream.basePath);
    const waits = waitReporter(options.progress, logger, tool.name);
    let res: PacedResponse;
    try {
      res = await client.request(req.method, req.path, req.body, {}, { onWait: waits.onWait, signal: options.signal });
    } catch (err) {
      throw failure(err, req);
    } finally {
      waits.stop();
    }
    if (res.status < 200 || res.status >= 300) throw new ToolCallError(upstreamErrorBody(res.status, res.body, secrets), res.status);
    const held = res.status === 202 ? heldApproval(res.body) : undefined;
    if (held) throw new BerthError('approval_pending', { approval: held });
    return checkOutput(op, outputFrom(op, res, input, secrets));
  };

  function failure(err: unknown, req: UpstreamRequest): ToolCallError {
    const unsafe = !SAFE.has(req.method);
    if (err instanceof RetryLaterError) {
      const body = err.response ? upstreamErrorBody(err.response.status, err.response.body, secrets) : { message: 'Too many requests.' };
      const why = unsafe ? `not retried automatically, because repeating a ${req.method} could make the change twice` : 'gave up: one call waits at most BERTH_API_MAX_WAIT_MS, over a few tries';
      return new ToolCallError({ ...body, retry_after: err.seconds, hint: `The upstream is busy: retry after ${err.seconds} s (${why}).` });
    }
    if ((err as Error)?.name === 'AbortError' || (err as { code?: string })?.code === 'ABORT_ERR') return new ToolCallError({ message: 'The call was cancelled.' });
    const { code, text } = describeNetworkError(err);
    logger.warn({ error: redactText(text, secrets), method: req.method }, 'upstream request failed');
    return new ToolCallError({
      message: `The upstream ${upstream.display} could not be reached.`,
      error: redactText(text, secrets).slice(0, 500),
      ...(unsafe && !(code && NOT_SENT.has(code)) ? { hint: 'The change may or may not have been made: check its state before repeating it.' } : {}),
    });
  }
}
