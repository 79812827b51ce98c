import { inputRequired, inputResponse, type ElicitRequestURLParams, type ElicitResult, type InputRequiredResult } from '@modelcontextprotocol/server';
import { getApproval, type ApprovalView } from '../core/approvals.js';
import type { Caller } from '../core/caller.js';
import type { Core } from '../core/gate.js';
import type { Operation, ProgressReporter } from '../core/operation.js';
import { parseInput } from '../core/validation.js';
import { approvalArgsHash } from '../store/approval-args-hash.js';
import { BerthError, errorCatalogue, validationError, type ErrorKind } from '../errors.js';

type Elicit = (params: ElicitRequestURLParams, options?: { timeout?: number; signal?: AbortSignal }) => Promise<ElicitResult>;

/** What the client declared it can ask its person, and how to reach it during one tool call. */
export type ClientAsker = LegacyAsker | RoundsAsker;

interface AskerBase {
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
 * approval page, and the held call's uuid as `requestState`); the client opens it for its person
 * and sends the same call again, which waits for the decision instead of running anew.
 */
export interface RoundsAsker extends AskerBase {
  era: 'modern';
  /** The echoed `requestState` of a retried call (untrusted: checked against the store). */
  state?: string;
  /** The client's answers of a retried call, keyed as berth asked (untrusted). */
  responses?: Record<string, unknown>;
}

/** The key berth gives its question in `inputRequests`, and the prefix of its `requestState`. */
const PAGE_KEY = 'approval_page';
const STATE_PREFIX = 'berth-approval:';

/** How often a call waiting on the approval page reads the approval's state. */
const POLL_MS = 500;

/**
 * The longest a call waits for the person's decision before it answers "pending" instead: an MCP
 * task's call (no client waiting on it) waits this long; any other call only its answer bound.
 */
const LONGEST_WAIT_MS = 10 * 60_000;

/** How often a waiting call that asked for progress hears that it still waits. */
const HEARTBEAT_MS = 5_000;

/** What bounds one call's wait: its answer bound (CallOptions.answerWithinMs) and its progress token. */
export interface WaitOptions {
  answerWithinMs?: number;
  progress?: ProgressReporter;
}

/**
 * When the wait for a decision ends: within the call's answer bound (the instance's setting, 25 s
 * by default), so a client with default timeouts gets the pending answer (approval uuid, page)
 * and follows it with get_approval rather than giving up on a call that holds on; a task's call
 * (answerWithinMs Infinity) waits up to LONGEST_WAIT_MS.
 */
function waitDeadline(core: Core, options: WaitOptions): number {
  return Date.now() + Math.min(LONGEST_WAIT_MS, options.answerWithinMs ?? core.deps.config.answerWithinMs);
}

/**
 * A held call put to the person at the MCP client, so the agent's call can finish in one turn
 * once they decide. Only by URL mode (issue 39): the client opens the console's page for this
 * approval, where a person signs in and decides (a passkey check when they have one); whatever
 * the client answers decides nothing, it only says whether to wait. The decision is read from
 * the store. No MCP answer approves: form mode is never used, since its "yes" comes from the
 * client the agent runs in. Returns the operation's output when it ran, an error when it was
 * denied, expired or failed, the 2026 era's question, or undefined to answer "pending" (no URL
 * mode, no decision in time).
 */
export async function confirmInClient(
  core: Core,
  caller: Caller,
  pending: BerthError,
  asker: ClientAsker,
  options: WaitOptions = {},
): Promise<{ ran: unknown } | { ask: InputRequiredResult } | BerthError | undefined> {
  const a = pending.details.approval;
  if (!a || !asker.url) return undefined;
  if (asker.era === 'modern') return { ask: pageRequest(a) };
  return askByUrl(core, caller, a, asker, options);
}

const pageMessage = (a: Pending) =>
  `An agent asks berth to run ${String(a.operation)}${a.target ? ` on ${String(a.target)}` : ''}. Your team's approval policy holds it for a person: an owner or admin of the team signs in on this page and approves or denies it, and the call finishes once they have.`;

/** The 2026 era's question: the approval page, carried in the result. */
function pageRequest(a: Pending): InputRequiredResult {
  return inputRequired({ inputRequests: { [PAGE_KEY]: inputRequired.elicitUrl({ message: pageMessage(a), url: String(a.approve_url) }) }, requestState: `${STATE_PREFIX}${a.uuid}` });
}

/**
 * A 2026-era call sent again after the approval page. It never decides anything (issue 39):
 * whatever `inputResponses` it carries, it may only report a decision a person made, or wait for
 * one after the client opened the page. Its `requestState` is the client's word, so it is checked
 * against the store: it must name a call of this team held for this same token (and OAuth
 * client) and operation, else it is a 422 on requestState. No decision (yet): the pending answer.
 */
export async function resumeInClient(core: Core, caller: Caller, op: Operation, args: unknown, asker: RoundsAsker, options: WaitOptions = {}): Promise<{ ran: unknown } | BerthError> {
  const operation = op.name;
  const uuid = asker.state?.startsWith(STATE_PREFIX) ? asker.state.slice(STATE_PREFIX.length) : '';
  const foreign = validationError({ requestState: ['This requestState does not name a call of this token that berth holds for approval; send the call again without it.'] });
  if (!/^[a-z0-9]{24}$/.test(uuid)) return foreign;
  const held = await getApproval(core.deps.db, core.deps.config, caller.teamId, uuid).catch(() => undefined);
  const by = held?.requested_by;
  if (!held || held.operation !== operation || by?.token_id !== caller.tokenId || by.user_id !== caller.userId || by.oauth_client_id !== (caller.oauth?.clientId ?? null)) return foreign;
  // The retry must be the same call: other arguments under a held call's state would be answered
  // with what the held arguments did (the person approved those, not these).
  if (heldArgsHash(op, args) !== held.args_hash) return foreign;
  const pendingAnswer = (v: ApprovalView) => new BerthError('approval_pending', { approval: v });
  const done = settled(held);
  if (done) return done;
  const page = inputResponse(asker.responses, PAGE_KEY);
  const opened = held.status === 'running' || (page.kind === 'elicit' && page.action === 'accept');
  return (opened && (await waitForDecision(core, caller, held.uuid, waitDeadline(core, options), options.progress, asker.signal))) || pendingAnswer(held);
}

/** The hash an approval binds (src/store/approval-args-hash.ts) of a call's arguments as the gate would hold them; undefined when they do not parse. */
function heldArgsHash(op: Operation, args: unknown): string | undefined {
  try {
    return approvalArgsHash(JSON.stringify(parseInput(op, args)));
  } catch {
    return undefined;
  }
}

/** A decided approval as the call's answer; undefined while it is still pending or running. */
function settled(v: ApprovalView): { ran: unknown } | BerthError | undefined {
  if (v.status === 'pending' || v.status === 'running') return undefined;
  if (v.status === 'succeeded' || v.status === 'failed') return ranOrWhy(v);
  return new BerthError('conflict', { message: `Approval ${v.uuid} was ${v.status}: the call did not run.` });
}

/**
 * Reads the approval from the store until it is decided (on any instance) or the deadline; a
 * caller with a progress token hears every HEARTBEAT_MS that the call still waits for a person.
 */
async function waitForDecision(core: Core, caller: Caller, uuid: string, deadline: number, progress?: ProgressReporter, signal?: AbortSignal): Promise<{ ran: unknown } | BerthError | undefined> {
  const started = Date.now();
  let told = started;
  while (Date.now() < deadline && !signal?.aborted) {
    const done = settled(await getApproval(core.deps.db, core.deps.config, caller.teamId, uuid));
    if (done) return done;
    if (progress && Date.now() - told >= HEARTBEAT_MS) {
      told = Date.now();
      await progress({ progress: Math.round((told - started) / 1000), message: `waiting for a person to decide approval ${uuid} in the console` }).catch(() => undefined);
    }
    await new Promise((r) => setTimeout(r, Math.min(POLL_MS, Math.max(0, deadline - Date.now()))));
  }
  return undefined;
}

/** The held call as the pending error carries it (an ApprovalView). */
type Pending = Record<string, unknown> & { uuid: string };

/**
 * URL mode: the client opens the console's approval page for its person (who signs in there; an
 * owner or admin decides, whoever holds the token), and the call waits for the decision, read
 * from the store, so a decision on any instance (console, CLI) counts and the call runs once,
 * where it was decided. Declined or no decision in time: the pending answer stands.
 */
async function askByUrl(core: Core, caller: Caller, a: Pending, asker: LegacyAsker, options: WaitOptions): Promise<{ ran: unknown } | BerthError | undefined> {
  const deadline = waitDeadline(core, options);
  let answer: ElicitResult;
  try {
    answer = await asker.elicit({ mode: 'url', elicitationId: a.uuid, url: String(a.approve_url), message: pageMessage(a) }, { timeout: Math.max(1, deadline - Date.now()), signal: asker.signal });
  } catch {
    return undefined;
  }
  if (answer.action !== 'accept') return undefined;
  const done = await waitForDecision(core, caller, a.uuid, deadline, options.progress, asker.signal);
  if (done) await asker.complete(a.uuid).catch(() => undefined);
  return done;
}

/** An approved call's outcome as the tool answers it: its result, or its failure as an error. */
function ranOrWhy(done: { status: string; result?: unknown; error?: { kind?: string; message?: string } | null }): { ran: unknown } | BerthError {
  if (done.status === 'succeeded') return { ran: done.result };
  const kind = (done.error?.kind ?? 'internal') as ErrorKind;
  return new BerthError(kind in errorCatalogue ? kind : 'internal', { message: done.error?.message });
}
