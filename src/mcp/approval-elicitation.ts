import type { ElicitRequestFormParams, ElicitResult } from '@modelcontextprotocol/server';
import { APPROVER_ROLES, decide, roleIn } from '../core/approvals.js';
import type { Caller } from '../core/caller.js';
import type { Core } from '../core/gate.js';
import { BerthError, errorCatalogue, type ErrorKind } from '../errors.js';

type Elicit = (params: ElicitRequestFormParams, options?: { timeout?: number; signal?: AbortSignal }) => Promise<ElicitResult>;

/** How long the person in the client has to answer before the call answers "pending" instead. */
const ANSWER_WITHIN_MS = 10 * 60_000;

/**
 * A held call put to the person at the MCP client (form-mode elicitation, a yes/no), so the
 * agent's call can finish in one turn. The client shows the form to its person, never to the model
 * (the MCP spec), so a yes is that person's approval, recorded as via mcp_elicitation; it counts
 * only when the token's holder is an owner or admin of the team (else the call stays pending for
 * one). Returns the operation's output when it ran, an error when it was declined or failed, or
 * undefined to answer "pending" (no answer, a client that cannot ask, a holder who may not approve).
 */
export async function confirmInClient(core: Core, caller: Caller, pending: BerthError, elicit: Elicit): Promise<{ ran: unknown } | BerthError | undefined> {
  const a = pending.details.approval;
  if (!a) return undefined;
  const role = await roleIn(core.deps.db, caller.teamId, caller.userId);
  if (!role || !APPROVER_ROLES.has(role)) return undefined;
  let answer: ElicitResult;
  try {
    answer = await elicit(
      {
        mode: 'form',
        message: `An agent asks berth to run ${String(a.operation)}${a.target ? ` on ${String(a.target)}` : ''} with ${JSON.stringify(a.arguments)}. Your team's approval policy holds it for a person. Approve it? (Or decide later at ${String(a.approve_url)}.)`,
        requestedSchema: {
          type: 'object',
          properties: { approve: { type: 'boolean', title: 'Approve and run it', description: 'Yes runs it once now; no denies it for good.' } },
          required: ['approve'],
        },
      },
      { timeout: ANSWER_WITHIN_MS },
    );
  } catch {
    // A client that cannot elicit after all (or a newer protocol era): the pending answer stands.
    return undefined;
  }
  if (answer.action === 'cancel') return undefined;
  const who = { userId: caller.userId, teamId: caller.teamId, via: 'mcp_elicitation' as const, door: caller.door };
  if (answer.action === 'accept' && answer.content?.approve === true) {
    const done = await decide(core.deps, core.runHeld, who, a.uuid, 'approve');
    if (done.status === 'succeeded') return { ran: done.result };
    const kind = (done.error?.kind ?? 'internal') as ErrorKind;
    return new BerthError(kind in errorCatalogue ? kind : 'internal', { message: done.error?.message });
  }
  await decide(core.deps, core.runHeld, who, a.uuid, 'deny');
  return new BerthError('conflict', { message: `Declined by the person in the client: approval ${a.uuid} is denied and the call did not run.` });
}
