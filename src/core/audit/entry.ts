import { BerthError, errorCatalogue } from '../../errors.js';
import { newUuid } from '../../ids.js';
import type { AuditLogTable } from '../../store/schema-audit.js';
import type { Caller } from '../caller.js';
import type { Operation } from '../operation.js';
import { operationTable } from '../operations/table.js';
import { sensitiveNames } from '../redact.js';

/**
 * What one audit row says about a call: built from the operation's declaration, the caller, the
 * input it sent and the output or error, with no operation's help (so none can forget).
 */

export const REDACTED = '[redacted]';

/**
 * Argument names hidden whatever the operation declares: names that hold secrets by their nature
 * (passwords, keys, tokens, webhook URLs, variable values, scripts and commands, compose files).
 * Beside them, what a caller without read:sensitive cannot read is hidden in the input too: every
 * name the operation's output marks sensitive (sensitive(...)), and every name the reads of its
 * toolset mark — create_env's `value` is the value list_envs hides, and create_s3_storage, which
 * answers only a uuid, still hides the `key` get_s3_storage hides.
 */
const SECRET_NAME = /pass(word)?|secret|token|private|_key$|^key_|api_key|credential|^value$|_value$|content|script|command|compose|dockerfile|webhook|_url$|^url$|cert|tls|dsn|authorization/i;
/** A value that is a private key is hidden whatever its name (a nested `key` of a TLS pair). */
const PRIVATE_KEY_VALUE = /PRIVATE KEY-----/;
const MAX_STRING = 500;
const MAX_ITEMS = 50;
const MAX_TARGETS = 20;

/** The names the reads of a toolset hide, worked out once per toolset from the registered table. */
const hiddenByToolset = new Map<string, ReadonlySet<string>>();
function hiddenByReads(toolset: string): ReadonlySet<string> {
  let s = hiddenByToolset.get(toolset);
  if (!s) {
    const into = new Set<string>();
    for (const op of operationTable()) if (op.toolset === toolset && op.annotations.readOnly) sensitiveNames(op.output, into);
    hiddenByToolset.set(toolset, (s = into));
  }
  return s;
}

const hiddenByOp = new WeakMap<Operation, Set<string>>();
function hiddenNames(op: Operation): Set<string> {
  let s = hiddenByOp.get(op);
  if (!s) hiddenByOp.set(op, (s = sensitiveNames(op.output, new Set(hiddenByReads(op.toolset)))));
  return s;
}

/**
 * Whether a name hides its value, decided once per name and set of hidden names: the two regular
 * expressions were most of an entry's row building, and arguments repeat the same few names.
 * Bounded, since names come from callers (a strict input refuses unknown ones, the CLI's do not).
 */
const NAMES_MAX = 2_000;
const secretNameBySet = new WeakMap<ReadonlySet<string>, Map<string, boolean>>();
function secretName(k: string, hidden: ReadonlySet<string>): boolean {
  let known = secretNameBySet.get(hidden);
  if (!known) secretNameBySet.set(hidden, (known = new Map()));
  let secret = known.get(k);
  if (secret === undefined) {
    secret = !/(^|_)(uuid|id)s?$/.test(k) && (hidden.has(k) || SECRET_NAME.test(k));
    if (known.size >= NAMES_MAX) known.clear();
    known.set(k, secret);
  }
  return secret;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Empty values and flags stay visible (nothing to hide); ids and uuids are names, never secrets. */
const secretAt = (k: string, x: unknown, hidden: ReadonlySet<string>): boolean => x !== null && x !== undefined && x !== '' && typeof x !== 'boolean' && secretName(k, hidden);

function scrub(v: unknown, hidden: ReadonlySet<string>, depth: number): unknown {
  if (typeof v === 'string') return PRIVATE_KEY_VALUE.test(v) ? REDACTED : v.length > MAX_STRING ? `${v.slice(0, MAX_STRING)}…(${v.length} chars)` : v;
  if (depth > 6) return '…';
  if (Array.isArray(v)) return v.slice(0, MAX_ITEMS).map((x) => scrub(x, hidden, depth + 1));
  if (isObject(v)) {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) out[k] = secretAt(k, x, hidden) ? REDACTED : scrub(x, hidden, depth + 1);
    return out;
  }
  return v;
}

/**
 * The arguments as a caller without read:sensitive sees them: a field whose value was hidden is
 * left out, name and all, as every response leaves sensitive fields out for such a caller.
 */
export function withoutHidden(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(withoutHidden);
  if (!isObject(v)) return v;
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) if (x !== REDACTED) out[k] = withoutHidden(x);
  return out;
}

/** The arguments as stored: secrets replaced by "[redacted]", long strings and lists cut. */
export function auditArguments(op: Operation, input: unknown): Record<string, unknown> {
  return scrubbedArguments(input, hiddenNames(op));
}

/** One empty set, so the per-name decisions above are kept for callers that name none. */
const NONE_HIDDEN: ReadonlySet<string> = new Set();

/** The same for a change that is no operation (the admin CLI): only the names that look secret are hidden. */
export function scrubbedArguments(input: unknown, hidden: ReadonlySet<string> = NONE_HIDDEN): Record<string, unknown> {
  return isObject(input) ? (scrub(input, hidden, 0) as Record<string, unknown>) : {};
}

const UUID_KEY = /(^|_)uuid$/;
const UUIDS_KEY = /(^|_)uuids$/;

function uuidsOf(o: unknown, into: Set<string>): void {
  if (!isObject(o)) return;
  for (const [k, v] of Object.entries(o)) {
    if (typeof v === 'string' && v && UUID_KEY.test(k)) into.add(v);
    else if (Array.isArray(v) && UUIDS_KEY.test(k)) for (const x of v) if (typeof x === 'string') into.add(x);
  }
}

/** The uuids a call named (path and body) or made (its output, a bulk deploy's deployments). */
export function auditTargets(input: unknown, output: unknown): string[] {
  const found = new Set<string>();
  uuidsOf(input, found);
  uuidsOf(output, found);
  if (isObject(output) && Array.isArray(output.deployments)) for (const d of output.deployments) uuidsOf(d, found);
  return [...found].slice(0, MAX_TARGETS);
}

/** The deployment or migration the call started: one its output names that its input did not. */
export function startedUuid(input: unknown, output: unknown): string | null {
  if (!isObject(output)) return null;
  const named = new Set<string>();
  uuidsOf(input, named);
  const first = Array.isArray(output.deployments) && isObject(output.deployments[0]) ? output.deployments[0].deployment_uuid : undefined;
  for (const v of [output.migration_uuid, output.deployment_uuid, first]) if (typeof v === 'string' && v && !named.has(v)) return v;
  return null;
}

/** 'ok' or why not: 'forbidden' for a permission refusal, else the error's kind. */
export function resultOf(op: Operation, error: unknown): { result: string; status: number } {
  return outcomeOf(error, op.http.status ?? 200);
}

/** The same for a change that is no operation (the admin CLI): okStatus is what success answers. */
export function outcomeOf(error: unknown, okStatus: number): { result: string; status: number } {
  if (error === undefined) return { result: 'ok', status: okStatus };
  if (error instanceof BerthError) {
    const forbidden = error.kind === 'missing_permissions' || error.kind === 'root_team_only';
    return { result: forbidden ? 'forbidden' : error.kind, status: errorCatalogue[error.kind].status };
  }
  return { result: 'internal', status: 500 };
}

export interface AuditedCall {
  op: Operation;
  caller: Caller;
  /** What the caller sent; undefined when refused before its input was read. */
  input?: unknown;
  output?: unknown;
  error?: unknown;
  startedAt: number;
  endedAt: number;
}

type EntryRow = Omit<AuditLogTable, 'id'>;

/**
 * An entry of a change that is no core call (the CLI's and the console's own changes, a scheduled
 * run's end): its identity and time, and every column it does not name empty.
 */
export function entryRow(e: Pick<EntryRow, 'team_id' | 'door' | 'operation' | 'result' | 'status' | 'duration_ms'> & Partial<EntryRow>): EntryRow {
  return { uuid: newUuid(), at: new Date().toISOString(), user_id: null, token_id: null, oauth_client_id: null, source_ip: null, targets: '[]', arguments: null, started_uuid: null, ...e };
}

/** The row for one call. */
export function auditRow(call: AuditedCall): Omit<AuditLogTable, 'id'> {
  const { op, caller, input, output, error } = call;
  const { result, status } = resultOf(op, error);
  return {
    uuid: newUuid(),
    at: new Date().toISOString(),
    team_id: caller.teamId,
    user_id: caller.userId,
    // A person in the console or the CLI holds no token (tokenId 0): none is named.
    token_id: caller.tokenId || null,
    oauth_client_id: caller.oauth?.clientId ?? null,
    source_ip: caller.sourceIp,
    door: caller.door,
    operation: op.name,
    targets: JSON.stringify(auditTargets(input, output)),
    arguments: input === undefined ? null : JSON.stringify(auditArguments(op, input)),
    result,
    status,
    duration_ms: Math.max(0, Math.round(call.endedAt - call.startedAt)),
    started_uuid: error === undefined ? startedUuid(input, output) : null,
  };
}
