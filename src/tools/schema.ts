import type { StandardSchemaWithJSON } from '@modelcontextprotocol/server';
import { z } from 'zod';

type Target = Parameters<StandardSchemaWithJSON['~standard']['jsonSchema']['input']>[0];

/**
 * A zod schema as the SDK sees it, with its JSON Schema computed once per process instead of on
 * every request (the SDK converts again for each new server; a server is built per request).
 *
 * `validate: 'core'` lets arguments through unchecked here, because the core validates them in
 * the contract's order (after the permission check) and with the contract's error shape, the
 * same as the REST door.
 */
export function toolSchema(schema: z.ZodType, validate: 'zod' | 'core'): StandardSchemaWithJSON {
  const std = (schema as unknown as StandardSchemaWithJSON)['~standard'];
  const memo = new Map<string, Record<string, unknown>>();
  const cached = (kind: 'input' | 'output') => (o: Target) => {
    const key = `${kind}:${o.target}`;
    let v = memo.get(key);
    if (!v) memo.set(key, (v = std.jsonSchema[kind](o)));
    return v;
  };
  return {
    '~standard': {
      version: 1,
      vendor: std.vendor,
      validate: validate === 'zod' ? std.validate : (value: unknown) => ({ value }),
      jsonSchema: { input: cached('input'), output: cached('output') },
    },
  } as StandardSchemaWithJSON;
}
