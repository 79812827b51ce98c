import { McpServer, type CallToolResult } from '@modelcontextprotocol/server';
import type { Logger } from 'pino';
import type { Caller } from '../core/caller.js';
import { BerthError, toWire } from '../core/errors.js';
import type { Core } from '../core/gate.js';
import type { CallOptions, ProgressReporter } from '../core/operation.js';
import type { ToolDefinition } from '../tools/registry.js';

export const SERVER_INFO = { name: 'berth', version: '0.1.0' };

const TEXT_LIMIT = 4_000;

/** A short text rendering next to the structured content, for clients that only show text. */
function render(value: unknown): string {
  const json = JSON.stringify(value);
  if (json.length <= TEXT_LIMIT) return json;
  return `${json.slice(0, TEXT_LIMIT)}… (truncated; the full result is in structuredContent)`;
}

/** A BerthError as a tool result: the same body the REST door would send, as JSON text. */
export function errorResult(err: BerthError): CallToolResult {
  const wire = toWire(err);
  const body = { ...wire.body, ...(err.details.retryAfter !== undefined ? { retry_after: Number(wire.headers['Retry-After']) } : {}) };
  return { isError: true, content: [{ type: 'text', text: JSON.stringify(body) }] };
}

/**
 * A tool error whose body is already data for the agent (e.g. an upstream's error answer in
 * remote mode): sent as JSON text with the same isError shape as errorResult.
 */
export class ToolCallError extends Error {
  constructor(readonly body: Record<string, unknown>) {
    super(typeof body.message === 'string' ? body.message : 'Tool call failed.');
    this.name = 'ToolCallError';
  }
}

/** Runs one tool call and returns the operation's output (before array outputs are wrapped). */
export type ToolExecutor = (tool: ToolDefinition, args: unknown, options: CallOptions) => Promise<unknown>;

/** A session whose tools run somewhere else than the in-process core (remote mode). */
export interface ExecutorSession {
  logger: Logger;
  tools: readonly ToolDefinition[];
  execute: ToolExecutor;
}

export interface McpSession {
  core: Core;
  logger: Logger;
  tools: readonly ToolDefinition[];
  /**
   * The caller for one tool call. Over HTTP it is the request's, already admitted; over stdio
   * each call is admitted anew, so a revoked token or a disabled API takes effect at once.
   */
  callerFor(tool: ToolDefinition): Promise<Caller>;
}

/** A fresh MCP server exposing exactly the given tools (the SDK wants one per HTTP request). */
export function buildMcpServer(session: McpSession | ExecutorSession): McpServer {
  const execute: ToolExecutor =
    'execute' in session
      ? session.execute
      : async (tool, args, options) => session.core.run(tool.op, await session.callerFor(tool), args, options);
  const server = new McpServer(SERVER_INFO, {
    capabilities: { tools: {} },
    instructions:
      'berth manages servers, projects, applications, databases and services for the team this token is bound to. Tools only show what this token may do.',
  });
  for (const tool of session.tools) {
    server.registerTool(
      tool.name,
      {
        title: tool.title,
        description: tool.description,
        inputSchema: tool.inputSchema,
        outputSchema: tool.outputSchema,
        annotations: { title: tool.title, ...tool.annotations },
      },
      async (args, ctx): Promise<CallToolResult> => {
        const token = ctx.mcpReq._meta?.progressToken;
        const progress: ProgressReporter | undefined =
          token === undefined
            ? undefined
            : (p) => ctx.mcpReq.notify({ method: 'notifications/progress', params: { progressToken: token, ...p } });
        try {
          const output = await execute(tool, args, { progress, signal: ctx.mcpReq.signal });
          const structured = (tool.wrapsArray ? { items: output } : output) as Record<string, unknown>;
          return { content: [{ type: 'text', text: render(output) }], structuredContent: structured };
        } catch (err) {
          if (err instanceof BerthError) return errorResult(err);
          if (err instanceof ToolCallError) return { isError: true, content: [{ type: 'text', text: JSON.stringify(err.body) }] };
          session.logger.error({ err, tool: tool.name }, 'tool failed');
          return errorResult(new BerthError('internal'));
        }
      },
    );
  }
  return server;
}
