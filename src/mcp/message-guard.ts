import { serveStdio, StdioServerTransport } from '@modelcontextprotocol/server/stdio';
import { inputProblem, type InputProblem } from '../core/input-guard.js';

type Message = Record<string, unknown>;

/**
 * The JSON-RPC error for a request whose params nest deeper than any berth input, or undefined
 * when it may go on. Checked before the SDK reads a message: its validation walks params
 * recursively and answered such a request with -32603 (an internal error) instead of saying
 * the request was wrong. Prototype keys are left to the tools/call guard, which answers the 422.
 */
export function tooDeepAnswer(message: unknown, problem = paramsProblem(message)): Message | undefined {
  if (problem?.kind !== 'too_deep') return undefined;
  const m = message as Message;
  const id = typeof m.id === 'string' || typeof m.id === 'number' ? m.id : null;
  return { jsonrpc: '2.0', id, error: { code: -32602, message: `Invalid params: ${problem.field} is ${problem.message.toLowerCase()}` } };
}

/** What inputProblem finds in a message's params (undefined for anything but a plain message). */
export function paramsProblem(message: unknown): InputProblem | undefined {
  if (!message || typeof message !== 'object' || Array.isArray(message)) return undefined;
  return inputProblem((message as Message).params, 'params');
}

/** serveStdio, with every incoming message checked by tooDeepAnswer first (a notification is dropped). */
export function serveGuardedStdio(factory: Parameters<typeof serveStdio>[0]): ReturnType<typeof serveStdio> {
  const wire = new StdioServerTransport();
  const handle = serveStdio(factory, { transport: wire });
  // serveStdio has set its handler by now; messages reach it only through this one.
  const deliver = wire.onmessage!;
  wire.onmessage = (message) => {
    const answer = tooDeepAnswer(message);
    if (!answer) return deliver(message);
    if ('id' in (message as Message)) void wire.send(answer as never).catch(() => {});
  };
  return handle;
}
