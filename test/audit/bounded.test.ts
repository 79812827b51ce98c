import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditedChange } from '../../src/core/audit/cli-door.js';
import { ARGUMENT_LIMITS, CUT_MARKER, MORE_KEYS } from '../../src/core/audit/arguments.js';
import { browse, signInByLink } from '../helpers/console.js';
import { httpClient, type AnyClient } from '../helpers/mcp.js';
import { call, startTestServer, type TestServer } from '../helpers/server.js';

/**
 * Bounded audit (issue 39, item 4): whatever a call sends, its entry stores at most 16 KB of
 * arguments, cut with a marker that gives the size sent; secrets are hidden before any cut, so no
 * cut shows one. Through REST, MCP, the console and the CLI's change path, on the store
 * BERTH_TEST_STORE names; the API's read of the log shows the marker.
 */

let s: TestServer;
let writer: { id: number; token: string };
const SECRET = 'planted-bounded-secret-7c1e';
const PEM = `-----BEGIN OPENSSH PRIVATE KEY-----\n${'QUFB'.repeat(300)}${SECRET}\n-----END OPENSSH PRIVATE KEY-----`;

/** 15,000 keys, with secrets among the first and the last ones. */
function manyKeys(): Record<string, unknown> {
  const o: Record<string, unknown> = { password: SECRET, note: PEM };
  for (let i = 0; i < 15_000; i++) o[`k${i}`] = `value number ${i}`;
  o.api_token = SECRET;
  return o;
}

/** Nested depth levels, each with 1 KB of its own (the doors refuse more than 32 levels; the CLI's path does not). */
function deep(depth: number): Record<string, unknown> {
  let o: Record<string, unknown> = { password: SECRET, leaf: 'bottom' };
  for (let i = 0; i < depth; i++) o = { a: o, secret: SECRET, pad: 'p'.repeat(499), more: 'q'.repeat(499) };
  return o;
}

/** Many keys of long strings: each key and string under its own bound, the whole far over 16 KB. */
function wide(): Record<string, unknown> {
  const o: Record<string, unknown> = {};
  for (let i = 0; i < 150; i++) o[`field_${i}`] = 'ü'.repeat(450);
  o.private_key = SECRET;
  return o;
}

const CASES: [string, () => Record<string, unknown>][] = [
  ['15,000 keys', manyKeys],
  ['a 1 MB string', () => ({ name: 'x'.repeat(1_000_000), comment: 'public words', token: SECRET })],
  ['nesting 30 deep', () => deep(30)],
  ['150 long strings', wide],
];

async function newest(n = 1) {
  return s.db.selectFrom('audit_log').selectAll().orderBy('id', 'desc').limit(n).execute();
}

/** The stored row's arguments: within the bound, cut with the marker, no secret. */
function checkStored(args: string | null, sent: unknown): Record<string, any> {
  expect(args).not.toBeNull();
  expect(Buffer.byteLength(args!, 'utf8')).toBeLessThanOrEqual(ARGUMENT_LIMITS.bytes);
  expect(args).not.toContain(SECRET);
  const parsed = JSON.parse(args!);
  expect(Object.keys(parsed)[0]).toBe(CUT_MARKER);
  // The size as sent, each hidden value counted as "[redacted]" (so it says nothing of a secret's length).
  const asSent = JSON.stringify(sent, (_k, v) => (v === SECRET || v === PEM ? '[redacted]' : v));
  expect(parsed[CUT_MARKER].original_bytes).toBe(Buffer.byteLength(asSent, 'utf8'));
  expect(parsed[CUT_MARKER].original_bytes).toBeGreaterThan(ARGUMENT_LIMITS.bytes);
  expect(parsed[CUT_MARKER].limit_bytes).toBe(ARGUMENT_LIMITS.bytes);
  return parsed;
}

beforeAll(async () => {
  s = await startTestServer();
  writer = await s.token({ permissions: ['read', 'write', 'deploy'], email: 'bulky@example.test' });
});
afterAll(() => s.stop());

describe('bounded audit arguments', () => {
  it.each(CASES)('REST: a call with %s stores at most 16 KB, cut with the size sent, and the API shows the marker', async (_name, make) => {
    const body = make();
    const r = await call(s.url, 'POST', '/api/v1/projects', { token: writer.token, body });
    expect(r.status).toBe(422);
    const [row] = await newest();
    expect(row).toMatchObject({ door: 'rest', operation: 'create_project', result: 'validation' });
    const stored = checkStored(row!.arguments, body);
    if (body.k0) {
      // The first keys kept as sent, the rest counted; the secrets hidden, never cut.
      expect(stored.k0).toBe('value number 0');
      expect(stored.password).toBe('[redacted]');
      expect(stored.note).toBe('[redacted]');
      expect(Object.keys(stored).length).toBeLessThanOrEqual(ARGUMENT_LIMITS.keys + 2);
      expect(stored[MORE_KEYS]).toMatch(/^\d+ more keys$/);
    }
    if (typeof body.name === 'string') expect(stored.name).toMatch(/^x{500}…\(1000000 chars\)$/);
    if (body.pad) {
      let d = 0;
      for (let o = stored; typeof o === 'object'; o = o.a) d++;
      expect(d).toBeLessThanOrEqual(ARGUMENT_LIMITS.depth + 1);
    }
    if (body.field_0) {
      expect(stored.field_0).toBe('ü'.repeat(450));
      expect(stored[MORE_KEYS]).toMatch(/^\d+ more keys$/);
    }

    // The log as the API reads it, to the root token (sees "[redacted]") and a read token (sees no hidden field).
    const listed = await call(s.url, 'GET', '/api/v1/audit?per_page=1', { token: s.rootToken });
    expect(listed.status).toBe(200);
    expect(listed.json[0].uuid).toBe(row!.uuid);
    expect(listed.json[0].arguments[CUT_MARKER]).toEqual(stored[CUT_MARKER]);
    expect(JSON.stringify(listed.json)).not.toContain(SECRET);
    const asReader = await call(s.url, 'GET', '/api/v1/audit?per_page=1', { token: writer.token });
    expect(asReader.json[0].arguments[CUT_MARKER].original_bytes).toBe(stored[CUT_MARKER].original_bytes);
  });

  it('an ordinary call is stored as sent, with no marker', async () => {
    const r = await call(s.url, 'POST', '/api/v1/projects', { token: writer.token, body: { name: 'plain', extra: 'e'.repeat(200) } });
    expect(r.status).toBe(422);
    const [row] = await newest();
    expect(JSON.parse(row!.arguments!)).toEqual({ name: 'plain', extra: 'e'.repeat(200) });
  });

  it('a long uuid is kept as a short target', async () => {
    const r = await call(s.url, 'POST', '/api/v1/deploy', { token: writer.token, body: { uuid: 'u'.repeat(100_000), other_uuids: Array.from({ length: 5_000 }, (_, i) => `id${i}`) } });
    expect(r.status).toBe(422);
    const [row] = await newest();
    const targets = JSON.parse(row!.targets) as string[];
    expect(targets.length).toBeLessThanOrEqual(20);
    expect(Math.max(...targets.map((t) => t.length))).toBeLessThanOrEqual(65);
  });

  describe('MCP', () => {
    let c: AnyClient;
    beforeAll(async () => {
      c = await httpClient('v2-modern', s.url, writer.token);
    });
    afterAll(() => c.close());

    it.each(CASES)('a tool call with %s stores at most 16 KB with the marker', async (_name, make) => {
      const args = make();
      const r = await c.callTool('create_project', args);
      expect(r.isError).toBe(true);
      const [row] = await newest();
      expect(row).toMatchObject({ door: 'mcp-http', operation: 'create_project', result: 'validation' });
      checkStored(row!.arguments, args);
    });
  });

  it('console: a form with a huge name and 2,000 permissions stores at most 16 KB with the marker', async () => {
    const person = await signInByLink(s.url, s.db, s.ownerEmail);
    const form = { _csrf: person.csrf, team: String(s.rootTeamId), name: 'n'.repeat(20_000), expires: '7d', permissions: Array.from({ length: 2_000 }, (_, i) => `perm${i}`) };
    const page = await browse(s.url, person.jar, 'POST', '/tokens', form);
    expect(page.status).toBe(422);
    const [row] = await newest();
    expect(row).toMatchObject({ door: 'console', operation: 'create_token', result: 'validation' });
    const stored = checkStored(row!.arguments, { team_id: s.rootTeamId, name: form.name, permissions: form.permissions, expires: form.expires });
    expect(stored.permissions).toHaveLength(ARGUMENT_LIMITS.items + 1);
    expect(stored.permissions.at(-1)).toBe(`…(${2_000 - ARGUMENT_LIMITS.items} more items)`);
  });

  it("CLI: a change's entry, ok or failed, is bounded the same way", async () => {
    const args = manyKeys();
    const facts = () => ({ teamId: s.rootTeamId });
    await auditedChange(s.db, async () => 'done', { operation: 'bulky_change', args, facts });
    const [ok] = await newest();
    expect(ok).toMatchObject({ door: 'cli', operation: 'bulky_change', result: 'ok', token_id: null, source_ip: null });
    checkStored(ok!.arguments, args);
    await expect(
      auditedChange(
        s.db,
        async () => {
          throw new Error('boom');
        },
        { operation: 'bulky_change', args: deep(1_500), facts },
      ),
    ).rejects.toThrow('boom');
    const [failed] = await newest();
    expect(failed).toMatchObject({ door: 'cli', result: 'internal' });
    checkStored(failed!.arguments, deep(1_500));
  });
});
