import {
  CLIENT_CAPABILITIES_META_KEY,
  PROTOCOL_VERSION_META_KEY,
  ProtocolError,
  ProtocolErrorCode,
  type CallToolResult,
  type ClientCapabilities,
  type InputRequiredResult,
  type Notification,
  type ServerContext,
  type Tool,
} from '@modelcontextprotocol/server';
import { confirmInClient, resumeInClient, type ClientAsker } from './approval-elicitation.js';
import { agentHint, BerthError, fromWire, unexpected, validationError, type HintContext } from '../errors.js';
import { inputProblem } from '../core/input-guard.js';
import type { CallOptions, ProgressReporter } from '../core/operation.js';
import { issuesToErrors } from '../core/validation.js';
import { TOOLSET_DESCRIPTIONS, TOOLSETS } from '../core/operation.js';
import { agentArgs, agentOutputValue } from './tools/agent-view.js';
import { hintContext, META_TOOLS, metaInputs, type MetaTool } from './tools/meta.js';
import type { ToolDefinition } from './tools/registry.js';
import { jsonSchemaOf } from './tools/json-schema.js';
import { listedTool, schemaIssues, type ListedDef } from './tools/listing.js';
import { parseToolsets, selects } from './tools/toolsets.js';
import { errorResult, ok, ToolCallError, type ExecutorSession, type McpSession, type ToolCatalogue, type ToolExecutor } from './session.js';
import type { Apps } from './apps/install.js';
import { FOLLOW_TOOL } from './apps/follow.js';
import { taskSupport, type TaskDoor } from './tasks/handlers.js';
import type { TaskCallOptions } from './tasks/runner.js';

/**
 * What one tools/call needs of its request, however it came: the SDK's handler context
 * (contextOf), the HTTP fast path's (a signal), or a task's run (its own options).
 */
export interface CallContext {
  signal: AbortSignal;
  /** 2026 era: the request's envelope (its revision, the client's capabilities). */
  envelope?: Record<string, unknown>;
  progressToken?: string | number;
  notify?: (notification: Notification) => Promise<void>;
  elicitInput?: ServerContext['mcpReq']['elicitInput'];
  requestState?: () => unknown;
  inputResponses?: Record<string, unknown>;
  /** A task's run: its own options (the request that made it is answered by then). */
  task?: TaskCallOptions;
  /** The door walked the arguments already (the HTTP fast path). */
  argsChecked?: boolean;
}

/** The call context of an SDK request handler's. */
export function contextOf(ctx: ServerContext): CallContext {
  const r = ctx.mcpReq;
  return {
    signal: r.signal,
    envelope: r.envelope,
    progressToken: r._meta?.progressToken,
    notify: (n) => r.notify(n),
    elicitInput: (params, options) => r.elicitInput(params, options),
    requestState: () => r.requestState(),
    inputResponses: r.inputResponses,
  };
}

/** tools/call's params as the SDK hands them to its handler (their shape checked). */
export interface CallParams {
  name: string;
  arguments?: Record<string, unknown>;
}

/** tools/call's params as they came, before the SDK reads them. */
export type RawParams = Record<string, unknown>;

export const isToolResult = (r: Record<string, unknown>): r is CallToolResult => Array.isArray(r.content);

/** A tools/call's answer: a tool result, the question for the client's person (2026 era), or a task's (tasks/handlers.ts). */
export type CallAnswer = CallToolResult | InputRequiredResult;

/** A call's outcome: its value, a tool error, or (2026 era) the question to put to the client's person. */
type RunResult = { value: Record<string, unknown> } | { error: CallToolResult } | { ask: InputRequiredResult };
const answerOf = (r: RunResult, value: (v: Record<string, unknown>) => CallToolResult): CallAnswer => ('error' in r ? r.error : 'ask' in r ? r.ask : value(r.value));
/** A tool call's options: the core's, and the client's elicitation when it has one. */
type ToolCallOptions = CallOptions & { elicit?: ClientAsker };
type Handler = (args: Record<string, unknown>, ctx: CallContext) => Promise<CallAnswer>;
type Runner = { tool: ToolDefinition; run: (tool: ToolDefinition, args: unknown, options: ToolCallOptions) => Promise<RunResult> };
/** How a name is called: a tool the session lists (the SDK's rules: input and output checked), or one it reaches unlisted. */
type Route = { listed: ListedDef; handler: Handler; tool?: ToolDefinition } | { off: Runner };

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

const META_BY_NAME = new Map(META_TOOLS.map((m) => [m.name, m]));

/** What a tool session is given besides its session: the pieces of its server it speaks through. */
export interface ToolSessionHooks {
  /** What a 2025-era client declared at initialize (its elicitation). */
  clientCapabilities?: () => ClientCapabilities | undefined;
  /** enable_toolsets listed more tools (dynamic sessions announce tools/list_changed). */
  listChanged?: () => void;
  /** The SDK's projection of a listed tool's result onto the served era's wire (Server.projectCallToolResult). */
  project?: (result: CallToolResult, outputSchema: Record<string, unknown> | undefined) => CallToolResult;
  /** Tasks: a call the client asks to run as one (tasks/handlers.ts). */
  tasks?: TaskDoor;
  /** MCP Apps: the views' tool links and the follow tool (apps/install.ts). */
  apps?: Apps;
}

/**
 * The tools of one MCP session, and the one way a tools/call runs: the SDK's tools/list and
 * tools/call handlers (stdio, streamable HTTP, a 2025 HTTP session: server.ts) and the HTTP fast
 * path (fast-call.ts) all call list() and call() here.
 */
export class ToolSession {
  private readonly byName: Map<string, ToolDefinition>;
  private readonly unreachable: Map<string, ToolDefinition>;
  private readonly execute: ToolExecutor;

  constructor(
    private readonly session: McpSession | ExecutorSession,
    private readonly hooks: ToolSessionHooks = {},
  ) {
    ({ byName: this.byName, unreachable: this.unreachable } = tablesOf(session.catalogue, session.all));
    this.execute = 'execute' in session ? session.execute : async (tool, args, options) => session.core.run(tool.op, await session.callerFor(tool), args, options);
  }

  private get catalogue(): ToolCatalogue {
    return this.session.catalogue;
  }

  /** Meta tools are listed when some reachable tool is not (enable_toolsets only where the list can change). */
  private metaListed(meta: MetaTool): boolean {
    return this.catalogue.listed.size < this.catalogue.reachable.length && (!meta.needsListChanges || this.catalogue.dynamic);
  }

  /** tools/list: the listed operations, the meta tools when some stay unlisted, and the views' links to a client with the extension. */
  list(envelope?: Record<string, unknown>): { tools: Tool[] } {
    const tasks = this.hooks.tasks !== undefined;
    const tools: Tool[] = [];
    for (const tool of this.catalogue.reachable) if (this.catalogue.listed.has(tool.name)) tools.push(listedTool(tool, tasks && taskSupport(tool.op) === 'optional'));
    for (const meta of META_TOOLS) if (this.metaListed(meta)) tools.push(listedTool(meta, false));
    const apps = this.hooks.apps;
    return { tools: apps?.declared(envelope) ? apps.listed(tools) : tools };
  }

  /**
   * How a call of this name would run, for the fast path: undefined when the session neither
   * lists nor reaches it; `off` when it runs without the SDK's checks of the result (unlisted).
   */
  routes(name: string): { readOnly: boolean; off: boolean } | undefined {
    const route = this.route(name);
    if (!route) return undefined;
    const tool = 'off' in route ? route.off.tool : route.tool;
    return { readOnly: Boolean(tool?.op.annotations.readOnly), off: 'off' in route };
  }

  /**
   * One tools/call, as its request came (the SDK has not read it yet). Before the tool runs:
   * - the views' follow tool, for a client that declared the extension;
   * - arguments nested deeper than any input (the SDK's validation would overflow its stack and
   *   answer -32603) are a JSON-RPC invalid-params error; a prototype key in them is the
   *   contract's 422 naming the field, as REST answers;
   * - a call the client asks to run as a task gets its task (tasks/handlers.ts);
   * - a tool the session reaches but does not list runs (as through call_operation), and one it
   *   does not reach gets the core's refusal (the permission it needs and the ones the token
   *   has), instead of "Tool X not found".
   * A listed tool (or an unknown name) then runs as the SDK's McpServer runs a registered one
   * (listed(): the SDK's own checks of the request and the result around callListed), or
   * directly where there is no SDK server (the HTTP fast path).
   */
  async call(params: RawParams | undefined, ctx: CallContext, listed?: () => Promise<Record<string, unknown>>): Promise<Record<string, unknown>> {
    const name = params?.name;
    const apps = this.hooks.apps;
    if (name === FOLLOW_TOOL && apps?.declared(ctx.envelope)) return apps.follow(params?.arguments, ctx.signal);
    const problem = ctx.argsChecked ? undefined : inputProblem(params?.arguments);
    if (problem?.kind === 'too_deep') throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Invalid arguments: ${problem.field} is ${problem.message.toLowerCase()}`);
    if (problem) return errorResult(validationError({ [problem.field]: [problem.message] }));
    const route = typeof name === 'string' ? this.route(name) : undefined;
    const off = route && 'off' in route ? route.off : undefined;
    const args = params?.arguments ?? {};
    const now = async (c: CallContext): Promise<Record<string, unknown>> => {
      if (off) return answerOf(await off.run(off.tool, args, this.optionsOf(c)), ok);
      return listed && !c.task ? listed() : this.run(String(name), args, route, c);
    };
    const tasks = this.hooks.tasks;
    if (tasks) {
      const op = typeof name === 'string' ? this.runnerOf(name)?.tool.op : undefined;
      const task = await tasks.taskCall({ name: String(name), task: params?.task }, ctx, op, async (options) => {
        const r = await now({ signal: options.signal, task: options });
        // A task's call has no client to ask (its options carry no elicitation).
        if (!isToolResult(r)) throw new Error(`Tool ${String(name)} asked for input while running as a task`);
        return r;
      });
      if (task) return task;
    }
    return now(ctx);
  }

  /** A listed tool's call as the SDK hands it over, its request checked (an unknown name is the SDK's -32602). */
  callListed(params: CallParams, ctx: CallContext): Promise<CallAnswer> {
    const route = this.route(params.name);
    return this.run(params.name, params.arguments ?? {}, route && 'listed' in route ? route : undefined, ctx);
  }

  /** A listed tool's call, as the SDK's McpServer runs a registered tool. */
  private async run(name: string, args: unknown, route: Route | undefined, ctx: CallContext): Promise<CallAnswer> {
    if (!route || 'off' in route) throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Tool ${name} not found`);
    try {
      const issues = await schemaIssues(route.listed.inputSchema, args);
      if (issues.error) throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Input validation error: Invalid arguments for tool ${name}: ${issues.error}`);
      const result = await route.handler(issues.value as Record<string, unknown>, ctx);
      if (isToolResult(result)) {
        if (!result.isError) {
          if (result.structuredContent === undefined)
            throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Output validation error: Tool ${name} has an output schema but no structured content was provided`);
          const out = await schemaIssues(route.listed.outputSchema, result.structuredContent);
          if (out.error) throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Output validation error: Invalid structured content for tool ${name}: ${out.error}`);
        }
        return this.hooks.project ? this.hooks.project(result, jsonSchemaOf(route.listed.outputSchema, 'output')) : result;
      }
      return result;
    } catch (error) {
      if (error instanceof ProtocolError && error.code === ProtocolErrorCode.UrlElicitationRequired) throw error;
      return { content: [{ type: 'text', text: error instanceof Error ? error.message : String(error) }], isError: true };
    }
  }

  /** How a name is called in this session now (enable_toolsets lists more on stdio). */
  private route(name: string): Route | undefined {
    const tool = this.byName.get(name);
    if (tool && this.catalogue.listed.has(name)) return { listed: tool, handler: (args, ctx) => this.operation(tool, args, ctx), tool };
    const meta = tool ? undefined : META_BY_NAME.get(name);
    if (meta && this.metaListed(meta)) return { listed: meta, handler: (args, ctx) => this.meta(meta, args, ctx) };
    const off = this.runnerOf(name);
    return off && { off };
  }

  /** The operation a name calls and how it runs: as the token may, or refused by the core saying why. */
  private runnerOf(name: string): Runner | undefined {
    const tool = this.byName.get(name);
    if (tool) return { tool, run: (t, a, o) => this.runTool(t, a, o) };
    const hidden = this.unreachable.get(name);
    return hidden && { tool: hidden, run: (t, a, o) => this.runUnreachable(t, a, o) };
  }

  private async operation(tool: ToolDefinition, args: Record<string, unknown>, ctx: CallContext): Promise<CallAnswer> {
    return answerOf(await this.runTool(tool, args, this.optionsOf(ctx)), ok);
  }

  /** Where the ids of a failed call's kind are listed, said the way this session reaches that tool. */
  private hintFor(tool: ToolDefinition): HintContext {
    const { catalogue } = this;
    const ctx = hintContext(tool, catalogue.reachable);
    if (ctx.listTool && !catalogue.listed.has(ctx.listTool)) {
      // Applications, databases and services all appear in list_resources, which the default set lists.
      const inResources = ['applications', 'databases', 'services'].includes(tool.op.toolset) && catalogue.listed.has('list_resources');
      ctx.listTool = inResources ? 'list_resources' : `call_operation with name ${ctx.listTool}`;
    }
    return ctx;
  }

  /** One operation call, as its tool or through call_operation: the agent's view, errors with hints. */
  private async runTool(tool: ToolDefinition, rawArgs: unknown, options: ToolCallOptions): Promise<RunResult> {
    const { session } = this;
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
      return view(await this.execute(tool, agent.args, options));
    } catch (err) {
      // A held call: a client that can ask its person does, so the call can finish in this turn.
      if (err instanceof BerthError && err.kind === 'approval_pending' && options.elicit && !(options.elicit.era === 'modern' && options.elicit.state !== undefined) && 'core' in session) {
        const asked = await confirmInClient(session.core, await session.callerFor(tool), err, options.elicit, options).catch((e: unknown) => unexpected(e));
        if (asked instanceof BerthError) return { error: errorResult(asked, this.hintFor(tool)) };
        if (asked && 'ask' in asked) return asked;
        if (asked) return view(asked.ran);
      }
      if (err instanceof BerthError) return { error: errorResult(err, this.hintFor(tool)) };
      if (err instanceof ToolCallError) {
        const known = err.status !== undefined && err.body.hint === undefined ? fromWire(err.status, err.body) : undefined;
        const hint = known && agentHint(known, this.hintFor(tool));
        const body = hint ? { ...err.body, hint } : err.body;
        return { error: { isError: true, content: [{ type: 'text', text: JSON.stringify(body) }] } };
      }
      const e = unexpected(err);
      if (e.kind === 'internal') session.logger.error({ err, tool: tool.name }, 'tool failed');
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
  private async runUnreachable(tool: ToolDefinition, rawArgs: unknown, options: ToolCallOptions): Promise<RunResult> {
    if (this.session.readOnly && !tool.op.annotations.readOnly) {
      const needed = tool.op.permission === 'authenticated' ? 'write' : tool.op.permission;
      return { error: errorResult(new BerthError('missing_permissions', { missingPermissions: [needed], readOnlySession: true }), this.hintFor(tool)) };
    }
    return this.runTool(tool, rawArgs, options);
  }

  /** A call's options from its context; a task's call has its own. */
  private optionsOf(ctx: CallContext): ToolCallOptions {
    if (ctx.task) return ctx.task;
    const progress = progressOf(ctx);
    const elicit = this.elicitOf(ctx);
    return {
      ...(progress ? { progress } : {}),
      ...(elicit ? { elicit } : {}),
      // Read only if the operation reads it: the fast path's signal is made on first read.
      get signal() {
        return ctx.signal;
      },
    };
  }

  /** The client's elicitation, when it declared one: a held call is put to its person (approval-elicitation.ts). */
  private elicitOf(ctx: CallContext): ClientAsker | undefined {
    // 2026 era: the capabilities come with each request, the question goes back in its result.
    const envelope = ctx.envelope;
    if (envelope?.[PROTOCOL_VERSION_META_KEY] !== undefined) {
      const e = (envelope[CLIENT_CAPABILITIES_META_KEY] as ClientCapabilities | undefined)?.elicitation;
      if (!e) return undefined;
      const state = ctx.requestState?.();
      return {
        era: 'modern',
        url: Boolean(e.url),
        signal: ctx.signal,
        ...(typeof state === 'string' ? { state } : {}),
        ...(ctx.inputResponses ? { responses: ctx.inputResponses } : {}),
      };
    }
    const e = this.hooks.clientCapabilities?.()?.elicitation;
    const { elicitInput, notify } = ctx;
    if (!e || !elicitInput) return undefined;
    return {
      era: 'legacy',
      url: Boolean(e.url),
      elicit: elicitInput,
      complete: (elicitationId) => notify?.({ method: 'notifications/elicitation/complete', params: { elicitationId } }) ?? Promise.resolve(),
      signal: ctx.signal,
    };
  }

  private readonly metaHandlers: Record<string, (args: Record<string, unknown>, ctx: CallContext) => Promise<CallAnswer>> = {
    list_toolsets: async () => {
      const { catalogue } = this;
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
      const { catalogue } = this;
      const sel = parseToolsets((args.toolsets as string[]).join(','));
      const added = catalogue.reachable.filter((t) => !catalogue.listed.has(t.name) && selects(sel, t.op));
      for (const t of added) catalogue.listed.add(t.name);
      if (added.length) this.hooks.listChanged?.();
      return ok({ added: added.map((t) => t.name) });
    },
    describe_operation: async (args) => {
      const tool = this.byName.get(args.name as string);
      if (!tool) return unknownOperation(args.name as string);
      return ok({
        name: tool.name,
        title: tool.title,
        description: tool.description,
        toolset: tool.op.toolset,
        listed: this.catalogue.listed.has(tool.name),
        input_schema: jsonSchemaOf(tool.inputSchema, 'input'),
        output_schema: jsonSchemaOf(tool.outputSchema, 'output'),
        annotations: tool.annotations,
      });
    },
    call_operation: async (args, ctx) => {
      const found = this.runnerOf(args.name as string);
      if (!found) return unknownOperation(args.name as string);
      const r = await found.run(found.tool, args.arguments ?? {}, this.optionsOf(ctx));
      return answerOf(r, (value) => ok({ name: found.tool.name, result: value }));
    },
  };

  private async meta(meta: MetaTool, args: Record<string, unknown>, ctx: CallContext): Promise<CallAnswer> {
    // The input schema lets arguments through; parsed here for the contract's 422 shape.
    const parsed = metaInputs[meta.name as keyof typeof metaInputs].safeParse(args ?? {});
    if (!parsed.success) return errorResult(validationError(issuesToErrors(parsed.error.issues)));
    return this.metaHandlers[meta.name]!(parsed.data, ctx);
  }
}

const unknownOperation = (name: string) => errorResult(validationError({ name: [`No operation named ${name} is available to this token. list_toolsets shows the ones that are.`] }));

function progressOf(ctx: CallContext): ProgressReporter | undefined {
  const token = ctx.progressToken;
  const notify = ctx.notify;
  return token === undefined || !notify ? undefined : (p) => notify({ method: 'notifications/progress', params: { progressToken: token, ...p } });
}
