import { createHash } from 'node:crypto';
import { z } from 'zod';
import type { Caller } from '../../core/caller.js';
import type { Core } from '../../core/gate.js';
import { operationTable } from '../../core/operations/table.js';
import type { Operation } from '../../core/operation.js';
import { readDocument } from '../resources/read.js';
import { uriOf } from '../resources/kinds.js';
import { VIEWS, type ViewName } from './views.js';

/**
 * The app-only tool a view follows its object with (`_meta.ui.visibility: ["app"]`: the host
 * lets the view call it and keeps it from the model). Called with the version the view shows,
 * it answers once the object differs (a change on berth's change feed, the one resource
 * subscriptions hear, or a periodic read: REREAD_MS) or after FOLLOW_WAIT_MS unchanged: a long
 * poll through the host bridge, so the view updates within moments of a change.
 */
export const FOLLOW_TOOL = 'follow_view';
export const FOLLOW_WAIT_MS = 15_000;
/**
 * While waiting, the object is also read again this often: a change made by another process on
 * the same SQLite file (a person deciding in `berth serve`'s console while `berth mcp` serves the
 * chat) reaches no in-process feed.
 */
export const REREAD_MS = 1_500;
/** Most rows the board shows (each is one status read). */
export const BOARD_LIMIT = 100;

export const followInput = z.strictObject({
  view: z.enum(VIEWS.map((v) => v.name) as [ViewName, ...ViewName[]]),
  uuid: z.string().min(1).max(64).optional().describe('The deployment, migration or approval (not for the board).'),
  since: z
    .string()
    .regex(/^[0-9a-f]{16}$/)
    .optional()
    .describe('The version the view shows: the answer waits until it differs.'),
});

export const followOutput = z.object({ view: z.string(), version: z.string(), data: z.record(z.string(), z.unknown()) });

export type FollowInput = z.infer<typeof followInput>;

const opsByName = new Map<string, Operation>();
function op(name: string): Operation {
  if (!opsByName.size) for (const o of operationTable()) opsByName.set(o.name, o);
  return opsByName.get(name)!;
}

const KIND_OF = (kind: string) => (kind === 'application' ? 'applications' : kind === 'service' ? 'services' : 'databases');

/** The team's applications, databases and services, each as its status resource reads. */
async function board(core: Core, caller: Caller): Promise<Record<string, unknown>> {
  const rows = await core.deps.db
    .selectFrom('resources')
    .select(['uuid', 'kind'])
    .where('team_id', '=', caller.teamId)
    .where('deleting', 'is', null)
    .orderBy('id')
    .limit(BOARD_LIMIT + 1)
    .execute();
  const items: Record<string, unknown>[] = [];
  for (const r of rows.slice(0, BOARD_LIMIT)) {
    // One gone between the list and its read is simply not on the board.
    const doc = await readDocument(core, caller, uriOf(KIND_OF(r.kind), r.uuid)).catch(() => undefined);
    if (doc) items.push(doc);
  }
  return { items, truncated: rows.length > BOARD_LIMIT };
}

/** What one view shows, read under the caller's permissions (a foreign uuid is the core's 404). */
export async function viewData(core: Core, caller: Caller, input: FollowInput): Promise<Record<string, unknown>> {
  if (input.view === 'board') return board(core, caller);
  const name = { deployment: 'get_deployment', migration: 'get_migration', approval: 'get_approval' }[input.view];
  return (await core.run(op(name), caller, { uuid: input.uuid ?? '' })) as Record<string, unknown>;
}

export const versionOf = (data: unknown): string => createHash('sha256').update(JSON.stringify(data)).digest('hex').slice(0, 16);

/**
 * The view's data once its version differs from `since` (at once without one), or as it is after
 * the wait. A change of the caller's team wakes it (the board is made of many uuids, and a
 * deployment's log line names only the deployment): it reads again and answers if it differs.
 */
export async function follow(core: Core, caller: () => Promise<Caller>, input: FollowInput, signal?: AbortSignal, waitMs = FOLLOW_WAIT_MS): Promise<z.infer<typeof followOutput>> {
  const read = async () => {
    const data = await viewData(core, await caller(), input);
    return { view: input.view, version: versionOf(data), data };
  };
  let now = await read();
  const feed = core.deps.changes;
  if (input.since === undefined || now.version !== input.since) return now;
  const teamId = (await caller()).teamId;
  const deadline = Date.now() + waitMs;
  let wake: (() => void) | undefined;
  let woken = false;
  const stop = feed?.subscribe((c) => {
    if (c.teamId !== null && c.teamId !== teamId) return;
    if (c.teamId === null && (input.uuid === undefined || !c.uuids.includes(input.uuid))) return;
    woken = true;
    wake?.();
  });
  const onAbort = () => wake?.();
  signal?.addEventListener('abort', onAbort);
  try {
    while (now.version === input.since && Date.now() < deadline && !signal?.aborted) {
      if (!woken) {
        await new Promise<void>((resolve) => {
          wake = resolve;
          setTimeout(resolve, Math.min(REREAD_MS, deadline - Date.now())).unref();
        });
      }
      woken = false;
      if (signal?.aborted) break;
      now = await read();
    }
  } finally {
    stop?.();
    signal?.removeEventListener('abort', onAbort);
  }
  return now;
}
