import { sql, type SelectQueryBuilder } from 'kysely';
import { z } from 'zod';

/** `page` (from 1) and `per_page` (at most 100) on every list. */
export const pageInput = {
  page: z.coerce.number().int().min(1).default(1),
  per_page: z.coerce.number().int().min(1).max(100).default(100),
};

export interface Page {
  page: number;
  per_page: number;
}

/**
 * The page a list's input becomes when a REST call names neither `page` nor `per_page`
 * (CallOptions.everyItem): every item, as Coolify's lists answer. Set by the gate after the
 * input's validation (which caps per_page at 100 for every other call).
 */
export const EVERY_ITEM: Page = { page: 1, per_page: Number.MAX_SAFE_INTEGER };
const everyItem = (p: Page) => p.per_page === EVERY_ITEM.per_page;

/**
 * A list's output: the page of items and the total. Over REST the items are the body (a bare
 * array, as Coolify clients expect) and the rest goes into headers; MCP gets the whole object.
 */
export function listOf<T extends z.ZodType>(item: T) {
  return z.object({ items: z.array(item), total: z.number().int(), page: z.number().int(), per_page: z.number().int() });
}

export function pageOf<T>(all: T[], p: Page): { items: T[]; total: number; page: number; per_page: number } {
  if (everyItem(p)) return { items: all, total: all.length, page: 1, per_page: all.length };
  const start = (p.page - 1) * p.per_page;
  return { items: all.slice(start, start + p.per_page), total: all.length, page: p.page, per_page: p.per_page };
}

// Kysely's builder types are exact per query; this helper only limits, offsets and counts.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyQuery = SelectQueryBuilder<any, any, any>;

/** The window count's column: added to the page's rows and taken off before `view` sees them. */
const TOTAL = 'berth_page_total';

/**
 * One page of a query and the count of all its rows: `select` adds the columns and the order,
 * `view` turns the page's rows into the list's items. The count rides on the page's rows
 * (`count(*) over ()`, one statement: one round trip to PostgreSQL, one snapshot); only a page
 * past the end, which has no row to carry it, costs a second statement.
 */
export async function paged<Q extends AnyQuery, R, T>(
  base: Q,
  p: Page,
  select: (q: Q) => { limit(n: number): { offset(n: number): { execute(): Promise<R[]> } } },
  view: (rows: R[]) => T[] | Promise<T[]>,
): Promise<{ items: T[]; total: number; page: number; per_page: number }> {
  // Every item: no window count, limit or offset; the total is the rows' count.
  if (everyItem(p)) {
    const rows = await (select(base) as unknown as { execute(): Promise<R[]> }).execute();
    return { items: await view(rows), total: rows.length, page: 1, per_page: rows.length };
  }
  const counted = base.select(sql<number>`count(*) over ()`.as(TOTAL)) as Q;
  const rows = (await select(counted)
    .limit(p.per_page)
    .offset((p.page - 1) * p.per_page)
    .execute()) as (R & Record<typeof TOTAL, number>)[];
  let total: number;
  if (rows.length) total = Number(rows[0]![TOTAL]);
  else if (p.page === 1) total = 0;
  else total = Number(((await base.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()) as { n: number }).n);
  const plain = rows.map(({ [TOTAL]: _, ...row }) => row as R);
  return { items: await view(plain), total, page: p.page, per_page: p.per_page };
}
