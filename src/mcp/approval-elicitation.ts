import { inputRequired, inputResponse, type ElicitRequestFormParams, type ElicitRequestURLParams, type ElicitResult, type InputRequest, type InputRequiredResult } from '@modelcontextprotocol/server';
import { APPROVER_ROLES, decide, getApproval, roleIn, type ApprovalView } from '../core/approvals.js';
import type { Caller } from '../core/caller.js';
import type { Core } from '../core/gate.js';
import { BerthError, errorCatalogue, validationError, type ErrorKind } from '../errors.js';

type Elicit = (params: ElicitRequestFormParams | ElicitRequestURLParams, options?: { timeout?: number; signal?: AbortSignal }) => Promise<ElicitResult>;

/** What the client declared it can ask its person, and how to reach it during one tool call. */
export type ClientAsker = LegacyAsker | RoundsAsker;

interface AskerBase {
  /** Form mode (a bare `elicitation: {}` counts as form, the spec's rule from before modes). */
  form: boolean;
  /** URL mode (MCP 2025-11-25 on): the client opens a page of ours for its person. */
  url: boolean;
  signal?: AbortSignal;
}

/** 2025 era: berth sends elicitation/create to the client during the call and waits for it. */
export interface LegacyAsker extends AskerBase {
  era: 'legacy';
  elicit: Elicit;
  /** notifications/elicitation/complete, once a URL elicitation's page has been decided. */
  complete: (elicitationId: string) => Promise<void>;
}

/**
 * 2026 era (multi round-trip requests): berth answers the call with `input_required` (the
 * question, and the held call's uuid as `requestState`); the client asks its person and sends
 * the same call again with the answer, which decides the held call instead of running anew.
 */
export interface RoundsAsker extends AskerBase {
  era: 'modern';
  /** The echoed `requestState` of a retried call (untrusted: checked against the store). */
  state?: string;
  /** The client's answers of a retried call, keyed as berth asked (untrusted). */
  responses?: Record<string, unknown>;
}

/** The keys berth gives its questions in `inputRequests`, and the prefix of its `requestState`. */
const FORM_KEY = 'approve';
const PAGE_KEY = 'approval_page';
const STATE_PREFIX = 'berth-approval:';

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
export async function confirmInClient(core: Core, caller: Caller, pending: BerthError, asker: ClientAsker): Promise<{ ran: unknown } | { ask: InputRequiredResult } | BerthError | undefined> {
  const a = pending.details.approval;
  if (!a) return undefined;
  const role = await roleIn(core.deps.db, caller.teamId, caller.userId);
  const approver = role !== null && APPROVER_ROLES.has(role);
  const mode = approver && asker.form ? 'form' : asker.url ? 'url' : undefined;
  if (!mode) return undefined;
  if (asker.era === 'modern') return { ask: inputRequiredFor(a, mode) };
  return mode === 'form' ? askByForm(core, caller, a, asker.elicit) : askByUrl(core, caller, a, asker);
}

const formQuestion = (a: Pending) =>
  `An agent asks berth to run ${String(a.operation)}${a.target ? ` on ${String(a.target)}` : ''} with ${JSON.stringify(a.arguments)}. Your team's approval policy holds it for a person. Approve it? (Or decide later at ${String(a.approve_url)}.)`;
const FORM_SCHEMA = {
  type: 'object',
  properties: { approve: { type: 'boolean', title: 'Approve and run it', description: 'Yes runs it once now; no denies it for good.' } },
  required: ['approve'],
} as const;
const pageMessage = (a: Pending) =>
  `An agent asks berth to run ${String(a.operation)}${a.target ? ` on ${String(a.target)}` : ''}. Your team's approval policy holds it for a person: an owner or admin of the team approves or denies it on this page, and the call finishes once they have.`;

/** The 2026 era's question: the same form or page as the 2025 era's, carried in the result. */
function inputRequiredFor(a: Pending, mode: 'form' | 'url'): InputRequiredResult {
  const question: Record<string, InputRequest> =
    mode === 'form'
      ? { [FORM_KEY]: inputRequired.elicit({ message: formQuestion(a), requestedSchema: FORM_SCHEMA as never }) }
      : { [PAGE_KEY]: inputRequired.elicitUrl({ message: pageMessage(a), url: String(a.approve_url) }) };
  return inputRequired({ inputRequests: question, requestState: `${STATE_PREFIX}${a.uuid}` });
}

/**
 * A 2026-era call sent again with the person's answer. Its `requestState` is the client's word,
 * so it is checked against the store: it must name a call of this team held for this same
 * token (and OAuth client) and operation, or nothing is decided. A yes by form counts as in the
 * 2025 era (the holder must be an owner or admin; decide() checks again); a no denies it; after
 * the approval page, the call waits for the decision as the 2025 era's does. No answer (cancel,
 * or a key berth did not ask): the pending answer stands.
 */
export async function resumeInClient(core: Core, caller: Caller, operation: string, asker: RoundsAsker): Promise<{ ran: unknown } | BerthError> {
  const uuid = asker.state?.startsWith(STATE_PREFIX) ? asker.state.slice(STATE_PREFIX.length) : '';
  const foreign = validationError({ requestState: ['This requestState does not name a call of this token that berth holds for approval; send the call again without it.'] });
  if (!/^[a-z0-9]{24}$/.test(uuid)) return foreign;
  const held = await getApproval(core.deps.db, core.deps.config, caller.teamId, uuid).catch(() => undefined);
  const by = held?.requested_by;
  if (!held || held.operation !== operation || by?.token_id !== caller.tokenId || by.user_id !== caller.userId || by.oauth_client_id !== (caller.oauth?.clientId ?? null)) return foreign;
  const pendingAnswer = (v: ApprovalView) => new BerthError('approval_pending', { approval: v });
  if (held.status !== 'pending') return settled(held) ?? (await waitForDecision(core, caller, held.uuid, asker.signal)) ?? pendingAnswer(held);

  const form = inputResponse(asker.responses, FORM_KEY);
  if (form.kind === 'elicit' && form.action !== 'cancel') {
    const who = { userId: caller.userId, teamId: caller.teamId, via: 'mcp_elicitation' as const, door: caller.door };
    if (form.action === 'accept' && form.content?.approve === true) return ranOrWhy(await decide(core.deps, core.runHeld, who, held.uuid, 'approve'));
    await decide(core.deps, core.runHeld, who, held.uuid, 'deny');
    return new BerthError('conflict', { message: `Declined by the person in the client: approval ${held.uuid} is denied and the call did not run.` });
  }
  const page = inputResponse(asker.responses, PAGE_KEY);
  if (page.kind === 'elicit' && page.action === 'accept') return (await waitForDecision(core, caller, held.uuid, asker.signal)) ?? pendingAnswer(held);
  return pendingAnswer(held);
}

/** A decided approval as the call's answer; undefined while it is still pending or running. */
function settled(v: ApprovalView): { ran: unknown } | BerthError | undefined {
  if (v.status === 'pending' || v.status === 'running') return undefined;
  if (v.status === 'succeeded' || v.status === 'failed') return ranOrWhy(v);
  return new BerthError('conflict', { message: `Approval ${v.uuid} was ${v.status}: the call did not run.` });
}

/** Reads the approval from the store until it is decided (on any instance) or time is up. */
async function waitForDecision(core: Core, caller: Caller, uuid: string, signal?: AbortSignal): Promise<{ ran: unknown } | BerthError | undefined> {
  const deadline = Date.now() + ANSWER_WITHIN_MS;
  while (Date.now() < deadline && !signal?.aborted) {
    const done = settled(await getApproval(core.deps.db, core.deps.config, caller.teamId, uuid));
    if (done) return done;
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
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
        message: formQuestion(a),
        requestedSchema: FORM_SCHEMA as never,
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
async function askByUrl(core: Core, caller: Caller, a: Pending, asker: LegacyAsker): Promise<{ ran: unknown } | BerthError | undefined> {
  let answer: ElicitResult;
  try {
    answer = await asker.elicit(
      {
        mode: 'url',
        elicitationId: a.uuid,
        url: String(a.approve_url),
        message: pageMessage(a),
      },
      { timeout: ANSWER_WITHIN_MS, signal: asker.signal },
    );
  } catch {
    return undefined;
  }
  if (answer.action !== 'accept') return undefined;
  const done = await waitForDecision(core, caller, a.uuid, asker.signal);
  if (done) await asker.complete(a.uuid).catch(() => undefined);
  return done;
}

/** An approved call's outcome as the tool answers it: its result, or its failure as an error. */
function ranOrWhy(done: { status: string; result?: unknown; error?: { kind?: string; message?: string } | null }): { ran: unknown } | BerthError {
  if (done.status === 'succeeded') return { ran: done.result };
  const kind = (done.error?.kind ?? 'internal') as ErrorKind;
  return new BerthError(kind in errorCatalogue ? kind : 'internal', { message: done.error?.message });
}
