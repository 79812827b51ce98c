import type { CallToolResult } from '@modelcontextprotocol/server';
import { BerthServer } from './berth-server.js';
import { PROMPT_CAPABILITIES, registerPromptsAndCompletion } from './prompts/register.js';
import { registerResources } from './resources/index.js';
import { Apps, APPS_CAPABILITIES } from './apps/install.js';
import { installTasks } from './tasks/handlers.js';
import { SERVER_INFO, type ExecutorSession, type McpSession } from './session.js';
import { contextOf, isToolResult, ToolSession } from './tool-session.js';

export { catalogueFor, errorResult, restatesName, SERVER_INFO, ToolCallError, type ExecutorSession, type McpSession, type ToolCatalogue, type ToolExecutor } from './session.js';

/**
 * A fresh MCP server for one session: the SDK's low-level Server, every method registered
 * through its public setRequestHandler. tools/list and tools/call are one ToolSession's
 * (tool-session.ts), which the HTTP fast path calls too; prompts, resources, tasks and the
 * views (MCP Apps) register their own methods beside them.
 */
export function buildMcpServer(session: McpSession | ExecutorSession): BerthServer {
  const inProcess = 'core' in session;
  const server = new BerthServer(SERVER_INFO, {
    capabilities: { tools: { listChanged: session.catalogue.dynamic }, ...(inProcess ? PROMPT_CAPABILITIES : {}) },
    // Enabling a toolset lists many tools at once: one tools/list_changed for all of them.
    debouncedNotificationMethods: ['notifications/tools/list_changed'],
    instructions: 'berth manages servers, projects, applications, databases and services for the team this token is bound to. Tools only show what this token may do; list_toolsets reaches the rest.',
  });
  const tasks = inProcess && session.tasks ? installTasks(server, session.tasks) : undefined;
  // Views for people (MCP Apps), to a client that declares the extension only. Both sides declare
  // an extension before either uses it: berth says it serves views, as it says it runs tasks.
  const apps = inProcess ? new Apps({ core: session.core, callerFor: () => session.callerFor(), clientCapabilities: () => server.getClientCapabilities() }) : undefined;
  if (apps) server.registerCapabilities(APPS_CAPABILITIES);
  const tools = new ToolSession(session, {
    clientCapabilities: () => server.getClientCapabilities(),
    listChanged: () => void server.sendToolListChanged().catch(() => undefined),
    project: (result, outputSchema) => server.projectCallToolResult(result, outputSchema),
    tasks,
    apps,
  });
  server.setRequestHandler('tools/list', (_request, ctx) => tools.list(ctx.mcpReq.envelope));
  server.answerToolCalls((request, ctx, sdk) => tools.call(request.params, contextOf(ctx), sdk));
  server.setRequestHandler('tools/call', (request, ctx) => tools.callListed(request.params, contextOf(ctx)));
  if (inProcess) registerPromptsAndCompletion(server, session.core.deps.db, () => session.callerFor());
  if (inProcess && session.resources) registerResources(server, session.resources, apps);
  return server;
}

/**
 * A plain tools/call answered without building a server (the HTTP fast path, fast-call.ts): the
 * same ToolSession.call the SDK's server makes, or undefined when the SDK must answer it (a tool
 * the session neither lists nor reaches; a call the approval policy may hold from a client that
 * can ask its person, which only the SDK's path can put to it). `raw`: an unlisted tool's answer,
 * which the SDK's result codec does not see on its path either.
 */
export function fastToolCall(
  session: McpSession,
  name: string,
  args: Record<string, unknown> | undefined,
  options: { readonly signal: AbortSignal },
  elicits = false,
): Promise<{ result: CallToolResult; raw: boolean }> | undefined {
  const tools = new ToolSession(session);
  const route = tools.routes(name);
  if (!route || (elicits && !route.readOnly)) return undefined;
  // Arguments were walked by the door (http.ts); the signal is made only if an operation reads it.
  const ctx = {
    argsChecked: true,
    get signal() {
      return options.signal;
    },
  };
  return tools.call({ name, arguments: args }, ctx).then((result) => {
    // Without tasks or a way to ask the client's person, a call answers a tool result.
    if (!isToolResult(result)) throw new Error(`Tool ${name} answered no tool result`);
    return { result, raw: route.off };
  });
}
