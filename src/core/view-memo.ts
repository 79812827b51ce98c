/**
 * Views of unchanged rows, built and stringified once (issue 41: Coolify clients list every
 * item, again and again). A list of 2,000 applications spent most of its time parsing each row's
 * config, building its view and stringifying it, for rows that had not changed since the last
 * list. A memo keeps each row's view by its key and reuses it while every column the query read
 * and every placement uuid are equal to what built it: the view is a pure function of those, so
 * a reused view is the view that would be built, and nothing has to be told about changes.
 * A reused view is frozen (it is shared by every answer that holds it); its JSON text is kept
 * beside it once a door has written it twice (jsonParts), so the HTTP door copies its bytes as they are.
 */

/** JSON texts (UTF-8) of the views a memo made, written once per view: copying bytes is ~4× cheaper than encoding text again. */
const texts = new WeakMap<object, Buffer>();
/** Objects whose JSON text may be kept: views a memo made (frozen), and their redacted copies. */
const shared = new WeakSet<object>();

/** Marks a frozen object as shared: its JSON text is kept once written (redact's copies of memo views). */
export function markShared<T extends object>(item: T): T {
  shared.add(Object.freeze(item));
  return item;
}

export const isShared = (item: unknown): item is object => typeof item === 'object' && item !== null && shared.has(item);

/** Shared views written once already: the second writing keeps their bytes (below). */
const written = new WeakSet<object>();

/**
 * The items' JSON bytes, or undefined where the caller should stringify them together. Bytes are
 * kept from a view's second writing on: stringifying 100 views one by one costs about a third
 * more than stringifying them as one array, so a view written once (the first list after a
 * change) costs what it did before the memo, and only a view listed again pays to be kept.
 */
export function jsonParts(items: readonly unknown[]): Buffer[] | undefined {
  let fresh = false;
  for (const item of items) {
    if (!isShared(item)) return undefined;
    if (!texts.has(item) && !written.has(item)) fresh = true;
  }
  if (fresh) {
    for (const item of items as object[]) written.add(item);
    return undefined;
  }
  return (items as object[]).map((item) => {
    let bytes = texts.get(item);
    if (bytes === undefined) texts.set(item, (bytes = Buffer.from(JSON.stringify(item))));
    return bytes;
  });
}

interface Entry<R, W, T> {
  row: R;
  where: W;
  view: T;
}

/** Same values (===) in every field of `a` (for-in: no array of keys per row; rows of one query have the same keys). */
function same(a: object, b: object): boolean {
  const x = a as Record<string, unknown>;
  const y = b as Record<string, unknown>;
  for (const k in x) if (x[k] !== y[k]) return false;
  return true;
}

/**
 * A memo of `build` over rows keyed by `keyOf` (a uuid), at most `max` entries (the oldest built
 * leaves first; a deleted row's entry leaves that way too). `build` must read nothing but its
 * row and `where`, and the row must hold only what the view reads (a column the view ignores
 * would only cost rebuilds). Arrays in a view are frozen with it.
 */
export function viewMemo<R extends object, W extends object, T extends object>(build: (r: R, where: W) => T, keyOf: (r: R) => string, max = 20_000) {
  const entries = new Map<string, Entry<R, W, T>>();
  return (r: R, where: W): T => {
    const key = keyOf(r);
    const hit = entries.get(key);
    if (hit && same(r, hit.row) && same(where, hit.where)) return hit.view;
    const view = build(r, where);
    for (const k in view) if (Array.isArray(view[k])) Object.freeze(view[k]);
    markShared(view);
    if (hit) entries.delete(key);
    else if (entries.size >= max) entries.delete(entries.keys().next().value!);
    entries.set(key, { row: r, where, view });
    return view;
  };
}
