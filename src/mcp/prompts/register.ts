import { ProtocolError, ProtocolErrorCode, type Server } from '@modelcontextprotocol/server';
import { satisfies } from '../../auth/permissions.js';
import type { Caller } from '../../core/caller.js';
import type { Db } from '../../store/db.js';
import { complete, NO_COMPLETION, type CompletionKind } from '../completion/candidates.js';
import { RESOURCE_KINDS, templateOf } from '../resources/kinds.js';
import { PROMPTS, PromptArgumentError } from './catalogue.js';

const byName = new Map(PROMPTS.map((p) => [p.name, p]));

/**
 * The resource templates whose variable completes, by template URI (what a `ref/resource`
 * names): the uuid of one of the team's things of that kind. Derived from the resources' own
 * table (src/mcp/resources/kinds.ts), whose kinds are the plurals of the completion kinds.
 */
export const TEMPLATE_COMPLETIONS: Readonly<Record<string, { variable: string; kind: CompletionKind }>> = Object.fromEntries(
  RESOURCE_KINDS.map((k) => [templateOf(k), { variable: 'uuid', kind: k.kind.slice(0, -1) as CompletionKind }]),
);

/** The capabilities these handlers need declared before they are set. */
export const PROMPT_CAPABILITIES = { prompts: { listChanged: false }, completions: {} } as const;

interface Params {
  name?: unknown;
  arguments?: unknown;
  ref?: { type?: unknown; name?: unknown; uri?: unknown };
  argument?: { name?: unknown; value?: unknown };
}

const invalid = (message: string, data?: Record<string, unknown>) => new ProtocolError(ProtocolErrorCode.InvalidParams, message, data);

/**
 * prompts/list, prompts/get and completion/complete for one MCP server, answered by berth itself
 * (not the SDK's registerPrompt): the list is static, arguments are strings checked by the
 * prompt, and completion answers an unknown reference with an empty list (issue 38), where the
 * SDK's own handler answers an error. Every read is bound to the caller's team.
 */
export function registerPromptsAndCompletion(low: Server, db: Db, callerFor: () => Promise<Caller>): void {
  low.setRequestHandler('prompts/list', async () => ({
    prompts: PROMPTS.map((p) => ({
      name: p.name,
      title: p.title,
      description: p.description,
      arguments: p.arguments.map((a) => ({ name: a.name, description: a.description, required: a.required })),
    })),
  }));

  low.setRequestHandler('prompts/get', async (request) => {
    const params = request.params as Params;
    const prompt = typeof params.name === 'string' ? byName.get(params.name) : undefined;
    if (!prompt) throw invalid(`Prompt ${String(params.name)} not found`);
    const raw = (params.arguments ?? {}) as Record<string, unknown>;
    const args: Record<string, string | undefined> = {};
    for (const [k, v] of Object.entries(raw)) {
      if (!prompt.arguments.some((a) => a.name === k)) throw invalid(`Invalid arguments for prompt ${prompt.name}: unknown argument ${k}`);
      if (typeof v !== 'string' || v.length > 2048) throw invalid(`Invalid arguments for prompt ${prompt.name}: ${k} must be a string of at most 2048 characters`);
      args[k] = v;
    }
    const caller = await callerFor();
    if (!satisfies(caller.permissions, 'read')) throw invalid(`Prompt ${prompt.name} reads the team's records: this token lacks the read permission.`);
    try {
      const text = await prompt.build({ db, caller }, args);
      return { description: prompt.description, messages: [{ role: 'user', content: { type: 'text', text } }] };
    } catch (err) {
      if (err instanceof PromptArgumentError) throw invalid(`Invalid arguments for prompt ${prompt.name}: ${err.message}`, { argument: err.argument });
      throw err;
    }
  });

  low.setRequestHandler('completion/complete', async (request) => {
    const { ref, argument } = request.params as Params;
    const value = typeof argument?.value === 'string' ? argument.value : '';
    const kind = completionKind(ref, argument?.name);
    // An unknown prompt, template or argument completes to nothing (not an error: issue 38).
    if (!kind) return { completion: { ...NO_COMPLETION } };
    const names = ref?.type === 'ref/prompt';
    return { completion: await complete(db, await callerFor(), kind, value, names) };
  });
}

/** What a completion request's reference and argument name complete to, if anything. */
function completionKind(ref: Params['ref'], argument: unknown): CompletionKind | undefined {
  if (typeof argument !== 'string') return undefined;
  if (ref?.type === 'ref/prompt' && typeof ref.name === 'string') return byName.get(ref.name)?.arguments.find((a) => a.name === argument)?.completes;
  if (ref?.type === 'ref/resource' && typeof ref.uri === 'string') {
    const t = TEMPLATE_COMPLETIONS[ref.uri];
    return t && t.variable === argument ? t.kind : undefined;
  }
  return undefined;
}
