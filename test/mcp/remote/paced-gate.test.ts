/**
 * The paced client without a budget (how remote mode uses it) keeps its concurrency limit with a
 * plain gate instead of Bottleneck: at most `concurrency` requests in flight, the rest in order.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { PacedClient } from '../../../src/mcp/remote/paced-client.js';

let server: http.Server;
let base: string;
let inflight = 0;
let peak = 0;
const order: string[] = [];

beforeAll(async () => {
  server = http.createServer((req, res) => {
    inflight++;
    peak = Math.max(peak, inflight);
    order.push(req.url!);
    setTimeout(() => {
      inflight--;
      res.writeHead(200).end('{}');
    }, 15);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

it('at most `concurrency` requests in flight, the waiting ones in FIFO order; close drops the waiting', async () => {
  const c = new PacedClient({ baseUrl: base, concurrency: 2 });
  const all = Array.from({ length: 8 }, (_, i) => c.request('GET', `/r${i}`));
  expect((await Promise.all(all)).map((r) => r.status)).toEqual(Array(8).fill(200));
  expect(peak).toBe(2);
  // With two slots, requests leave in order but travel on two sockets, so their arrival order is
  // not observable here; the one-slot test below checks the order.
  expect([...order].sort()).toEqual(Array.from({ length: 8 }, (_, i) => `/r${i}`).sort());

  const running = c.request('GET', '/last-running');
  const running2 = c.request('GET', '/last-running-2');
  const waiting = c.request('GET', '/never-sent');
  await c.close();
  await expect(waiting).rejects.toThrow(/closed/);
  expect((await running).status).toBe(200);
  expect((await running2).status).toBe(200);
  expect(order).not.toContain('/never-sent');
});

it('with one slot, requests leave strictly in the order they were made', async () => {
  order.length = 0;
  const c = new PacedClient({ baseUrl: base, concurrency: 1 });
  await Promise.all(Array.from({ length: 6 }, (_, i) => c.request('GET', `/s${i}`)));
  expect(order).toEqual(Array.from({ length: 6 }, (_, i) => `/s${i}`));
  await c.close();
});
