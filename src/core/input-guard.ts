/**
 * What no input may carry, whatever its schema says: the keys that reach an object's prototype
 * when code assigns by key (`__proto__`, `constructor`, `prototype`), and nesting deeper than
 * any berth input has (a parser or validator walking it recursively could run out of stack).
 * Checked at every door before a schema sees the value: REST bodies and query strings, MCP
 * arguments, compose files once parsed. Iterative, so the check itself cannot overflow.
 */
export const PROTOTYPE_KEYS: ReadonlySet<string> = new Set(['__proto__', 'constructor', 'prototype']);

/** Deeper than any berth input (a compose file's service settings reach about 6). */
export const MAX_INPUT_DEPTH = 32;

export interface InputProblem {
  kind: 'prototype_key' | 'too_deep';
  /** The field, as the contract's 422 names fields (dot-separated path). */
  field: string;
  message: string;
}

export function inputProblem(value: unknown, root = ''): InputProblem | undefined {
  const stack: Array<{ v: unknown; path: string; depth: number }> = [{ v: value, path: root, depth: 0 }];
  while (stack.length) {
    const { v, path, depth } = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    if (depth >= MAX_INPUT_DEPTH) return { kind: 'too_deep', field: path || 'body', message: `Nested more than ${MAX_INPUT_DEPTH} levels deep.` };
    const entries: Array<[string, unknown]> = Array.isArray(v) ? v.map((x, i) => [String(i), x]) : Object.entries(v);
    // Object.entries skips an own "__proto__" key only when it is not enumerable; JSON.parse makes it enumerable.
    for (const [k, x] of entries) {
      const at = path ? `${path}.${k}` : k;
      if (!Array.isArray(v) && PROTOTYPE_KEYS.has(k)) return { kind: 'prototype_key', field: at, message: 'This key is not allowed.' };
      stack.push({ v: x, path: at, depth: depth + 1 });
    }
  }
  return undefined;
}
