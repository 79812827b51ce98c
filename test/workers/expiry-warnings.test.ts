import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { sql } from 'kysely';
import { SMTPServer } from 'smtp-server';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { startServer, type RunningServer } from '../../src/serve.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { until } from '../helpers/wait.js';
import { storeUrlFor, TEST_STORE } from '../helpers/store.js';

/**
 * The token-expiry warning worker against a real SMTP listener (smtp-server on an ephemeral
 * loopback port, plaintext, no auth), driven by a real berth server scanning every 100 ms.
 */

const SCAN_MS = 100;
const HOUR = 3_600_000;

interface Received {
  rcptTo: string[];
  raw: string;
  headers: Record<string, string>;
  /** Body with quoted-printable soft breaks and escapes decoded. */
  text: string;
}

interface TestSmtp {
  url: string;
  /** Messages accepted (250). */
  accepted: Received[];
  /** Messages the listener refused at the end of DATA. */
  rejected: Received[];
  /** While true, every message is refused with a temporary 451 at the end of DATA. */
  rejecting: boolean;
  close(): Promise<void>;
}

function decodeQuotedPrintable(s: string): string {
  const bytes = Buffer.from(s.replace(/=\r?\n/g, ''), 'binary');
  const out: number[] = [];
  for (let i = 0; i < bytes.length; i++) {
    const c = bytes[i]!;
    const hex = bytes.subarray(i + 1, i + 3).toString('latin1');
    if (c === 0x3d && /^[0-9A-F]{2}$/i.test(hex)) {
      out.push(parseInt(hex, 16));
      i += 2;
    } else out.push(c);
  }
  return Buffer.from(out).toString('utf8');
}

/** RFC 2047 encoded words (=?UTF-8?Q?...?= / =?UTF-8?B?...?=) in a header value. */
function decodeHeader(v: string): string {
  return v
    .replace(/(\?=)\s+(=\?)/g, '$1$2')
    .replace(/=\?[^?]+\?([QqBb])\?([^?]*)\?=/g, (_m, enc: string, data: string) =>
      enc.toUpperCase() === 'B' ? Buffer.from(data, 'base64').toString('utf8') : decodeQuotedPrintable(data.replace(/_/g, ' ')),
    );
}

function parseMessage(raw: string, rcptTo: string[]): Received {
  const split = raw.indexOf('\r\n\r\n');
  const head = raw.slice(0, split).replace(/\r\n[ \t]+/g, ' ');
  const headers: Record<string, string> = {};
  for (const line of head.split('\r\n')) {
    const i = line.indexOf(':');
    if (i > 0) headers[line.slice(0, i).trim().toLowerCase()] = decodeHeader(line.slice(i + 1).trim());
  }
  let text = raw.slice(split + 4);
  const cte = (headers['content-transfer-encoding'] ?? '').toLowerCase();
  if (cte === 'quoted-printable') text = decodeQuotedPrintable(text);
  else if (cte === 'base64') text = Buffer.from(text, 'base64').toString('utf8');
  return { rcptTo, raw, headers, text };
}

async function startSmtp(): Promise<TestSmtp> {
  const state = { accepted: [] as Received[], rejected: [] as Received[], rejecting: false };
  const server = new SMTPServer({
    disabledCommands: ['STARTTLS', 'AUTH'],
    authOptional: true,
    logger: false,
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        const msg = parseMessage(
          Buffer.concat(chunks).toString('binary'),
          session.envelope.rcptTo.map((a) => a.address),
        );
        if (state.rejecting) {
          state.rejected.push(msg);
          const err = Object.assign(new Error('Mailbox temporarily unavailable, try again later'), { responseCode: 451 });
          callback(err);
        } else {
          state.accepted.push(msg);
          callback(null, 'queued');
        }
      });
    },
  });
  await new Promise<void>((resolve, reject) => {
    server.server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.server.address() as AddressInfo).port;
  return Object.assign(state, {
    url: `smtp://127.0.0.1:${port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }) as TestSmtp;
}

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!().catch(() => {});
});

async function smtp(): Promise<TestSmtp> {
  const s = await startSmtp();
  cleanups.push(() => s.close());
  return s;
}

async function berth(overrides: Parameters<typeof startTestServer>[0]): Promise<TestServer> {
  const s = await startTestServer({ expiryScanMs: SCAN_MS, ...overrides });
  cleanups.push(() => s.stop());
  return s;
}

let seq = 0;
const unique = () => `${++seq}-${randomBytes(3).toString('hex')}`;

interface MadeToken {
  id: number;
  token: string;
  secret: string;
  name: string;
  email: string;
}

/**
 * A token created the normal way (7d, or never) with a distinctive name. Tokens are made before
 * the worker has anything to do: the helper's db handle is a second connection, and its
 * multi-statement transactions must not interleave with the worker's writes.
 */
async function makeToken(s: TestServer, opts: { email?: string; never?: boolean } = {}): Promise<MadeToken> {
  const email = opts.email ?? `owner-${unique()}@example.test`;
  const t = await s.token({ permissions: ['read'], email, expires: opts.never ? 'never' : '7d' });
  const name = `ci-deploy-${unique()}`;
  await s.db.updateTable('api_tokens').set({ name }).where('id', '=', t.id).execute();
  return { id: t.id, token: t.token, secret: t.token.split('|')[1]!, name, email };
}

/** Moves a token's expiry to `ms` from now through the store (no API creates a token that close to expiry). */
async function expireIn(s: TestServer, t: MadeToken, ms: number): Promise<void> {
  await s.db
    .updateTable('api_tokens')
    .set({ expires_at: new Date(Date.now() + ms).toISOString() })
    .where('id', '=', t.id)
    .execute();
}

const outboxRow = (s: TestServer, t: MadeToken) => s.db.selectFrom('outbox').selectAll().where('dedupe_key', '=', `token-expiry:${t.id}`).executeTakeFirst();

async function untilSent(s: TestServer, t: MadeToken) {
  return until(`the outbox row of token ${t.id} marked sent`, async () => {
    const o = await outboxRow(s, t);
    return o?.status === 'sent' ? o : undefined;
  });
}

/** Messages about a token, recognised by its (unique) name. */
const mailsFor = (box: Received[], t: MadeToken) => box.filter((m) => m.text.includes(t.name));

function expectNoSecrets(m: Received, tokens: MadeToken[]) {
  for (const t of tokens) {
    expect(m.raw).not.toContain(t.secret);
    expect(m.text).not.toContain(t.secret);
  }
}

describe('token expiry warnings over SMTP', () => {
  it('sends exactly one e-mail to the owner of a token expiring within 24 hours, and none for other tokens', async () => {
    const mail = await smtp();
    const s = await berth({ smtpUrl: mail.url });

    const far = await makeToken(s); // 7 days
    const justOutside = await makeToken(s);
    const expired = await makeToken(s);
    const never = await makeToken(s, { never: true });
    const due = await makeToken(s, { email: 'alice@example.test' });
    const later = await makeToken(s, { email: 'bob@example.test' });
    const all = [far, justOutside, expired, never, due, later];

    // Arranged before the due token, so the scan that finds it sees all of them.
    await expireIn(s, justOutside, 25 * HOUR);
    await expireIn(s, expired, -HOUR);
    await expireIn(s, due, 23 * HOUR);

    await until('the warning e-mail', () => mail.accepted.length >= 1);
    await untilSent(s, due);
    // Barrier: a second due token's warning goes out in a later scan, so at least one full scan
    // has run after the first warning was sent; a duplicate would have shown up by then.
    await expireIn(s, later, 20 * HOUR);
    await until('the barrier warning', () => mailsFor(mail.accepted, later).length === 1);
    await untilSent(s, later);

    expect(mail.accepted).toHaveLength(2);
    expect(mail.rejected).toHaveLength(0);
    expect(mailsFor(mail.accepted, due)).toHaveLength(1);
    const m = mailsFor(mail.accepted, due)[0]!;
    expect(m.rcptTo).toEqual(['alice@example.test']);
    expect(m.headers.to).toContain('alice@example.test');
    expect(m.headers.subject).toContain(due.name);
    expect(m.headers.subject).toMatch(/expire/i);
    expect(m.text).toContain(due.name);
    // The body says when (the stored expires_at).
    const row = await s.db.selectFrom('api_tokens').select('expires_at').where('id', '=', due.id).executeTakeFirstOrThrow();
    expect(m.text).toContain(row.expires_at!);
    expect(mailsFor(mail.accepted, later)[0]!.rcptTo).toEqual(['bob@example.test']);
    for (const msg of mail.accepted) expectNoSecrets(msg, all);

    // Nothing was queued for the far, just-outside, expired and never-expiring tokens.
    const outbox = await s.db.selectFrom('outbox').selectAll().orderBy('id').execute();
    expect(outbox.map((o) => o.dedupe_key)).toEqual([`token-expiry:${due.id}`, `token-expiry:${later.id}`]);
    for (const o of outbox) {
      expect(o.status).toBe('sent');
      expect(o.attempts).toBe(1);
      expect(o.sent_at).not.toBeNull();
      expect(o.last_error).toBeNull();
    }
    for (const t of [far, justOutside, expired, never]) expect(mailsFor(mail.accepted, t)).toHaveLength(0);
  });

  it('a scan with nothing new to send writes nothing to the store', async () => {
    const mail = await smtp();
    const s = await berth({ smtpUrl: mail.url });
    const due = await makeToken(s);
    await expireIn(s, due, 23 * HOUR);
    await untilSent(s, due);

    // SQLite: data_version changes whenever another connection commits to the file. PostgreSQL:
    // every row a transaction writes gets that transaction's id (xmin).
    const version = async () =>
      TEST_STORE === 'sqlite'
        ? (await sql<{ data_version: number }>`pragma data_version`.execute(s.db)).rows[0]!.data_version
        : (
            await sql<{
              v: string;
            }>`select string_agg(x, ',' order by x) as v from (select xmin::text as x from outbox union all select xmin::text from api_tokens union all select xmin::text from settings) t`.execute(
              s.db,
            )
          ).rows[0]!.v;
    const before = await version();
    // No observable event marks an idle scan, so this one waits for a few of them.
    await new Promise((r) => setTimeout(r, 4 * SCAN_MS));
    expect(await version()).toBe(before);
    expect(mailsFor(mail.accepted, due)).toHaveLength(1);
  });

  it('never sends a second warning for the same token after a restart on the same data', async () => {
    const mail = await smtp();
    const s = await berth({ smtpUrl: mail.url });
    const due = await makeToken(s);
    const cutOff = await makeToken(s);
    const barrier = await makeToken(s);

    await expireIn(s, due, 23 * HOUR);
    await until('the first warning', () => mailsFor(mail.accepted, due).length === 1);
    await untilSent(s, due);

    // Stop the first process but keep its data directory; the helper's own db handle stays open.
    await s.close();

    // A send that a crash cut off half-way ("sending") is not retried after the restart: a warning
    // that may already have gone out is never sent twice.
    await expireIn(s, cutOff, 22 * HOUR);
    await s.db
      .insertInto('outbox')
      .values({
        dedupe_key: `token-expiry:${cutOff.id}`,
        recipient: cutOff.email,
        subject: `Your berth API token "${cutOff.name}" expires within 24 hours`,
        body: `The API token "${cutOff.name}" (id ${cutOff.id}) expires soon.\n`,
        status: 'sending',
        attempts: 1,
        last_error: null,
        created_at: new Date().toISOString(),
        sent_at: null,
      })
      .execute();

    const config = loadConfig({ LOG_LEVEL: 'silent' }, { dataDir: s.dataDir, databaseUrl: storeUrlFor(s.dataDir), host: '127.0.0.1', port: 0, smtpUrl: mail.url, expiryScanMs: SCAN_MS });
    const printed: string[] = [];
    const second: RunningServer = await startServer(config, (line) => printed.push(line));
    cleanups.push(() => second.close());
    // The data directory was already initialized: no new instance, no new root token.
    expect(printed).toEqual([]);

    // Barrier: the restarted worker has scanned and sent at least once.
    await expireIn(s, barrier, 21 * HOUR);
    await until('the barrier warning from the restarted server', () => mailsFor(mail.accepted, barrier).length === 1);
    await untilSent(s, barrier);

    expect(mailsFor(mail.accepted, due)).toHaveLength(1);
    expect(mailsFor(mail.accepted, cutOff)).toHaveLength(0);
    expect(mail.accepted).toHaveLength(2);
    const rows = await s.db.selectFrom('outbox').select(['dedupe_key', 'status']).orderBy('id').execute();
    expect(rows).toEqual([
      { dedupe_key: `token-expiry:${due.id}`, status: 'sent' },
      { dedupe_key: `token-expiry:${cutOff.id}`, status: 'unknown' },
      { dedupe_key: `token-expiry:${barrier.id}`, status: 'sent' },
    ]);
  });

  it('a message the SMTP server refuses stays pending with the error, and is retried and sent once', async () => {
    const mail = await smtp();
    mail.rejecting = true;
    // A slower scan here, so the pending state between two attempts lasts long enough to see.
    const s = await berth({ smtpUrl: mail.url, expiryScanMs: 500 });
    const due = await makeToken(s);
    const barrier = await makeToken(s);

    await expireIn(s, due, 23 * HOUR);
    const pending = await until('a refused attempt recorded as pending', async () => {
      const o = await outboxRow(s, due);
      return o && o.status === 'pending' && o.last_error !== null ? o : undefined;
    });
    mail.rejecting = false;
    expect(pending.last_error).toMatch(/451|temporarily unavailable/);
    expect(pending.sent_at).toBeNull();
    expect(pending.attempts).toBeGreaterThanOrEqual(1);
    // The retry waits a backoff (scan interval × 2^attempts), not just the next scan.
    expect(Date.parse(pending.next_attempt_at!)).toBeGreaterThanOrEqual(Date.parse(pending.created_at) + 500);
    expect(mailsFor(mail.rejected, due).length).toBeGreaterThanOrEqual(1);
    expect(mail.accepted).toHaveLength(0);

    await until('the retried warning', () => mailsFor(mail.accepted, due).length === 1);
    const sent = await untilSent(s, due);
    await expireIn(s, barrier, 20 * HOUR);
    await until('the barrier warning', () => mailsFor(mail.accepted, barrier).length === 1);

    expect(mailsFor(mail.accepted, due)).toHaveLength(1);
    expect(mailsFor(mail.accepted, due)[0]!.rcptTo).toEqual([due.email]);
    expect(sent.last_error).toBeNull();
    expect(sent.sent_at).not.toBeNull();
    // One attempt per refused delivery plus the one that went through.
    expect(sent.attempts).toBe(mailsFor(mail.rejected, due).length + 1);
    expect(sent.attempts).toBeGreaterThanOrEqual(2);
  });
});

describe('token expiry warnings without SMTP_URL', () => {
  it('keeps the warning in the outbox (status "kept"), once', async () => {
    const s = await berth({ smtpUrl: null });
    const far = await makeToken(s);
    const due = await makeToken(s, { email: 'carol@example.test' });
    const later = await makeToken(s);

    await expireIn(s, due, 23 * HOUR);
    const kept = await until('the kept outbox row', () => outboxRow(s, due));
    // Barrier: a later token's row appears in a later scan, so the first was not queued twice.
    await expireIn(s, later, 20 * HOUR);
    await until('the barrier row', () => outboxRow(s, later));

    expect(kept.status).toBe('kept');
    expect(kept.recipient).toBe('carol@example.test');
    expect(kept.subject).toContain(due.name);
    expect(kept.body).toContain(due.name);
    expect(kept.subject + kept.body).not.toContain(due.secret);
    expect(kept.attempts).toBe(0);
    expect(kept.sent_at).toBeNull();
    const rows = await s.db.selectFrom('outbox').select(['dedupe_key', 'status']).orderBy('id').execute();
    expect(rows).toEqual([
      { dedupe_key: `token-expiry:${due.id}`, status: 'kept' },
      { dedupe_key: `token-expiry:${later.id}`, status: 'kept' },
    ]);
    expect(rows.some((r) => r.dedupe_key === `token-expiry:${far.id}`)).toBe(false);
  });
});
