import type { ElicitRequestFormParams, ElicitRequestURLParams, ElicitResult } from '@modelcontextprotocol/server';
import { APPROVER_ROLES, decide, getApproval, roleIn } from '../core/approvals.js';
import type { Caller } from '../core/caller.js';
import type { Core } from '../core/gate.js';
import { BerthError, errorCatalogue, type ErrorKind } from '../errors.js';

type Elicit = (params: ElicitRequestFormParams | ElicitRequestURLParams, options?: { timeout?: number; signal?: AbortSignal }) => Promise<ElicitResult>;

/** What the client declared it can ask its person, and how to reach it during one tool call. */
export interface ClientAsker {
  /** Form mode (a bare `elicitation: {}` counts as form, the spec's rule from before modes). */
  form: boolean;
  /** URL mode (MCP 2025-11-25): the client opens a page of ours for its person. */
  url: boolean;
  elicit: Elicit;
  /** notifications/elicitation/complete, once a URL elicitation's page has been decided. */
  complete: (elicitationId: string) => Promise<void>;
  signal?: AbortSignal;
}

/** How often a call waiting on the approval page reads the approval's state. */
const POLL_MS = 500;

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
export async function confirmInClient(core: Core, caller: Caller, pending: BerthError, asker: ClientAsker): Promise<{ ran: unknown } | BerthError | undefined> {
  const a = pending.details.approval;
  if (!a) return undefined;
  const role = await roleIn(core.deps.db, caller.teamId, caller.userId);
  const approver = role !== null && APPROVER_ROLES.has(role);
  if (approver && asker.form) return askByForm(core, caller, a, asker.elicit);
  if (asker.url) return askByUrl(core, caller, a, asker);
  return undefined;
}

/** The held call as the pending error carries it (an ApprovalView). */
type Pending = Record<string, unknown> & { uuid: string };

/** Form mode: the holder, an owner or admin, says yes or no in the client. */
async function askByForm(core: Core, caller: Caller, a: Pending, elicit: Elicit): Promise<{ ran: unknown } | BerthError | undefined> {
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
    return ranOrWhy(await decide(core.deps, core.runHeld, who, a.uuid, 'approve'));
  }
  await decide(core.deps, core.runHeld, who, a.uuid, 'deny');
  return new BerthError('conflict', { message: `Declined by the person in the client: approval ${a.uuid} is denied and the call did not run.` });
}

/**
 * URL mode: the client opens the console's approval page for its person (who signs in there; an
 * owner or admin decides, whoever holds the token), and the call waits for the decision, read
 * from the store, so a decision on any instance (console, CLI) counts and the call runs once,
 * where it was decided. Declined or no decision in time: the pending answer stands.
 */
async function askByUrl(core: Core, caller: Caller, a: Pending, asker: ClientAsker): Promise<{ ran: unknown } | BerthError | undefined> {
  let answer: ElicitResult;
  try {
    answer = await asker.elicit(
      {
        mode: 'url',
        elicitationId: a.uuid,
        url: String(a.approve_url),
        message: `An agent asks berth to run ${String(a.operation)}${a.target ? ` on ${String(a.target)}` : ''}. Your team's approval policy holds it for a person: an owner or admin of the team approves or denies it on this page, and the call finishes once they have.`,
      },
      { timeout: ANSWER_WITHIN_MS, signal: asker.signal },
    );
  } catch {
    return undefined;
  }
  if (answer.action !== 'accept') return undefined;
  const deadline = Date.now() + ANSWER_WITHIN_MS;
  while (Date.now() < deadline && !asker.signal?.aborted) {
    const v = await getApproval(core.deps.db, core.deps.config, caller.teamId, a.uuid);
    if (v.status !== 'pending' && v.status !== 'running') {
      await asker.complete(a.uuid).catch(() => undefined);
      if (v.status === 'succeeded' || v.status === 'failed') return ranOrWhy(v);
      return new BerthError('conflict', { message: `Approval ${a.uuid} was ${v.status}: the call did not run.` });
    }
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
  return undefined;
}

/** An approved call's outcome as the tool answers it: its result, or its failure as an error. */
function ranOrWhy(done: { status: string; result?: unknown; error?: { kind?: string; message?: string } | null }): { ran: unknown } | BerthError {
  if (done.status === 'succeeded') return { ran: done.result };
  const kind = (done.error?.kind ?? 'internal') as ErrorKind;
  return new BerthError(kind in errorCatalogue ? kind : 'internal', { message: done.error?.message });
}
