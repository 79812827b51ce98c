import type { JSONRPCMessage } from '@modelcontextprotocol/server';
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

/**
 * A check of its own before a message reaches the SDK (the resources' subscriptions/listen, which
 * the SDK's stdio entry serves before any handler of berth's runs): the answer to send instead,
 * or undefined to deliver it. `claims` says which messages it looks at; the others are never delayed.
 */
export interface StdioPreCheck {
  claims(message: Message): boolean;
  check(message: Message): Promise<Message | undefined>;
}

/** serveStdio, with every incoming message checked by tooDeepAnswer first (a notification is dropped). */
export function serveGuardedStdio(factory: Parameters<typeof serveStdio>[0], pre?: StdioPreCheck): ReturnType<typeof serveStdio> {
  const wire = new StdioServerTransport();
  const handle = serveStdio(factory, { transport: wire });
  // serveStdio has set its handler by now; messages reach it only through this one.
  const deliver = wire.onmessage!;
  // berth's own answers: JSON-RPC errors, whose id is null where the request's could not be read.
  const answer = (m: Message) => void wire.send(m as JSONRPCMessage).catch(() => {});
  wire.onmessage = (message) => {
    const deep = tooDeepAnswer(message);
    if (deep) {
      if ('id' in (message as Message)) answer(deep);
      return;
    }
    if (!pre?.claims(message as Message)) return deliver(message);
    void pre.check(message as Message).then(
      (refusal) => (refusal ? answer(refusal) : deliver(message)),
      // A check that could not run refuses (a listen is never let through unchecked).
      () => answer({ jsonrpc: '2.0', id: (message as Message).id ?? null, error: { code: -32603, message: 'Internal error' } }),
    );
  };
  return handle;
}
