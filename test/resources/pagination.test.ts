import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { operations } from '../../src/core/operations/index.js';
import { sensitiveNames } from '../../src/core/redact.js';
import { applicationSchema } from '../../src/core/operations/applications.js';
import { httpClient } from '../helpers/mcp.js';
import { expectValidation, fillPath, setup, type Ctx } from './support.js';

/**
 * Every list: page/per_page rules, totals in headers, bare arrays; one list paged through. Without
 * page and per_page a REST list answers every item (Coolify's lists do), except the audit log.
 */
let c: Ctx;
beforeAll(async () => {
  c = await setup();
});
afterAll(() => c.stop());

const lists = operations.filter((o) => o.http.list);

describe('paginated lists', () => {
  it('are declared with the {items, total, page, per_page} output (the MCP shape)', () => {
    expect(lists.length).toBeGreaterThanOrEqual(14);
    for (const op of lists) {
      expect(op.http.method).toBe('GET');
      const parsed = op.output.safeParse({ items: [], total: 0, page: 1, per_page: 100 });
      expect(parsed.success, op.name).toBe(true);
      expect(op.output.safeParse([]).success, op.name).toBe(false);
    }
  });

  it.each(lists.map((o) => [o.http.path, o.http.list] as const))('GET %s', async (path, list) => {
    const url = fillPath(path, c.w, c.s.rootTeamId);
    const r = await c.api('GET', url, c.read);
    expect(r.status, r.text).toBe(200);
    expect(Array.isArray(r.json)).toBe(true);
    expect(r.headers['x-page']).toBe('1');
    // Every item: the page is as long as the list; a paged-only list (the audit log) pages by 100.
    expect(r.headers['x-per-page']).toBe(list === 'paged' ? '100' : String(r.json.length));
    expect(Number(r.headers['x-total-count'])).toBe(r.json.length);

    const p = await c.api('GET', `${url}?page=1&per_page=1`, c.read);
    expect(p.status).toBe(200);
    expect(p.json.length).toBe(Math.min(1, r.json.length));
    expect(p.headers['x-total-count']).toBe(r.headers['x-total-count']);
    expect(p.headers['x-per-page']).toBe('1');
    const beyond = await c.api('GET', `${url}?page=999&per_page=100`, c.read);
    expect(beyond.json).toEqual([]);
    expect(beyond.headers['x-total-count']).toBe(r.headers['x-total-count']);
    expect(beyond.headers['x-page']).toBe('999');

    expectValidation(await c.api('GET', `${url}?per_page=101`, c.read), ['per_page']);
    expectValidation(await c.api('GET', `${url}?per_page=0`, c.read), ['per_page']);
    expectValidation(await c.api('GET', `${url}?page=0`, c.read), ['page']);
    expectValidation(await c.api('GET', `${url}?page=-1`, c.read), ['page']);
    expectValidation(await c.api('GET', `${url}?page=1.5`, c.read), ['page']);
    expectValidation(await c.api('GET', `${url}?page=abc&per_page=xyz`, c.read), ['page', 'per_page']);
  });

  it('paging through a list visits every item once, in a stable order', async () => {
    for (let i = 0; i < 7; i++) expect((await c.api('POST', '/projects', c.write, { name: `paged ${i}` })).status).toBe(201);
    const all = await c.api('GET', '/projects?per_page=100', c.read);
    const total = Number(all.headers['x-total-count']);
    expect(total).toBe(8); // the world's project and seven more
    const seen: string[] = [];
    for (let page = 1; page <= Math.ceil(total / 3); page++) {
      const r = await c.api('GET', `/projects?page=${page}&per_page=3`, c.read);
      expect(r.headers).toMatchObject({ 'x-total-count': String(total), 'x-page': String(page), 'x-per-page': '3' });
      expect(r.json.length).toBe(Math.min(3, total - (page - 1) * 3));
      seen.push(...r.json.map((p: { uuid: string }) => p.uuid));
    }
    expect(seen).toEqual(all.json.map((p: { uuid: string }) => p.uuid));
    expect(new Set(seen).size).toBe(total);
  });

  it('more than 100 items: without page/per_page every item, with them pages of at most 100 and the total', async () => {
    const { uuid: server } = (await c.api('POST', '/servers', c.write, { ip: '10.90.0.1' })).json;
    for (let i = 0; i < 104; i++) expect((await c.api('POST', `/servers/${server}/destinations`, c.write, { network: `net-${i}` })).status).toBe(201);
    const all = await c.api('GET', `/servers/${server}/destinations`, c.read);
    expect(all.json).toHaveLength(105);
    expect(all.headers).toMatchObject({ 'x-total-count': '105', 'x-page': '1', 'x-per-page': '105' });
    const first = await c.api('GET', `/servers/${server}/destinations?page=1`, c.read);
    expect(first.json).toHaveLength(100);
    expect(first.headers['x-total-count']).toBe('105');
    const second = await c.api('GET', `/servers/${server}/destinations?page=2`, c.read);
    expect(second.json).toHaveLength(5);
    expect(second.json.map((d: { network: string }) => d.network)).toEqual(['net-99', 'net-100', 'net-101', 'net-102', 'net-103']);
    expect(await c.api('GET', `/servers/${server}/destinations?per_page=100`, c.read)).toMatchObject({ json: first.json });
  });

  it('260 applications: GET /applications and /resources answer all of them in order; pages still work; the MCP tool keeps its page', async () => {
    const before = (await c.api('GET', '/applications', c.read)).json as { uuid: string }[];
    const place = { project_uuid: c.w.projectUuid, server_uuid: c.w.serverUuid, environment_name: 'production' };
    const made: string[] = [];
    for (let i = 0; i < 260; i++) {
      const r = await c.api('POST', '/applications/dockerimage', c.write, { ...place, name: `bulk-${i}`, docker_registry_image_name: 'nginx', ports_exposes: '80' });
      expect(r.status, r.text).toBe(201);
      made.push(r.json.uuid);
    }
    const all = await c.api('GET', '/applications', c.read);
    expect(all.status).toBe(200);
    expect(all.json.map((a: { uuid: string }) => a.uuid)).toEqual([...before.map((a) => a.uuid), ...made]);
    expect(all.headers['x-total-count']).toBe(String(before.length + 260));
    // Every item carries where it lives (read for the whole list at once).
    expect(all.json.at(-1)).toMatchObject({ uuid: made.at(-1), name: 'bulk-259', project_uuid: c.w.projectUuid, server_uuid: c.w.serverUuid, environment_uuid: expect.any(String) });
    const resources = await c.api('GET', '/resources', c.read);
    expect(resources.json.length).toBeGreaterThanOrEqual(before.length + 260);
    expect(resources.json.filter((r: { uuid: string }) => made.includes(r.uuid))).toHaveLength(260);

    // A long list is streamed (chunked, no Content-Length): the same JSON, every field of the schema.
    expect(all.headers['transfer-encoding']).toBe('chunked');
    expect(all.headers['content-length']).toBeUndefined();
    expect(all.headers['content-type']).toBe('application/json; charset=utf-8');
    // A read token's: every field but the sensitive ones (a compose application's file).
    const hidden = sensitiveNames(applicationSchema);
    expect(Object.keys(all.json.at(-1)).sort()).toEqual(
      Object.keys(applicationSchema.shape)
        .filter((k) => !hidden.has(k))
        .sort(),
    );
    const single = await c.api('GET', `/applications/${made.at(-1)}`, c.read);
    // A single GET adds what only it reads: the proxy's state, the copies on other servers, the previews.
    const { proxy_status, additional_destinations, running_copies, previews } = single.json;
    expect({ ...all.json.at(-1), proxy_status, additional_destinations, running_copies, previews }).toEqual(single.json);

    const paged = await c.api('GET', '/applications?page=3&per_page=100', c.read);
    expect(paged.json.map((a: { uuid: string }) => a.uuid)).toEqual(all.json.slice(200, 300).map((a: { uuid: string }) => a.uuid));
    expect(paged.headers).toMatchObject({ 'x-total-count': String(before.length + 260), 'x-page': '3', 'x-per-page': '100' });

    const mcp = await httpClient('v2-modern', c.s.url, c.read);
    try {
      const r = (await mcp.callTool('list_applications', {})) as unknown as { structuredContent: { items: unknown[]; total: number; per_page: number } };
      expect(r.structuredContent.total).toBe(before.length + 260);
      expect(r.structuredContent.items.length).toBe(r.structuredContent.per_page);
      expect(r.structuredContent.per_page).toBeLessThanOrEqual(100);
    } finally {
      await mcp.close();
    }
  }, 120_000);

  it("a long list taken again answers each row's current state: a changed application shows its change, the rest the same bytes, for each token", async () => {
    // The 260 applications of the test above: views of unchanged rows are reused from the second list on (src/core/view-memo.ts).
    const take = async (token: string) => {
      const r = await c.api('GET', '/applications', token);
      expect(r.status).toBe(200);
      expect(r.headers['transfer-encoding']).toBe('chunked');
      return r;
    };
    const first = await take(c.read);
    for (const token of [c.read, c.sensitive, c.sensitive]) await take(token);
    // The third list of the same rows is written from kept bytes: the same text.
    expect((await take(c.read)).text).toBe(first.text);
    const items = first.json as { uuid: string; name: string; description: string | null }[];
    expect(items.length).toBeGreaterThan(260);
    // read:sensitive sees the sensitive field (null for an image application); read does not.
    const withSecret = (await take(c.sensitive)).json as Record<string, unknown>[];
    expect(withSecret.every((a) => 'docker_compose_raw' in a)).toBe(true);
    expect(items.some((a) => 'docker_compose_raw' in a)).toBe(false);

    const target = items.find((a) => a.name === 'bulk-150')!;
    const patched = await c.api('PATCH', `/applications/${target.uuid}`, c.write, { name: 'bulk-150-renamed', description: 'changed after listing' });
    expect(patched.status, patched.text).toBe(200);
    for (const token of [c.read, c.sensitive]) {
      const after = (await take(token)).json as { uuid: string; name: string; description: string | null; updated_at: string }[];
      const changed = after.find((a) => a.uuid === target.uuid)!;
      expect(changed).toMatchObject({ name: 'bulk-150-renamed', description: 'changed after listing' });
      expect(after.filter((a) => a.uuid !== target.uuid)).toEqual((token === c.read ? items : withSecret).filter((a) => a.uuid !== target.uuid));
    }
    // The single GET and the list agree on the changed application, field by field.
    const single = (await c.api('GET', `/applications/${target.uuid}`, c.read)).json;
    const listed = ((await take(c.read)).json as { uuid: string }[]).find((a) => a.uuid === target.uuid)!;
    // What only a single GET shows: the proxy's state, the copies and the previews.
    const { proxy_status, additional_destinations, running_copies, previews } = single;
    expect({ ...listed, proxy_status, additional_destinations, running_copies, previews }).toEqual(single);
  }, 120_000);
});
