import type { CallToolResult } from '@modelcontextprotocol/server';
import type { Logger } from 'pino';
import type { Caller } from '../core/caller.js';
import type { Core } from '../core/gate.js';
import type { CallOptions } from '../core/operation.js';
import { agentHint, type BerthError, toWire, type HintContext } from '../errors.js';
import { BERTH_VERSION } from '../version.js';
import type { ResourceSession } from './resources/index.js';
import type { TaskSession } from './tasks/handlers.js';
import type { ToolDefinition } from './tools/registry.js';
import { parseToolsets, selects } from './tools/toolsets.js';

export const SERVER_INFO = { name: 'berth', version: BERTH_VERSION };

const TEXT_LIMIT = 4_000;

/** A short text rendering next to the structured content, for clients that only show text. */
export function render(value: unknown): string {
  const json = JSON.stringify(value);
  if (json.length <= TEXT_LIMIT) return json;
  return `${json.slice(0, TEXT_LIMIT)}… (truncated; the full result is in structuredContent)`;
}

/** A tool's value as its result: the short text and the structured content. */
export const ok = (value: Record<string, unknown>): CallToolResult => ({ content: [{ type: 'text', text: render(value) }], structuredContent: value });

/** A BerthError as a tool result: the REST door's body, plus what an agent should do next. */
export function errorResult(err: BerthError, ctx?: HintContext): CallToolResult {
  const wire = toWire(err);
  const hint = agentHint(err, ctx);
  const body = {
    ...wire.body,
    // Over MCP a refusal also says what the token holds (REST keeps Coolify's body).
    ...(err.details.heldPermissions ? { token_permissions: err.details.heldPermissions } : {}),
    ...(err.details.retryAfter !== undefined ? { retry_after: Number(wire.headers['Retry-After']) } : {}),
    ...(hint ? { hint } : {}),
  };
  return { isError: true, content: [{ type: 'text', text: JSON.stringify(body) }] };
}

/**
 * A tool error whose body is already data for the agent (e.g. an upstream's error answer in
 * remote mode): sent as JSON text with the same isError shape as errorResult.
 */
export class ToolCallError extends Error {
  /** status: the upstream's HTTP status when the body is its answer (for the agent's hint). */
  constructor(
    readonly body: Record<string, unknown>,
    readonly status?: number,
  ) {
    super(typeof body.message === 'string' ? body.message : 'Tool call failed.');
    this.name = 'ToolCallError';
  }
}

/** Runs one tool call and returns the operation's output (before array outputs are wrapped). */
export type ToolExecutor = (tool: ToolDefinition, args: unknown, options: CallOptions) => Promise<unknown>;

/**
 * The tools of one MCP session: every tool its token may reach, and the names listed now. On
 * stdio the listed set grows with enable_toolsets; stateless HTTP answers each request afresh.
 */
export interface ToolCatalogue {
  reachable: readonly ToolDefinition[];
  listed: Set<string>;
  /** The session can announce tools/list_changed (stdio). */
  dynamic: boolean;
}

/** Listed names under a `--toolsets` selection (meta tools are added when anything stays unlisted). */
export function catalogueFor(reachable: readonly ToolDefinition[], spec: string | undefined, dynamic: boolean): ToolCatalogue {
  const sel = parseToolsets(spec);
  return { reachable, listed: new Set(reachable.filter((t) => selects(sel, t.op)).map((t) => t.name)), dynamic };
}

interface SessionBase {
  logger: Logger;
  catalogue: ToolCatalogue;
  /**
   * Every tool of the table: a call naming one this session cannot reach answers why (the
   * permission it needs and the ones the token has), as REST would, instead of "not found".
   * In remote mode: the tools the upstream offers, one not reached here is sent on.
   */
  all?: readonly ToolDefinition[];
  /** Read-only mode (X-Berth-Read-Only, --read-only): tools that change things are refused. */
  readOnly?: boolean;
}

/** A session whose tools run somewhere else than the in-process core (remote mode). */
export interface ExecutorSession extends SessionBase {
  execute: ToolExecutor;
}

export interface McpSession extends SessionBase {
  core: Core;
  /**
   * The caller for one tool call. Over HTTP it is the request's, already admitted; over stdio
   * each call is admitted anew, so a revoked token or a disabled API takes effect at once.
   */
  callerFor(tool?: ToolDefinition): Promise<Caller>;
  /** berth:// resources (src/mcp/resources/): absent, the session has none. */
  resources?: ResourceSession;
  /** MCP tasks (tasks/): the process's runner and this request's owner; without it tasks are not offered. */
  tasks?: TaskSession;
}

/**
 * A title that only restates the tool's name ("Start application" for start_application, "Get a
 * database" for get_database) is not sent: clients show the name where there is no title, and
 * every tools/list pays for each byte.
 */
export const restatesName = (t: { name: string; title: string }) =>
  t.title
    .toLowerCase()
    .split(' ')
    .filter((w) => !['a', 'an', 'the'].includes(w))
    .join(' ') === t.name.replaceAll('_', ' ');
