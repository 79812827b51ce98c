import fs from 'node:fs';
import type { StandardSchemaWithJSON } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { UUID_PATTERN } from '../../core/validators.js';

type Target = Parameters<StandardSchemaWithJSON['~standard']['jsonSchema']['input']>[0];
type Json = Record<string, unknown>;

const SAFE = Number.MAX_SAFE_INTEGER;
const isPlainType = (s: unknown): s is { type: string } => typeof s === 'object' && s !== null && Object.keys(s).length === 1 && typeof (s as Json).type === 'string';

const isNull = (s: unknown) => isPlainType(s) && s.type === 'null';
const isScalar = (s: unknown): s is Json & { type: string } =>
  typeof s === 'object' && s !== null && ['string', 'integer', 'number', 'boolean'].includes((s as Json).type as string) && !('enum' in s) && !('const' in s);

/**
 * The same types in fewer bytes: every tools/list pays for each byte, in every conversation.
 * Drops what says nothing to a client: the dialect (2020-12 is MCP's default), zod's safe-integer
 * bounds, the sensitive-field marker (its description stays), `additionalProperties: false` (the
 * core refuses unknown input fields with a 422 naming them), an input uuid's pattern (likewise);
 * and writes `anyOf` of bare types as one `type` list.
 */
export function compactJsonSchema(node: unknown, kind: 'input' | 'output'): unknown {
  if (Array.isArray(node)) return node.map((n) => compactJsonSchema(n, kind));
  if (typeof node !== 'object' || node === null) return node;
  const out: Json = {};
  for (const [k, v] of Object.entries(node as Json)) {
    if (k === '$schema' || k === 'berth.sensitive') continue;
    // Every JSON key is a string.
    if (k === 'propertyNames' && isPlainType(v) && v.type === 'string') continue;
    if ((k === 'minimum' && v === -SAFE) || (k === 'maximum' && v === SAFE)) continue;
    // On inputs the core refuses unknown fields itself, with a 422 that names them.
    if (k === 'additionalProperties' && v === false) continue;
    // A uuid an agent sends comes from berth's own answers; the core checks its shape (422 naming it).
    if (kind === 'input' && k === 'pattern' && v === UUID_PATTERN.source) continue;
    // `{}` allows anything, which is what an absent additionalProperties says.
    if (k === 'additionalProperties' && typeof v === 'object' && v !== null && !Object.keys(v).length) continue;
    if (k === 'description' && typeof v === 'string' && v.endsWith('(sensitive: needs read:sensitive or root)')) {
      out[k] = v.replace('(sensitive: needs read:sensitive or root)', '(sensitive)');
      continue;
    }
    out[k] = compactJsonSchema(v, kind);
  }
  const any = out.anyOf;
  // A flag that REST also takes as "true"/"false" (a query string): an agent sends a boolean.
  if (kind === 'input' && Array.isArray(any) && any.length === 2 && isPlainType(any[0]) && any[0].type === 'boolean' && JSON.stringify(any[1]) === '{"type":"string","enum":["true","false"]}') {
    const { anyOf: _, ...rest } = out;
    return { type: 'boolean', ...rest };
  }
  if (Array.isArray(any) && any.length >= 2) {
    const { anyOf: _, ...rest } = out;
    if (any.every(isPlainType)) return { type: any.map((s) => s.type), ...rest };
    // X or null, where X is a scalar with bounds: one type list says the same (bounds apply to
    // strings and numbers only). Not with enum/const, which would then have to list null too.
    const [x, n] = any.length === 2 && isNull(any[1]) ? [any[0], any[1]] : isNull(any[0]) && any.length === 2 ? [any[1], any[0]] : [];
    if (n && isScalar(x)) return { ...x, type: [x.type, 'null'], ...rest };
  }
  return out;
}

/**
 * Keeps a subschema under $defs only where that is shorter than writing it out at each use, and
 * names it after the first field that uses it (`#/$defs/postgres_password` reads better than zod's
 * `__schema2`).
 */
export function sharedDefinitions(root: Json): Json {
  const defs = root.$defs as Record<string, Json> | undefined;
  if (!defs) return root;
  const uses = new Map<string, { count: number; field?: string }>();
  const scan = (node: unknown, field?: string): void => {
    if (Array.isArray(node)) return node.forEach((n) => scan(n, field));
    if (typeof node !== 'object' || node === null) return;
    const ref = (node as Json).$ref;
    if (typeof ref === 'string' && ref.startsWith('#/$defs/')) {
      const u = uses.get(ref.slice(8)) ?? { count: 0 };
      u.count++;
      u.field ??= field;
      uses.set(ref.slice(8), u);
    }
    for (const [k, v] of Object.entries(node as Json)) {
      if (k === 'properties' && typeof v === 'object' && v) for (const [name, p] of Object.entries(v as Json)) scan(p, name);
      else scan(v, field);
    }
  };
  scan(root);
  const kept = new Map<string, string>();
  for (const [id, def] of Object.entries(defs)) {
    const u = uses.get(id);
    if (!u) continue;
    const name = u.field && !kept.has(u.field) ? u.field : id;
    const inline = JSON.stringify(def).length * u.count;
    const shared = JSON.stringify(def).length + name.length + u.count * JSON.stringify({ $ref: `#/$defs/${name}` }).length;
    if (shared < inline) kept.set(id, name);
  }
  const rewrite = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(rewrite);
    if (typeof node !== 'object' || node === null) return node;
    const ref = (node as Json).$ref;
    if (typeof ref === 'string' && ref.startsWith('#/$defs/')) {
      const id = ref.slice(8);
      const name = kept.get(id);
      if (name) return { ...(node as Json), $ref: `#/$defs/${name}` };
      const { $ref: _, ...rest } = node as Json;
      return { ...(rewrite(defs[id]) as Json), ...rest };
    }
    const out: Json = {};
    for (const [k, v] of Object.entries(node as Json)) if (k !== '$defs') out[k] = rewrite(v);
    return out;
  };
  const out = rewrite(root) as Json;
  if (kept.size) out.$defs = Object.fromEntries([...kept].map(([id, name]) => [name, rewrite(defs[id])]));
  return out;
}

const BRIEF = 'berth.brief';

/**
 * Leaves out the fields marked `berth.brief` (Coolify's many runtime fields: health_check_*,
 * limits_*): the tool's description names them, the core still takes and checks them, and
 * every tools/list stays small. REST and OpenAPI keep them.
 */
export function dropBriefFields(root: Json): Json {
  const defs = (root.$defs ?? {}) as Record<string, Json>;
  const isBrief = (p: unknown): boolean => {
    if (typeof p !== 'object' || p === null) return false;
    const ref = (p as Json).$ref;
    return (p as Json)[BRIEF] === true || (typeof ref === 'string' && ref.startsWith('#/$defs/') && defs[ref.slice(8)]?.[BRIEF] === true);
  };
  const walk = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(walk);
    if (typeof node !== 'object' || node === null) return node;
    const out: Json = {};
    for (const [k, v] of Object.entries(node as Json)) out[k] = walk(v);
    const props = out.properties as Json | undefined;
    if (props && typeof props === 'object') {
      const dropped = Object.keys(props).filter((k) => isBrief(props[k]));
      if (dropped.length) {
        out.properties = Object.fromEntries(Object.entries(props).filter(([k]) => !dropped.includes(k)));
        if (Array.isArray(out.required)) out.required = (out.required as string[]).filter((k) => !dropped.includes(k));
      }
    }
    return out;
  };
  return walk(root) as Json;
}

/** A tool's JSON Schemas as a client is shown them (draft 2020-12), computed from its zod schema. */
export function computeJsonSchema(schema: z.ZodType, kind: 'input' | 'output', target = 'draft-2020-12'): Json {
  // A subschema used more than once (a password rule, a uuid) is written once under $defs.
  return compactJsonSchema(sharedDefinitions(dropBriefFields(z.toJSONSchema(schema, { target: target as 'draft-2020-12', io: kind, reused: 'ref', unrepresentable: 'any' }) as Json)), kind) as Json;
}

/** The JSON Schemas the build computed (scripts/bundle.mjs): by tool name, input and output. */
export type SchemaTable = Record<string, { input: Json; output: Json }>;

// Replaced by the build with the JSON of the default tool list's schemas, computed from the
// declarations by computeJsonSchema (scripts/bundle.mjs); absent outside the bundle.
declare const __BERTH_TOOL_SCHEMAS__: string | undefined;
/** The file beside the bundle holding every other tool's schemas (scripts/bundle.mjs). */
export const MORE_TOOL_SCHEMAS_FILE = 'tool-schemas-more.json';
let built: SchemaTable | undefined;
let more: SchemaTable | undefined;
/** The build's table, parsed on first use; empty where there is none (tests, the unbundled dist). */
function buildTable(): SchemaTable {
  built ??= typeof __BERTH_TOOL_SCHEMAS__ === 'string' ? (JSON.parse(__BERTH_TOOL_SCHEMAS__) as SchemaTable) : {};
  return built;
}
/**
 * The build's schemas of the tools outside the default list, read from beside the bundle the first
 * time one of them is listed (`--toolsets all`, an enabled toolset): computing them from zod costs
 * over a second of CPU for the whole set, reading them a few milliseconds. Kept out of the bundle
 * itself, which every start reads. A missing or unreadable file only costs that computation.
 */
function moreTable(): SchemaTable {
  if (more) return more;
  more = {};
  if (typeof __BERTH_TOOL_SCHEMAS__ === 'string') {
    try {
      more = JSON.parse(fs.readFileSync(new URL(`./${MORE_TOOL_SCHEMAS_FILE}`, import.meta.url), 'utf8')) as SchemaTable;
    } catch {
      // Computed instead (below).
    }
  }
  return more;
}
const prebuilt = (name: string): SchemaTable[string] | undefined => buildTable()[name] ?? moreTable()[name];

/**
 * A zod schema as the SDK sees it, made only when it is first needed: a `berth mcp` session lists
 * a few tools and calls fewer, and building every operation's agent view at start was most of a
 * cold start's zod work. Its JSON Schema comes from the build's tables (every tool, in the bundle),
 * otherwise it is computed (and compacted) once per process instead
 * of on every request (the SDK converts again for each new server; HTTP builds a server per request).
 *
 * `validate: 'core'` lets arguments through unchecked here, because the core validates them in
 * the contract's order (after the permission check) and with the contract's error shape, the
 * same as the REST door.
 */
export function toolSchema(make: () => z.ZodType, validate: 'zod' | 'core', name?: string): StandardSchemaWithJSON {
  let schema: z.ZodType | undefined;
  const zod = () => (schema ??= make());
  const memo = new Map<string, Json>();
  const cached = (kind: 'input' | 'output') => (o: Target) => {
    const key = `${kind}:${o.target}`;
    let v = memo.get(key);
    if (!v) {
      const pre = name !== undefined && o.target === 'draft-2020-12' ? prebuilt(name)?.[kind] : undefined;
      memo.set(key, (v = pre ?? computeJsonSchema(zod(), kind, o.target)));
    }
    return v;
  };
  return {
    '~standard': {
      version: 1,
      vendor: 'zod',
      validate: validate === 'zod' ? (value: unknown) => (zod() as unknown as StandardSchemaWithJSON)['~standard'].validate(value) : (value: unknown) => ({ value }),
      jsonSchema: { input: cached('input'), output: cached('output') },
    },
  } as StandardSchemaWithJSON;
}

/** The JSON Schema a client is shown for one side of a tool. */
export function jsonSchemaOf(schema: StandardSchemaWithJSON, kind: 'input' | 'output'): Json {
  return schema['~standard'].jsonSchema[kind]({ target: 'draft-2020-12' }) as Json;
}
