import { z } from 'zod';
import { isShared, markShared } from './view-memo.js';

/**
 * Sensitive fields are declared on the output schema with `sensitive(...)`; redact() removes
 * them from a value by walking that schema. One place, so no operation can forget.
 */
const SENSITIVE = 'berth.sensitive';

/** Marks a field sensitive; it is optional in the schema because redaction removes it. */
export function sensitive<T extends z.ZodType>(schema: T): z.ZodOptional<T> {
  return (schema.meta({ [SENSITIVE]: true, description: `${schema.description ?? ''} (sensitive: needs read:sensitive or root)`.trim() }) as T).optional();
}

type AnyDef = { type: string; innerType?: z.ZodType; element?: z.ZodType; shape?: Record<string, z.ZodType>; options?: z.ZodType[] };
const defOf = (s: z.ZodType): AnyDef => (s as unknown as { _zod: { def: AnyDef } })._zod.def;

const WRAPPERS = new Set(['optional', 'nullable', 'default', 'readonly', 'prefault', 'nonoptional', 'catch']);

/** Per schema: whether it is sensitive, whether anything under it is (a list's 2,000 items ask each field's, every call). */
const sensitiveOf = new WeakMap<z.ZodType, boolean>();
const underOf = new WeakMap<z.ZodType, boolean>();
/** A shared view's redacted copy per object schema, so the copy is made, and its JSON written, once (src/core/view-memo.ts). */
const copiesOf = new WeakMap<z.ZodType, WeakMap<object, object>>();

export function isSensitive(schema: z.ZodType): boolean {
  let known = sensitiveOf.get(schema);
  if (known === undefined) sensitiveOf.set(schema, (known = sensitiveHere(schema)));
  return known;
}

function sensitiveHere(schema: z.ZodType): boolean {
  let s: z.ZodType | undefined = schema;
  while (s) {
    if (z.globalRegistry.get(s)?.[SENSITIVE]) return true;
    const d = defOf(s);
    s = WRAPPERS.has(d.type) ? d.innerType : undefined;
  }
  return false;
}

function unwrap(schema: z.ZodType): z.ZodType {
  let s = schema;
  while (WRAPPERS.has(defOf(s).type)) s = defOf(s).innerType!;
  return s;
}

/** Whether any field reachable from this schema is sensitive (skip the walk when none is). */
export function hasSensitive(schema: z.ZodType): boolean {
  let known = underOf.get(schema);
  if (known === undefined) underOf.set(schema, (known = sensitiveUnder(schema)));
  return known;
}

function sensitiveUnder(schema: z.ZodType): boolean {
  if (isSensitive(schema)) return true;
  const d = defOf(unwrap(schema));
  if (d.type === 'object') return Object.values(d.shape!).some(hasSensitive);
  if (d.type === 'array') return hasSensitive(d.element!);
  if (d.type === 'union') return d.options!.some(hasSensitive);
  return false;
}

export function redact(schema: z.ZodType, value: unknown): unknown {
  if (value === null || value === undefined) return value;
  const d = defOf(unwrap(schema));
  if (d.type === 'array' && Array.isArray(value)) return value.map((v) => redact(d.element!, v));
  if (d.type === 'union') return d.options!.reduce<unknown>((v, o) => redact(o, v), value);
  if (d.type === 'object' && typeof value === 'object') {
    if (!isShared(value)) return redactObject(d.shape!, value);
    let copies = copiesOf.get(schema);
    if (!copies) copiesOf.set(schema, (copies = new WeakMap()));
    let copy = copies.get(value);
    if (!copy) copies.set(value, (copy = markShared(redactObject(d.shape!, value))));
    return copy;
  }
  return value;
}

/** A copy without the sensitive fields; a field with nothing sensitive under it is taken as it is. */
function redactObject(shape: Record<string, z.ZodType>, value: object): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    const field = shape[k];
    if (!field) out[k] = v;
    else if (!isSensitive(field)) out[k] = hasSensitive(field) ? redact(field, v) : v;
  }
  return out;
}

/** Names of the sensitive fields anywhere in a schema (the audit log hides inputs of the same names). */
export function sensitiveNames(schema: z.ZodType, into: Set<string> = new Set()): Set<string> {
  const d = defOf(unwrap(schema));
  if (d.type === 'object') {
    for (const [k, field] of Object.entries(d.shape!)) {
      if (isSensitive(field)) into.add(k);
      sensitiveNames(field, into);
    }
  } else if (d.type === 'array') sensitiveNames(d.element!, into);
  else if (d.type === 'union') for (const o of d.options!) sensitiveNames(o, into);
  return into;
}
