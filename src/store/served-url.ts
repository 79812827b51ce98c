import { atomically } from './atomic.js';
import { nowIso, type Db } from './db.js';

/**
 * Where a running `berth serve` is reached, recorded in the store for the processes that serve
 * no HTTP themselves (`berth mcp` on stdio), so the links they make for people (approve_url)
 * point at the console that runs rather than at the default port (docs/decisions/console-and-oauth.md, "Approval
 * links from a stdio agent").
 *
 * One settings row per serve process (`served_url:<its instance id>`), written when it listens and
 * removed when it stops cleanly; a start on the same address replaces what a crashed one left
 * there. With several instances the newest recorded one is used: any running one serves the
 * console. Written at start and stop only (settings rows are auth rows: a write invalidates the
 * instances' reused auth rows once, not on a timer).
 */
const PREFIX = 'served_url:';

interface Recorded {
  url: string;
  since: string;
}

async function recorded(db: Db): Promise<Array<Recorded & { key: string }>> {
  const rows = await db.selectFrom('settings').select(['key', 'value']).where('key', 'like', `${PREFIX}%`).execute();
  const out: Array<Recorded & { key: string }> = [];
  for (const r of rows) {
    try {
      const v = JSON.parse(r.value) as Partial<Recorded>;
      if (typeof v.url === 'string' && typeof v.since === 'string') out.push({ key: r.key, url: v.url, since: v.since });
    } catch {
      // Not one of ours: ignored.
    }
  }
  return out;
}

/** Records this serve's address (called once it listens). */
export async function recordServedUrl(db: Db, instanceId: string, url: string): Promise<void> {
  const key = PREFIX + instanceId;
  const value = JSON.stringify({ url, since: nowIso() } satisfies Recorded);
  await atomically(db, async (trx) => {
    // What another process left at this same address (it crashed, or this is its restart) is this one's now.
    const same = (await recorded(trx)).filter((r) => r.url === url && r.key !== key).map((r) => r.key);
    if (same.length) await trx.deleteFrom('settings').where('key', 'in', same).execute();
    await trx
      .insertInto('settings')
      .values({ key, value })
      .onConflict((oc) => oc.column('key').doUpdateSet({ value }))
      .execute();
  });
}

/** Removes this serve's record (a clean stop). */
export async function forgetServedUrl(db: Db, instanceId: string): Promise<void> {
  await db
    .deleteFrom('settings')
    .where('key', '=', PREFIX + instanceId)
    .execute();
}

/** The newest address a running serve recorded, or null when none is recorded. */
export async function servedUrl(db: Db): Promise<string | null> {
  const all = await recorded(db);
  all.sort((a, b) => (a.since < b.since ? 1 : a.since > b.since ? -1 : 0));
  return all[0]?.url ?? null;
}
