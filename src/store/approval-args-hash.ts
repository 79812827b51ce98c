import { createHash } from 'node:crypto';

/**
 * What an approval binds of a held call's arguments (issue 39): the SHA-256, in hex, of the
 * canonical JSON of its stored input (object keys in code-unit order at every depth, no spaces),
 * so the same arguments hash the same whatever order they were sent in. Computed when the call is
 * held, shown to the approver, posted back with the approval and computed again before it runs.
 * Here, below core, because migration 033 fills it in for the calls already held.
 */
export function approvalArgsHash(storedInput: string): string {
  return createHash('sha256')
    .update(canonicalJson(JSON.parse(storedInput)))
    .digest('hex');
}

function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`;
  if (v !== null && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    return `{${Object.keys(o)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson(o[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v);
}

/** How the console shows a hash: its first 12 hex digits, enough for a person to compare. */
export const shortArgsHash = (hash: string) => hash.slice(0, 12);
