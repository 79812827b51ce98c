import type { Operation } from '../operation.js';
import { operationTable } from '../operations/table.js';
import { sensitiveNames } from '../redact.js';

/**
 * An entry's arguments as stored: secrets hidden first, then cut to fixed bounds, so one call can
 * add at most ARGUMENT_LIMITS.bytes to the log whatever it sent (docs/decisions/audit-and-approvals.md, "Audit log:
 * bounded arguments"). Every cut happens on what the redaction left, so no cut can show a secret.
 */

export const REDACTED = '[redacted]';

/** The bounds of one entry's stored arguments; a value past any of them is cut, and the entry says so. */
export const ARGUMENT_LIMITS = {
  /** The stored JSON, in UTF-8 bytes. */
  bytes: 16 * 1024,
  /** Keys kept per object, items per list. */
  keys: 200,
  items: 50,
  /** Objects and lists nested deeper are replaced by '…'. */
  depth: 8,
  /** Characters kept of a string, and of an argument's name. */
  string: 500,
  name: 100,
} as const;

/**
 * The key a cut entry's arguments carry (first): the size of the arguments as sent, in bytes of
 * JSON with each hidden value counted as "[redacted]" (so the size tells nothing of a secret).
 * An object with keys past the bound ends with the key '…' saying how many more there were.
 */
export const CUT_MARKER = '[cut]';
export const MORE_KEYS = '…';

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
 * Bounded in count and in the names' length, since names come from callers (a strict input
 * refuses unknown ones only after they are audited, and the CLI's are not checked at all).
 */
const NAMES_MAX = 2_000;
const secretNameBySet = new WeakMap<ReadonlySet<string>, Map<string, boolean>>();
function secretName(k: string, hidden: ReadonlySet<string>): boolean {
  let known = secretNameBySet.get(hidden);
  if (!known) secretNameBySet.set(hidden, (known = new Map()));
  let secret = known.get(k);
  if (secret === undefined) {
    secret = !/(^|_)(uuid|id)s?$/.test(k) && (hidden.has(k) || SECRET_NAME.test(k));
    if (k.length <= ARGUMENT_LIMITS.name) {
      if (known.size >= NAMES_MAX) known.clear();
      known.set(k, secret);
    }
  }
  return secret;
}

export const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Empty values and flags stay visible (nothing to hide); ids and uuids are names, never secrets. */
const secretAt = (k: string, x: unknown, hidden: ReadonlySet<string>): boolean => x !== null && x !== undefined && x !== '' && typeof x !== 'boolean' && secretName(k, hidden);

const cutName = (k: string) => (k.length > ARGUMENT_LIMITS.name ? `${k.slice(0, ARGUMENT_LIMITS.name)}…` : k);

/** One pass: secrets hidden (by their full name and whole value), then each value cut to the per-value bounds. */
function scrub(v: unknown, hidden: ReadonlySet<string>, depth: number, walk: { cut: boolean }): unknown {
  if (typeof v === 'string') {
    if (PRIVATE_KEY_VALUE.test(v)) return REDACTED;
    if (v.length <= ARGUMENT_LIMITS.string) return v;
    walk.cut = true;
    return `${v.slice(0, ARGUMENT_LIMITS.string)}…(${v.length} chars)`;
  }
  if (typeof v !== 'object' || v === null) return v;
  if (depth >= ARGUMENT_LIMITS.depth) {
    walk.cut = true;
    return '…';
  }
  if (Array.isArray(v)) {
    const out = v.slice(0, ARGUMENT_LIMITS.items).map((x) => scrub(x, hidden, depth + 1, walk));
    if (v.length > ARGUMENT_LIMITS.items) {
      walk.cut = true;
      out.push(`…(${v.length - ARGUMENT_LIMITS.items} more items)`);
    }
    return out;
  }
  // No prototype, so a key named __proto__ is a key like any other.
  const out: Record<string, unknown> = Object.create(null);
  let kept = 0;
  let total = 0;
  for (const k in v) {
    if (!Object.hasOwn(v, k)) continue;
    total++;
    if (kept >= ARGUMENT_LIMITS.keys) continue;
    const x = (v as Record<string, unknown>)[k];
    const name = cutName(k);
    // Two long names that agree on their kept start: the first stays (the count below says one more).
    if (Object.hasOwn(out, name)) continue;
    out[name] = secretAt(k, x, hidden) ? REDACTED : scrub(x, hidden, depth + 1, walk);
    kept++;
  }
  if (total > kept) {
    walk.cut = true;
    out[MORE_KEYS] = `${total - kept} more keys`;
  }
  return out;
}

const bytesOf = (json: string) => Buffer.byteLength(json, 'utf8');

/**
 * The size of v as JSON in UTF-8 bytes, each hidden value counted as REDACTED: walked with a
 * stack of its own, since what is measured is what was cut, nested as deep as the caller liked.
 */
function sizeAsSent(v: unknown, hidden: ReadonlySet<string>): number {
  const redacted = bytesOf(JSON.stringify(REDACTED));
  let size = 0;
  const stack: unknown[] = [v];
  while (stack.length) {
    const x = stack.pop();
    if (typeof x === 'string') size += PRIVATE_KEY_VALUE.test(x) ? redacted : bytesOf(JSON.stringify(x));
    else if (Array.isArray(x)) {
      size += 2 + Math.max(0, x.length - 1);
      for (const y of x) stack.push(y);
    } else if (isObject(x)) {
      const keys = Object.keys(x);
      size += 2 + Math.max(0, keys.length - 1);
      for (const k of keys) {
        size += bytesOf(JSON.stringify(k)) + 1;
        if (secretAt(k, x[k], hidden)) size += redacted;
        else stack.push(x[k]);
      }
    } else size += x === undefined ? 4 : String(x).length;
  }
  return size;
}

/** Room kept in a list or object for its "…more" marker when fitting. */
const MARKER_ROOM = 40;

/**
 * v (already scrubbed: bounded depth, keys, items and strings) cut to at most room bytes of JSON,
 * keeping the first keys and items whole where they fit; undefined when not even a cut fits.
 */
function fitTo(v: unknown, room: number): { value: unknown; bytes: number } | undefined {
  if (typeof v === 'string') {
    const bytes = bytesOf(JSON.stringify(v));
    if (bytes <= room) return { value: v, bytes };
    let s = v.slice(0, Math.max(0, room - MARKER_ROOM));
    while (s.length) {
      const cut = `${s}…(${v.length} chars)`;
      const b = bytesOf(JSON.stringify(cut));
      if (b <= room) return { value: cut, bytes: b };
      s = s.slice(0, Math.floor(s.length / 2));
    }
    return undefined;
  }
  if (typeof v !== 'object' || v === null) {
    const bytes = bytesOf(JSON.stringify(v) ?? 'null');
    return bytes <= room ? { value: v, bytes } : undefined;
  }
  const entries: [string | null, unknown][] = Array.isArray(v) ? v.map((x) => [null, x]) : Object.entries(v);
  const kept: [string | null, unknown][] = [];
  let used = 2;
  for (const [k, x] of entries) {
    const head = (kept.length ? 1 : 0) + (k === null ? 0 : bytesOf(JSON.stringify(k)) + 1);
    const part = fitTo(x, room - used - head - MARKER_ROOM);
    if (!part) break;
    kept.push([k, part.value]);
    used += head + part.bytes;
  }
  const dropped = entries.length - kept.length;
  if (Array.isArray(v)) {
    const out = kept.map(([, x]) => x);
    if (dropped) out.push(`…(${dropped} more items)`);
    const bytes = bytesOf(JSON.stringify(out));
    return bytes <= room ? { value: out, bytes } : undefined;
  }
  const out: Record<string, unknown> = Object.fromEntries(kept);
  if (dropped) out[MORE_KEYS] = `${dropped} more keys`;
  const bytes = bytesOf(JSON.stringify(out));
  return bytes <= room ? { value: out, bytes } : undefined;
}

function bounded(input: unknown, hidden: ReadonlySet<string>): Record<string, unknown> {
  if (!isObject(input)) return {};
  const walk = { cut: false };
  const scrubbed = scrub(input, hidden, 0, walk) as Record<string, unknown>;
  if (!walk.cut && bytesOf(JSON.stringify(scrubbed)) <= ARGUMENT_LIMITS.bytes) return scrubbed;
  const marker = { original_bytes: sizeAsSent(input, hidden), limit_bytes: ARGUMENT_LIMITS.bytes };
  const markerBytes = bytesOf(JSON.stringify({ [CUT_MARKER]: marker })) - 2 + 1;
  const rest = fitTo(scrubbed, ARGUMENT_LIMITS.bytes - markerBytes);
  return { [CUT_MARKER]: marker, ...(rest?.value as Record<string, unknown> | undefined) };
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

/** The arguments as stored: secrets replaced by "[redacted]", then cut to ARGUMENT_LIMITS. */
export function auditArguments(op: Operation, input: unknown): Record<string, unknown> {
  return bounded(input, hiddenNames(op));
}

/** One empty set, so the per-name decisions above are kept for callers that name none. */
const NONE_HIDDEN: ReadonlySet<string> = new Set();

/** The same for a change that is no operation (the admin CLI, the console): only the names that look secret are hidden. */
export function scrubbedArguments(input: unknown, hidden: ReadonlySet<string> = NONE_HIDDEN): Record<string, unknown> {
  return bounded(input, hidden);
}
