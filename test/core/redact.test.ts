import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { hasSensitive, redact, sensitive } from '../../src/core/redact.js';

const server = z.object({
  uuid: z.string(),
  name: z.string(),
  private_key: sensitive(z.string()).optional(),
  env: z.array(z.object({ key: z.string(), value: sensitive(z.string()).nullable() })),
  nested: z.object({ password: sensitive(z.string()), host: z.string() }).nullable(),
});

describe('redaction by schema', () => {
  it('removes every field declared sensitive, at any depth, and keeps the rest', () => {
    const value = {
      uuid: 'u1',
      name: 'n',
      private_key: '-----BEGIN KEY-----',
      env: [
        { key: 'A', value: 'secret-a' },
        { key: 'B', value: null },
      ],
      nested: { password: 'hunter2', host: 'h' },
    };
    expect(redact(z.array(server), [value])).toEqual([{ uuid: 'u1', name: 'n', env: [{ key: 'A' }, { key: 'B' }], nested: { host: 'h' } }]);
    expect(JSON.stringify(redact(server, value))).not.toMatch(/secret-a|hunter2|BEGIN KEY/);
  });

  it('knows which schemas carry sensitive fields', () => {
    expect(hasSensitive(server)).toBe(true);
    expect(hasSensitive(z.object({ a: z.string(), b: z.array(z.object({ c: z.number() })) }))).toBe(false);
  });

  it('passes null and missing values through', () => {
    expect(redact(server, null)).toBeNull();
    expect(redact(server, { uuid: 'x', name: 'y', env: [], nested: null })).toEqual({ uuid: 'x', name: 'y', env: [], nested: null });
  });
});
