import { CLIENT_CAPABILITIES_META_KEY, McpServer, PROTOCOL_VERSION_META_KEY, ProtocolError, ProtocolErrorCode, type CallToolResult, type InputRequiredResult } from '@modelcontextprotocol/server';
import { confirmInClient, resumeInClient, type ClientAsker } from './approval-elicitation.js';
import type { Logger } from 'pino';
import type { Caller } from '../core/caller.js';
import { agentHint, BerthError, fromWire, toWire, unexpected, validationError, type HintContext } from '../errors.js';
import type { Core } from '../core/gate.js';
import { inputProblem } from '../core/input-guard.js';
import type { CallOptions, ProgressReporter } from '../core/operation.js';
import { issuesToErrors } from '../core/validation.js';
import { agentArgs, agentOutputValue } from './tools/agent-view.js';
import { hintContext, META_TOOLS, metaInputs, type MetaTool } from './tools/meta.js';
import type { ToolDefinition } from './tools/registry.js';
import { jsonSchemaOf } from './tools/json-schema.js';
import { parseToolsets, selects } from './tools/toolsets.js';
import { TOOLSET_DESCRIPTIONS, TOOLSETS } from '../core/operation.js';
import { BERTH_VERSION } from '../version.js';
import { PROMPT_CAPABILITIES, registerPromptsAndCompletion } from './prompts/register.js';
import { registerResources, type ResourceSession } from './resources/index.js';
import { installApps } from './apps/install.js';
import { installTasks, taskSupport, type TaskSession } from './tasks/handlers.js';
import type { TaskCallOptions } from './tasks/runner.js';

export const SERVER_INFO = { name: 'berth', version: BERTH_VERSION };

const TEXT_LIMIT = 4_000;

/** A short text rendering next to the structured content, for clients that only show text. */
function render(value: unknown): string {
  const json = JSON.stringify(value);
  if (json.length <= TEXT_LIMIT) return json;
  return `${json.slice(0, TEXT_LIMIT)}… (truncated; the full result is in structuredContent)`;
}

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
  /** Register only this tool (HTTP tools/call builds a server for the one tool it names). */
  only?: string;
}

/** A session whose tools run somewhere else than the in-process core (remote mode). */
export interface ExecutorSession extends SessionBase {
  execute: ToolExecutor;
  /** The tools the upstream offers: one this session does not reach is sent on, and the upstream's refusal answered. */
  all?: readonly ToolDefinition[];
  readOnly?: boolean;
}

export interface McpSession extends SessionBase {
  core: Core;
  /**
   * The caller for one tool call. Over HTTP it is the request's, already admitted; over stdio
   * each call is admitted anew, so a revoked token or a disabled API takes effect at once.
   */
  callerFor(tool?: ToolDefinition): Promise<Caller>;
  /**
   * Every tool of the table: a call naming one this session cannot reach answers why (the
   * permission it needs and the ones the token has), as REST would, instead of "not found".
   */
  all?: readonly ToolDefinition[];
  /** Read-only mode (X-Berth-Read-Only, --read-only): tools that change things are refused. */
  readOnly?: boolean;
  /** berth:// resources (src/mcp/resources/): absent, the session has none. */
  resources?: ResourceSession;
  /** MCP tasks (tasks/): the process's runner and this request's owner; without it tasks are not offered. */
  tasks?: TaskSession;
}

/** The low-level request table of the SDK's server (not in its types; see guardToolCalls). */
interface RequestTable {
  _getRequestHandler(method: string): ((request: unknown, ctx: unknown) => Promise<unknown>) | undefined;
  _requestHandlers: Map<string, (request: unknown, ctx: unknown) => Promise<unknown>>;
}

const ok = (value: Record<string, unknown>): CallToolResult => ({ content: [{ type: 'text', text: render(value) }], structuredContent: value });

/** A call's outcome: its value, a tool error, or (2026 era) the question to put to the client's person. */
type RunResult = { value: Record<string, unknown> } | { error: CallToolResult } | { ask: InputRequiredResult };
/** A RunResult as the SDK's handler returns it (an input_required result passes through as it is). */
const answerOf = (r: RunResult, value: (v: Record<string, unknown>) => CallToolResult): CallToolResult => ('error' in r ? r.error : 'ask' in r ? (r.ask as unknown as CallToolResult) : value(r.value));
/** A tool call's options: the core's, and the client's elicitation when it has one. */
type ToolCallOptions = CallOptions & { elicit?: ClientAsker };
type Handler = (args: unknown, ctx: never) => Promise<CallToolResult>;
/** One tool on the wire, operation or meta: its texts, schemas and non-default hints. */
/**
 * A title that only restates the tool's name ("Start application" for start_application, "Get a
 * database" for get_database) is not
 * sent: clients show the name where there is no title, and every tools/list pays for each byte.
 */
export const restatesName = (t: { name: string; title: string }) =>
  t.title
    .toLowerCase()
    .split(' ')
    .filter((w) => !['a', 'an', 'the'].includes(w))
    .join(' ') === t.name.replaceAll('_', ' ');

type Listed = Pick<ToolDefinition, 'name' | 'title' | 'description' | 'inputSchema' | 'outputSchema'> & { annotations: Record<string, boolean | undefined> };

/**
 * What a catalogue's tables are: by name, and the tools of `all` it does not reach. Worked out
 * once per catalogue (HTTP reuses one catalogue per token shape), not per request.
 */
const derived = new WeakMap<ToolCatalogue, WeakMap<readonly ToolDefinition[], { byName: Map<string, ToolDefinition>; unreachable: Map<string, ToolDefinition> }>>();
const NO_TOOLS: readonly ToolDefinition[] = [];
function tablesOf(catalogue: ToolCatalogue, all: readonly ToolDefinition[] = NO_TOOLS) {
  let perAll = derived.get(catalogue);
  if (!perAll) derived.set(catalogue, (perAll = new WeakMap()));
  let t = perAll.get(all);
  if (!t) {
    const byName = new Map(catalogue.reachable.map((x) => [x.name, x]));
    perAll.set(all, (t = { byName, unreachable: new Map(all.filter((x) => !byName.has(x.name)).map((x) => [x.name, x])) }));
  }
  return t;
}

/**
 * The tools of one session without an SDK server: each registered tool's wire definition and
 * handler, and the runner of the tools it does not reach. buildMcpServer registers them with the
 * SDK; the HTTP fast path (fast-call.ts) calls one directly. `onEnable` registers the tools that
 * enable_toolsets adds (dynamic sessions only).
 */
function sessionTools(session: McpSession | ExecutorSession, onEnable: (t: ToolDefinition) => void = () => {}, clientCapabilities: () => { elicitation?: object } | undefined = () => undefined) {
  const { catalogue, logger } = session;
  const execute: ToolExecutor = 'execute' in session ? session.execute : async (tool, args, options) => session.core.run(tool.op, await session.callerFor(tool), args, options);
  const { byName, unreachable } = tablesOf(catalogue, session.all);

  /** Where the ids of a failed call's kind are listed, said the way this session reaches that tool. */
  const hintFor = (tool: ToolDefinition): HintContext => {
    const ctx = hintContext(tool, catalogue.reachable);
    if (ctx.listTool && !catalogue.listed.has(ctx.listTool)) {
      // Applications, databases and services all appear in list_resources, which the default set lists.
      const inResources = ['applications', 'databases', 'services'].includes(tool.op.toolset) && catalogue.listed.has('list_resources');
      ctx.listTool = inResources ? 'list_resources' : `call_operation with name ${ctx.listTool}`;
    }
    return ctx;
  };

  /** One operation call, as its tool or through call_operation: the agent's view, errors with hints. */
  async function runTool(tool: ToolDefinition, rawArgs: unknown, options: ToolCallOptions): Promise<RunResult> {
    let full = false;
    const view = (output: unknown): RunResult => {
      const value = agentOutputValue(tool.op, output, full);
      return { value: (tool.wrapsArray ? { items: value } : value) as Record<string, unknown> };
    };
    try {
      const agent = agentArgs(tool.op, (rawArgs ?? {}) as Record<string, unknown>);
      full = agent.full;
      // A 2026-era call sent again with its person's answer decides the held call it names; it does not run anew.
      const asker = options.elicit;
      if (asker?.era === 'modern' && asker.state !== undefined && 'core' in session) {
        const decided = await resumeInClient(session.core, await session.callerFor(tool), tool.op, agent.args, asker, options);
        if (decided instanceof BerthError) throw decided;
        return view(decided.ran);
      }
      return view(await execute(tool, agent.args, options));
    } catch (err) {
      // A held call: a client that can ask its person does, so the call can finish in this turn.
      if (err instanceof BerthError && err.kind === 'approval_pending' && options.elicit && !(options.elicit.era === 'modern' && options.elicit.state !== undefined) && 'core' in session) {
        const asked = await confirmInClient(session.core, await session.callerFor(tool), err, options.elicit, options).catch((e: unknown) => unexpected(e));
        if (asked instanceof BerthError) return { error: errorResult(asked, hintFor(tool)) };
        if (asked && 'ask' in asked) return asked;
        if (asked) return view(asked.ran);
      }
      if (err instanceof BerthError) return { error: errorResult(err, hintFor(tool)) };
      if (err instanceof ToolCallError) {
        const known = err.status !== undefined && err.body.hint === undefined ? fromWire(err.status, err.body) : undefined;
        const hint = known && agentHint(known, hintFor(tool));
        const body = hint ? { ...err.body, hint } : err.body;
        return { error: { isError: true, content: [{ type: 'text', text: JSON.stringify(body) }] } };
      }
      const e = unexpected(err);
      if (e.kind === 'internal') logger.error({ err, tool: tool.name }, 'tool failed');
      return { error: errorResult(e) };
    }
  }

  /**
   * A tool of the table this session does not reach (its token's permissions, its team, or
   * read-only mode at the session's start): run through the core (or sent to the upstream in
   * remote mode), whose permission check comes before anything else and answers what is
   * missing; a token whose holder's role has grown since runs it. Read-only mode refuses what
   * changes things without running anything.
   */
  async function runUnreachable(tool: ToolDefinition, rawArgs: unknown, options: ToolCallOptions): Promise<RunResult> {
    if (session.readOnly && !tool.op.annotations.readOnly) {
      const needed = tool.op.permission === 'authenticated' ? 'write' : tool.op.permission;
      return { error: errorResult(new BerthError('missing_permissions', { missingPermissions: [needed], readOnlySession: true }), hintFor(tool)) };
    }
    return runTool(tool, rawArgs, options);
  }

  /** The client's elicitation, when it declared one: a held call is put to its person (approval-elicitation.ts). */
  const elicitOf = (ctx: {
    mcpReq?: {
      elicitInput?: Extract<ClientAsker, { era: 'legacy' }>['elicit'];
      notify?: (n: never) => Promise<void>;
      signal?: AbortSignal;
      envelope?: Record<string, unknown>;
      inputResponses?: Record<string, unknown>;
      requestState?: () => unknown;
    };
  }): ClientAsker | undefined => {
    const req = ctx.mcpReq;
    // 2026 era: the capabilities come with each request, the question goes back in its result.
    const envelope = req?.envelope;
    if (envelope?.[PROTOCOL_VERSION_META_KEY] !== undefined) {
      const e = (envelope[CLIENT_CAPABILITIES_META_KEY] as { elicitation?: { url?: object } } | undefined)?.elicitation;
      if (!e) return undefined;
      const state = req?.requestState?.();
      return {
        era: 'modern',
        url: Boolean(e.url),
        signal: req?.signal,
        ...(typeof state === 'string' ? { state } : {}),
        ...(req?.inputResponses ? { responses: req.inputResponses } : {}),
      };
    }
    const e = clientCapabilities()?.elicitation as { url?: object } | undefined;
    if (!e || !req?.elicitInput) return undefined;
    const url = Boolean(e.url);
    return {
      era: 'legacy',
      url,
      elicit: req.elicitInput.bind(req),
      complete: (elicitationId) => req.notify?.({ method: 'notifications/elicitation/complete', params: { elicitationId } } as never) ?? Promise.resolve(),
      signal: req.signal,
    };
  };

  const progressOf = (ctx: { mcpReq: { _meta?: { progressToken?: string | number }; notify: (n: never) => Promise<void> } }): ProgressReporter | undefined => {
    const token = ctx.mcpReq._meta?.progressToken;
    return token === undefined ? undefined : (p) => ctx.mcpReq.notify({ method: 'notifications/progress', params: { progressToken: token, ...p } } as never);
  };

  /** A call's options from its request context; a task's call has its own (taskContext). */
  const optionsOf = (ctx: never): ToolCallOptions => taskContexts.get(ctx) ?? { progress: progressOf(ctx), signal: (ctx as { mcpReq: { signal: AbortSignal } }).mcpReq.signal, elicit: elicitOf(ctx) };

  const operationHandler =
    (tool: ToolDefinition): Handler =>
    async (args, ctx): Promise<CallToolResult> => {
      const r = await runTool(tool, args, optionsOf(ctx));
      return answerOf(r, ok);
    };

  /** The operation a name calls and how it runs: as the token may, or refused by the core saying why. */
  const runnerOf = (name: string): { tool: ToolDefinition; run: typeof runTool } | undefined => {
    const tool = byName.get(name);
    if (tool) return { tool, run: runTool };
    const hidden = unreachable.get(name);
    return hidden && { tool: hidden, run: runUnreachable };
  };

  const unknownOperation = (name: string) => errorResult(validationError({ name: [`No operation named ${name} is available to this token. list_toolsets shows the ones that are.`] }));

  const metaHandlers: Record<string, (args: Record<string, unknown>, ctx: never) => Promise<CallToolResult>> = {
    list_toolsets: async () => {
      const toolsets = TOOLSETS.map((name) => {
        const tools = catalogue.reachable.filter((t) => t.op.toolset === name).map((t) => t.name);
        return { name, description: TOOLSET_DESCRIPTIONS[name], listed: tools.every((n) => catalogue.listed.has(n)), tools };
      }).filter((t) => t.tools.length);
      const hint = catalogue.dynamic
        ? 'enable_toolsets adds a group to your tools; or describe_operation and call_operation reach any one of them.'
        : 'describe_operation and call_operation reach any of them; or reconnect with the X-Berth-Toolsets header (or ?toolsets=) naming the groups.';
      return ok({ toolsets, hint });
    },
    enable_toolsets: async (args) => {
      const sel = parseToolsets((args.toolsets as string[]).join(','));
      const added = catalogue.reachable.filter((t) => !catalogue.listed.has(t.name) && selects(sel, t.op));
      for (const t of added) {
        catalogue.listed.add(t.name);
        onEnable(t);
      }
      return ok({ added: added.map((t) => t.name) });
    },
    describe_operation: async (args) => {
      const tool = byName.get(args.name as string);
      if (!tool) return unknownOperation(args.name as string);
      return ok({
        name: tool.name,
        title: tool.title,
        description: tool.description,
        toolset: tool.op.toolset,
        listed: catalogue.listed.has(tool.name),
        input_schema: jsonSchemaOf(tool.inputSchema, 'input'),
        output_schema: jsonSchemaOf(tool.outputSchema, 'output'),
        annotations: tool.annotations,
      });
    },
    call_operation: async (args, ctx) => {
      const found = runnerOf(args.name as string);
      if (!found) return unknownOperation(args.name as string);
      const r = await found.run(found.tool, args.arguments ?? {}, optionsOf(ctx));
      return answerOf(r, (value) => ok({ name: found.tool.name, result: value }));
    },
  };

  const metaHandler =
    (meta: MetaTool): Handler =>
    async (args, ctx): Promise<CallToolResult> => {
      // The SDK validated against metaInputs already; parse again for the contract's 422 shape.
      const parsed = metaInputs[meta.name as keyof typeof metaInputs].safeParse(args ?? {});
      if (!parsed.success) return errorResult(validationError(issuesToErrors(parsed.error.issues)));
      return metaHandlers[meta.name]!(parsed.data as Record<string, unknown>, ctx);
    };

  /** Every tool this session registers (all listed operations, and the meta tools when some stay unlisted). */
  const registered = (): Array<{ def: Listed; handler: Handler }> => {
    const out: Array<{ def: Listed; handler: Handler }> = [];
    const wanted = (name: string) => session.only === undefined || session.only === name;
    for (const tool of catalogue.reachable) if (catalogue.listed.has(tool.name) && wanted(tool.name)) out.push({ def: tool, handler: operationHandler(tool) });
    if (catalogue.listed.size < catalogue.reachable.length) {
      for (const meta of META_TOOLS) if ((!meta.needsListChanges || catalogue.dynamic) && wanted(meta.name)) out.push({ def: meta, handler: metaHandler(meta) });
    }
    return out;
  };

  /** The one registered tool of that name, as registered() would list it (the fast path's lookup). */
  const registeredNamed = (name: string): { def: Listed; handler: Handler; tool?: ToolDefinition } | undefined => {
    const tool = byName.get(name);
    if (tool) return catalogue.listed.has(name) ? { def: tool, handler: operationHandler(tool), tool } : undefined;
    const meta = catalogue.listed.size < catalogue.reachable.length ? META_BY_NAME.get(name) : undefined;
    return meta && (!meta.needsListChanges || catalogue.dynamic) ? { def: meta, handler: metaHandler(meta) } : undefined;
  };

  /**
   * A tool a call names that the SDK has not registered now: one the session reaches but does not
   * list (it runs, as call_operation would run it: the token may, and the list is only what is
   * loaded up front), or one it does not reach (the core answers why). Looked up per call: on
   * stdio enable_toolsets lists more tools, which the SDK then serves.
   */
  const offList = (name: string): ReturnType<typeof runnerOf> => (catalogue.listed.has(name) ? undefined : runnerOf(name));

  return { operationHandler, registered, registeredNamed, offList, runnerOf, runTool, progressOf, elicitOf, optionsOf };
}

/**
 * The request context a task's call runs with: none of its request's (the answer is sent by the
 * time it runs), its own signal, no deadline, and the hook that records the job it queues.
 */
const taskContexts = new WeakMap<object, ToolCallOptions>();
function taskContext(options: TaskCallOptions): never {
  const ctx = { mcpReq: { signal: options.signal, notify: async () => {}, requestState: () => undefined } };
  taskContexts.set(ctx, options);
  return ctx as never;
}

const META_BY_NAME = new Map(META_TOOLS.map((m) => [m.name, m]));

/** A fresh MCP server exposing the session's listed tools and, when some stay unlisted, the ways to reach them. */
export function buildMcpServer(session: McpSession | ExecutorSession): McpServer {
  const inProcess = 'core' in session;
  const server = new McpServer(SERVER_INFO, {
    capabilities: { tools: { listChanged: session.catalogue.dynamic }, ...(inProcess ? PROMPT_CAPABILITIES : {}) },
    // Enabling a toolset registers many tools at once: one tools/list_changed for all of them.
    debouncedNotificationMethods: ['notifications/tools/list_changed'],
    instructions: 'berth manages servers, projects, applications, databases and services for the team this token is bound to. Tools only show what this token may do; list_toolsets reaches the rest.',
  });
  const tasks = 'core' in session ? session.tasks : undefined;
  const register = (t: Listed, handler: Handler) => {
    const registered = server.registerTool(
      t.name,
      {
        ...(restatesName(t) ? {} : { title: t.title }),
        description: t.description,
        inputSchema: t.inputSchema,
        outputSchema: t.outputSchema,
        ...(Object.keys(t.annotations).length ? { annotations: t.annotations } : {}),
      },
      handler as never,
    );
    // 2025 era tools/list says which tools run as a task; absent is "forbidden", and every listed
    // byte is paid for in each conversation. The 2026 era strips it: the server decides.
    if (tasks && 'op' in t && taskSupport((t as ToolDefinition).op) === 'optional') registered.execution = { taskSupport: 'optional' };
  };
  const tools = sessionTools(
    session,
    (t) => register(t, tools.operationHandler(t)),
    () => server.server.getClientCapabilities(),
  );
  for (const { def, handler } of tools.registered()) register(def, handler);
  const taskCall = tasks ? installTasks(server, tasks).taskCall : undefined;
  guardToolCalls(
    server,
    tools.offList,
    tools.optionsOf,
    taskCall && ((request, ctx, call) => taskCall(request, ctx, tools.runnerOf(String((request as { params?: { name?: unknown } }).params?.name))?.tool.op, call)),
  );
  if (inProcess) registerPromptsAndCompletion(server, session.core.deps.db, () => session.callerFor());
  if ('resources' in session && session.resources) registerResources(server, session.resources);
  // Views for people (MCP Apps), to a client that declares the extension only.
  if (inProcess) installApps(server, { core: session.core, callerFor: () => session.callerFor() });
  return server;
}

/**
 * What the SDK's tools/call would answer for a plain call in this session, without building a
 * server (the HTTP fast path, fast-call.ts), or undefined when the SDK must answer it: a tool
 * the session neither registers nor reaches, or arguments the guard refuses. Mirrors the SDK's
 * McpServer handler: the tool's result, its structured content checked against the output
 * schema (a mismatch is the SDK's tool error), and a thrown error as the SDK's tool error.
 */
export function fastToolCall(
  session: McpSession,
  name: string,
  args: Record<string, unknown> | undefined,
  options: { readonly signal: AbortSignal },
  elicits = false,
): Promise<{ result: CallToolResult; raw: boolean }> | undefined {
  // Arguments were checked by the caller (http-mcp.ts walks the params once).
  const tools = sessionTools(session);
  const entry = tools.registeredNamed(name);
  // A client that can ask its person: a call the approval policy may hold goes to the SDK's path,
  // which puts the question to the client (the fast path has no way to ask).
  const off = entry ? undefined : tools.offList(name);
  if (elicits && !(entry?.tool ?? off?.tool)?.op.annotations.readOnly) return undefined;
  if (entry) {
    return (async () => {
      let result: CallToolResult;
      try {
        // A listed operation runs with the options as they are (their signal is made only if read).
        const tool = entry.tool;
        const r = tool ? await tools.runTool(tool, args ?? {}, options) : undefined;
        result = r ? answerOf(r, ok) : await entry.handler(args ?? {}, { mcpReq: { signal: options.signal, notify: async () => {} } } as never);
        if (!result.isError) {
          if (result.structuredContent === undefined) throw new Error(`Output validation error: Tool ${name} has an output schema but no structured content was provided`);
          const v = await entry.def.outputSchema['~standard'].validate(result.structuredContent);
          if (v.issues?.length) throw new Error(`Output validation error: Invalid structured content for tool ${name}: ${v.issues.map(formatIssue).join(', ')}`);
        }
      } catch (err) {
        result = { content: [{ type: 'text', text: err instanceof Error ? err.message : String(err) }], isError: true };
      }
      return { result, raw: false };
    })();
  }
  if (!off) return undefined;
  return off.run(off.tool, args ?? {}, options).then((r) => ({
    result: answerOf(r, (value) => ({ content: [{ type: 'text', text: render(value) }], structuredContent: value })),
    raw: true,
  }));
}

/** The SDK's rendering of a schema issue in a tool error (validateStandardSchema). */
function formatIssue(issue: { message: string; path?: ReadonlyArray<PropertyKey | { key: PropertyKey }> }): string {
  if (!issue.path?.length) return issue.message;
  return `${issue.path.map((p) => String(typeof p === 'object' ? p.key : p)).join('.')}: ${issue.message}`;
}

/**
 * Before the SDK's tools/call handler sees a call (it is wrapped; the table is the SDK's internal
 * one, and test/mcp/*.test.ts pin the answers):
 * - arguments nested deeper than any input (the SDK's validation would overflow its stack and
 *   answer -32603) are a JSON-RPC invalid-params error; a prototype key in them is the
 *   contract's 422 naming the field, as REST answers;
 * - a tool the session reaches but does not list runs (as through call_operation), and one it
 *   does not reach gets the core's refusal (the permission it needs and the ones the token has),
 *   instead of the SDK's "Tool X not found"; neither is added to the list.
 * Every other call goes to the SDK's handler unchanged.
 */
function guardToolCalls(
  server: McpServer,
  offList: (name: string) => { tool: ToolDefinition; run: (tool: ToolDefinition, args: unknown, options: ToolCallOptions) => Promise<RunResult> } | undefined,
  optionsOf: (ctx: never) => ToolCallOptions,
  /** Tasks (tasks/handlers.ts): the answer when the call runs as a task, undefined when it runs now. */
  taskCall?: (request: unknown, ctx: unknown, call: (options: TaskCallOptions) => Promise<CallToolResult>) => Promise<Record<string, unknown> | undefined>,
): void {
  const table = server.server as unknown as RequestTable;
  const sdk = table._getRequestHandler?.('tools/call');
  // Fail loudly if the SDK's internals moved: serving without the guards is not an option.
  if (!sdk || !(table._requestHandlers instanceof Map)) throw new Error('The MCP SDK no longer exposes its tools/call handler; update guardToolCalls');
  table._requestHandlers.set('tools/call', async (request, ctx) => {
    const params = (request as { params?: { name?: unknown; arguments?: unknown } }).params;
    const problem = inputProblem(params?.arguments);
    if (problem?.kind === 'too_deep') throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Invalid arguments: ${problem.field} is ${problem.message.toLowerCase()}`);
    if (problem) return errorResult(validationError({ [problem.field]: [problem.message] }));
    const off = typeof params?.name === 'string' ? offList(params.name) : undefined;
    const call = async (c: unknown): Promise<CallToolResult> => {
      if (!off) return (await sdk(request, c)) as CallToolResult;
      const r = await off.run(off.tool, params?.arguments ?? {}, optionsOf(c as never));
      return answerOf(r, (value) => ({ content: [{ type: 'text', text: render(value) }], structuredContent: value }));
    };
    return (await taskCall?.(request, ctx, (options) => call(taskContext(options)))) ?? call(ctx);
  });
}
