import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { operations } from '../../src/core/operations/index.js';
import { expectValidation, fillPath, setup, type Ctx } from './support.js';

/** Every list: page/per_page rules, totals in headers, bare arrays; one list paged through. */
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

  it.each(lists.map((o) => [o.http.path] as const))('GET %s', async (path) => {
    const url = fillPath(path, c.w, c.s.rootTeamId);
    const r = await c.api('GET', url, c.read);
    expect(r.status, r.text).toBe(200);
    expect(Array.isArray(r.json)).toBe(true);
    expect(r.headers['x-page']).toBe('1');
    expect(r.headers['x-per-page']).toBe('100');
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

  it('more than 100 items: the default page holds 100 and the total counts them all', async () => {
    const { uuid: server } = (await c.api('POST', '/servers', c.write, { ip: '10.90.0.1' })).json;
    for (let i = 0; i < 104; i++) expect((await c.api('POST', `/servers/${server}/destinations`, c.write, { network: `net-${i}` })).status).toBe(201);
    const first = await c.api('GET', `/servers/${server}/destinations`, c.read);
    expect(first.json).toHaveLength(100);
    expect(first.headers['x-total-count']).toBe('105');
    const second = await c.api('GET', `/servers/${server}/destinations?page=2`, c.read);
    expect(second.json).toHaveLength(5);
    expect(second.json.map((d: { network: string }) => d.network)).toEqual(['net-99', 'net-100', 'net-101', 'net-102', 'net-103']);
  });
});
