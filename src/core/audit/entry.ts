import { BerthError, errorCatalogue } from '../../errors.js';
import { newUuid } from '../../ids.js';
import type { AuditLogTable } from '../../store/schema-audit.js';
import type { Caller } from '../caller.js';
import type { Operation } from '../operation.js';
import { auditArguments, isObject } from './arguments.js';

/**
 * What one audit row says about a call: built from the operation's declaration, the caller, the
 * input it sent and the output or error, with no operation's help (so none can forget).
 */

export { auditArguments, REDACTED, scrubbedArguments, withoutHidden } from './arguments.js';

/** Targets kept per entry, and the characters kept of each (a uuid is 24; a longer one was never one). */
const MAX_TARGETS = 20;
const MAX_TARGET_CHARS = 64;
const targetOf = (v: string) => (v.length > MAX_TARGET_CHARS ? `${v.slice(0, MAX_TARGET_CHARS)}…` : v);

const UUID_KEY = /(^|_)uuid$/;
const UUIDS_KEY = /(^|_)uuids$/;

/** Stops at limit: a caller's list of uuids may be as long as it likes. */
function uuidsOf(o: unknown, into: Set<string>, limit = MAX_TARGETS): void {
  if (!isObject(o)) return;
  for (const [k, v] of Object.entries(o)) {
    if (into.size >= limit) return;
    if (typeof v === 'string' && v && UUID_KEY.test(k)) into.add(targetOf(v));
    else if (Array.isArray(v) && UUIDS_KEY.test(k)) for (const x of v.slice(0, limit)) if (typeof x === 'string') into.add(targetOf(x));
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
  uuidsOf(input, named, Number.POSITIVE_INFINITY);
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
