import type { Db } from './db.js';

/** One value per store handle, built on first use (prepared queries, mostly). */
export function perStore<T>(build: (db: Db) => T): (db: Db) => T {
  const cache = new WeakMap<Db, T>();
  return (db) => {
    let v = cache.get(db);
    if (v === undefined) cache.set(db, (v = build(db)));
    return v;
  };
}
