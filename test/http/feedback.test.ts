import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestServer, type Reply, type TestServer } from '../helpers/server.js';
import { freePort } from '../helpers/process.js';
import { until } from '../helpers/wait.js';

/**
 * POST /api/feedback over real HTTP: stored, validated per the contract, and forwarded on a best
 * effort to FEEDBACK_WEBHOOK_URL, a real node:http server here that can answer, fail or hang.
 */

interface Hook {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  /** Set when the connection ended before the webhook answered (berth gave up). */
  abortedAt?: number;
  /** Set when the webhook finished writing its answer. */
  answeredAt?: number;
  receivedAt: number;
}

const HANG = '[hang]';
const SLOW_500 = '[slow-500]';
/** How long the failing webhook takes before its 500: longer than a normal request takes. */
const SLOW_MS = 1_500;

/** A webhook that records every request; its answer is chosen by a marker in the content. */
async function startWebhook() {
  const hooks: Hook[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (body += c));
    req.on('end', () => {
      const hook: Hook = { method: req.method!, url: req.url!, headers: req.headers, body, receivedAt: Date.now() };
      hooks.push(hook);
      res.on('close', () => {
        if (!res.writableFinished) hook.abortedAt = Date.now();
      });
      res.on('finish', () => (hook.answeredAt = Date.now()));
      if (body.includes(HANG)) return; // never answers
      if (body.includes(SLOW_500)) {
        setTimeout(() => res.writeHead(500, { 'content-type': 'text/plain' }).end('boom'), SLOW_MS);
        return;
      }
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/hooks/feedback`,
    hooks,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

/**
 * Each request comes from its own loopback address (Linux routes all of 127.0.0.0/8 to lo), so
 * the per-address feedback rate limit never decides an outcome here.
 */
let addr = 0;
const nextAddr = () => {
  addr++;
  return `127.0.${20 + (addr >> 8)}.${addr & 255 || 1}`;
};
async function post(base: string, body: unknown, token?: string): Promise<Reply & { from: string }> {
  const from = nextAddr();
  return { ...(await call(base, 'POST', '/api/feedback', { body, token, from })), from };
}

/** n characters without surrounding whitespace (the content is trimmed before its length is checked). */
const text = (n: number, tag = 'fb') => (tag + '-' + 'abcdefghij'.repeat(Math.ceil(n / 10) + 1)).slice(0, n);

let s: TestServer;
let hook: Awaited<ReturnType<typeof startWebhook>>;
beforeAll(async () => {
  hook = await startWebhook();
  s = await startTestServer({ feedbackWebhookUrl: hook.url });
});
afterAll(async () => {
  await s?.stop();
  await hook?.close();
});

const feedbackRow = (id: number) => s.db.selectFrom('feedback').selectAll().where('id', '=', id).executeTakeFirst();
const feedbackCount = async () =>
  Number(
    (
      await s.db
        .selectFrom('feedback')
        .select((eb) => eb.fn.countAll().as('n'))
        .executeTakeFirstOrThrow()
    ).n,
  );
const hookFor = (content: string) => hook.hooks.find((h) => h.body.includes(content));

describe('POST /api/feedback', () => {
  it('accepts feedback from a token with any single permission: 201, stored with its team and user', async () => {
    // Tokens first: the helper's store handle must not write while forwards are updating rows.
    const tokens: [string, { id: number; token: string }][] = [];
    for (const perm of ['read', 'read:sensitive', 'write', 'deploy', 'root']) {
      tokens.push([perm, await s.token({ permissions: [perm], role: perm === 'root' ? 'admin' : 'member' })]);
    }
    for (const [perm, t] of tokens) {
      const content = `Feedback sent with a ${perm} token: the docs on migrate are unclear.`;
      const r = await post(s.url, { content }, t.token);
      expect(r.status, perm).toBe(201);
      expect(r.headers['content-type']).toMatch(/^application\/json/);
      expect(r.json).toEqual({ message: expect.any(String), id: expect.any(Number) });
      const row = await feedbackRow(r.json.id);
      expect(row).toMatchObject({ content, team_id: s.rootTeamId });
      const owner = await s.db.selectFrom('api_tokens').select('user_id').where('id', '=', t.id).executeTakeFirstOrThrow();
      expect(row!.user_id).toBe(owner.user_id);
      expect(row!.source_ip).toBe(r.from);
    }
  });

  it('accepts exactly 10 and exactly 2000 characters', async () => {
    for (const n of [10, 2000]) {
      const content = text(n, `len${n}`);
      expect(content).toHaveLength(n);
      const r = await post(s.url, { content }, s.rootToken);
      expect(r.status, `length ${n}`).toBe(201);
      expect((await feedbackRow(r.json.id))!.content).toBe(content);
    }
  });

  it('content shorter than 10 or longer than 2000 characters, missing or not a string is 422 and stores nothing', async () => {
    const before = await feedbackCount();
    const bad: unknown[] = [
      { content: 'too short' }, // 9
      { content: '' },
      { content: '  short   ' }, // 10 with spaces, 5 without
      { content: text(2001) },
      {},
      { content: 12345678901 },
      { content: null },
    ];
    for (const body of bad) {
      const r = await post(s.url, body, s.rootToken);
      expect(r.status, JSON.stringify(body).slice(0, 40)).toBe(422);
      expect(Object.keys(r.json)).toEqual(['message', 'errors']);
      expect(r.json.message).toBe('Validation error.');
      expect(Object.keys(r.json.errors)).toEqual(['content']);
      expect(r.json.errors.content.length).toBeGreaterThan(0);
      for (const m of r.json.errors.content) expect(typeof m).toBe('string');
    }
    expect(await feedbackCount()).toBe(before);
  });

  it('an unknown field is a 422 on that field', async () => {
    const r = await post(s.url, { content: text(50), rating: 5 }, s.rootToken);
    expect(r.status).toBe(422);
    expect(r.json).toEqual({ message: 'Validation error.', errors: { rating: [expect.any(String)] } });
  });

  it('without a token is 401 Unauthenticated; with a bad token 401 Invalid token; nothing is stored', async () => {
    const before = await feedbackCount();
    const none = await post(s.url, { content: text(50) });
    expect(none.status).toBe(401);
    expect(none.text).toBe('{"message":"Unauthenticated."}');
    expect(none.headers['www-authenticate']).toMatch(/^Bearer/);
    const [id] = s.rootToken.split('|');
    const bad = await post(s.url, { content: text(50) }, `${id}|${'x'.repeat(48)}`);
    expect(bad.status).toBe(401);
    expect(bad.text).toBe('{"message":"Invalid token."}');
    expect(await feedbackCount()).toBe(before);
  });

  it('forwards the stored feedback to FEEDBACK_WEBHOOK_URL and records when it did', async () => {
    const content = 'Forward me: the teams endpoint works nicely.';
    const r = await post(s.url, { content }, s.rootToken);
    expect(r.status).toBe(201);
    const h = await until('the webhook request', () => hookFor(content));
    expect(h.method).toBe('POST');
    expect(h.url).toBe('/hooks/feedback');
    expect(h.headers['content-type']).toMatch(/^application\/json/);
    const sent = JSON.parse(h.body);
    expect(sent).toMatchObject({ id: r.json.id, content });
    // The webhook never receives credentials.
    expect(h.body).not.toContain(s.rootToken.split('|')[1]!);
    expect(h.headers.authorization).toBeUndefined();
    const row = await until('forwarded_at', async () => {
      const f = await feedbackRow(r.json.id);
      return f?.forwarded_at ? f : undefined;
    });
    expect(Date.parse(row.forwarded_at!)).not.toBeNaN();
  });

  it('a webhook that answers 500 (slowly) changes neither the 201 nor its latency; forwarded_at stays null', async () => {
    const content = `${SLOW_500} this one makes the webhook fail`;
    const r = await post(s.url, { content }, s.rootToken);
    expect(r.status).toBe(201);
    // The answer did not wait for the webhook: it came while the webhook was still holding its own.
    expect(hookFor(SLOW_500)?.answeredAt).toBeUndefined();
    expect((await feedbackRow(r.json.id))!.content).toBe(content);

    const h = await until('the failing webhook to answer', () => hookFor(SLOW_500)?.answeredAt, SLOW_MS + 5_000);
    expect(h).toBeGreaterThan(0);
    // Barrier: a later feedback that forwards fine has been marked forwarded; the failed one,
    // answered before that one was even sent, is done by then.
    const ok = await post(s.url, { content: 'after the failure, this one forwards' }, s.rootToken);
    await until('the later feedback to be forwarded', async () => (await feedbackRow(ok.json.id))?.forwarded_at);
    expect((await feedbackRow(r.json.id))!.forwarded_at).toBeNull();
  });

  it('a webhook that never answers changes neither the 201 nor its latency; berth gives up and forwarded_at stays null', async () => {
    const content = `${HANG} this one makes the webhook hang`;
    const r = await post(s.url, { content }, s.rootToken);
    expect(r.status).toBe(201);
    expect(hookFor(HANG)?.abortedAt).toBeUndefined();
    expect((await feedbackRow(r.json.id))!.content).toBe(content);

    const h = await until('the hanging webhook request', () => hookFor(HANG));
    // The forward has a short timeout: berth closes the connection itself.
    const abortedAt = await until('berth to give up on the hanging webhook', () => h.abortedAt, 15_000);
    expect(abortedAt - h.receivedAt).toBeLessThan(10_000);
    expect(h.answeredAt).toBeUndefined();
    // The API kept answering meanwhile, and the feedback was never marked forwarded.
    expect((await call(s.url, 'GET', '/api/health')).status).toBe(200);
    expect((await feedbackRow(r.json.id))!.forwarded_at).toBeNull();
  });
});

describe('POST /api/feedback with the webhook down', () => {
  let down: TestServer;
  beforeAll(async () => {
    down = await startTestServer({ feedbackWebhookUrl: `http://127.0.0.1:${await freePort()}/hook` });
  });
  afterAll(() => down?.stop());

  it('still answers 201 and stores the feedback, not marked forwarded', async () => {
    const content = 'The webhook is down but this must still be kept.';
    const r = await post(down.url, { content }, down.rootToken);
    expect(r.status).toBe(201);
    const row = await down.db.selectFrom('feedback').selectAll().where('id', '=', r.json.id).executeTakeFirst();
    expect(row).toMatchObject({ content, forwarded_at: null });
    // A second one right after: the failed forward broke nothing.
    const again = await post(down.url, { content: content + ' Again.' }, down.rootToken);
    expect(again.status).toBe(201);
    expect(again.json.id).toBeGreaterThan(r.json.id);
  });
});
