import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as admin from '../../src/core/admin.js';
import { until } from '../helpers/wait.js';
import { browse, csrfOf, Jar, signInByLink, type ConsoleSession } from '../helpers/console.js';
import { call, startTestServer, type TestServer } from '../helpers/server.js';

/** A real SMTP server that keeps what it receives (quoted-printable undone). */
async function startSmtp() {
  const mails: { to: string[]; text: string }[] = [];
  const server = new SMTPServer({
    disabledCommands: ['STARTTLS', 'AUTH'],
    authOptional: true,
    logger: false,
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        const text = Buffer.concat(chunks)
          .toString('utf8')
          .replace(/=\r?\n/g, '')
          .replace(/=([0-9A-F]{2})/g, (_m, h: string) => String.fromCharCode(parseInt(h, 16)));
        mails.push({ to: session.envelope.rcptTo.map((a) => a.address), text });
        callback(null);
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return { mails, url: `smtp://127.0.0.1:${(server.server.address() as AddressInfo).port}`, close: () => new Promise<void>((r) => server.close(() => r())) };
}

let s: TestServer;
let smtp: Awaited<ReturnType<typeof startSmtp>>;
let owner: ConsoleSession;

beforeAll(async () => {
  smtp = await startSmtp();
  s = await startTestServer({ smtpUrl: smtp.url });
  owner = await signInByLink(s.url, s.db, s.ownerEmail);
});
afterAll(async () => {
  await s?.stop();
  await smtp?.close();
});

async function member(role: 'owner' | 'admin' | 'member', team?: number) {
  const email = `${role}-${Math.random().toString(36).slice(2, 8)}@example.test`;
  const t = await s.token({ permissions: ['read'], email, role, team });
  const u = await s.db.selectFrom('users').select('id').where('email', '=', email).executeTakeFirstOrThrow();
  return { email, id: u.id, token: t.token };
}

describe('sign-in by e-mail', () => {
  it('answers the same page for an address with or without an account; only the account gets a link, which works', async () => {
    const jar = new Jar();
    const csrf = csrfOf((await browse(s.url, jar, 'GET', '/login')).text);
    const known = await browse(s.url, jar, 'POST', '/login', { _csrf: csrf, email: s.ownerEmail });
    const unknown = await browse(s.url, jar, 'POST', '/login', { _csrf: csrf, email: 'nobody-here@example.test' });
    expect(known.status).toBe(200);
    expect(unknown.status).toBe(200);
    expect(unknown.text.replace('nobody-here@example.test', 'X')).toBe(known.text.replace(s.ownerEmail, 'X'));
    await until('the sign-in mail', () => smtp.mails.length >= 1);
    await new Promise((r) => setTimeout(r, 300));
    expect(smtp.mails.map((m) => m.to)).toEqual([[s.ownerEmail]]);
    const url = /http:\/\/127\.0\.0\.1:\d+\/login\/link\?token=[A-Za-z0-9_-]+/.exec(smtp.mails[0]!.text)![0];
    const fresh = new Jar();
    const page = await browse(s.url, fresh, 'GET', url.slice(url.indexOf('/login')));
    const done = await browse(s.url, fresh, 'POST', '/login/link', { _csrf: csrfOf(page.text), token: new URL(url).searchParams.get('token')! });
    expect(done.status).toBe(303);
    expect(fresh.cookies.has('berth_session')).toBe(true);
  });

  it('limits links per e-mail address, and sign-in attempts per source address', async () => {
    const jar = new Jar();
    const csrf = csrfOf((await browse(s.url, jar, 'GET', '/login')).text);
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push((await browse(s.url, jar, 'POST', '/login', { _csrf: csrf, email: 'flood@example.test' })).status);
    expect(statuses).toEqual([200, 200, 200, 429]);
    const limited = await browse(s.url, jar, 'POST', '/login', { _csrf: csrf, email: 'flood@example.test' });
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    // From one address, at most 20 sign-in steps a window whatever the e-mail (two were spent above, and one in the first test).
    const from = '127.0.0.9';
    const many: number[] = [];
    for (let i = 0; i < 21; i++) {
      const r = await call(s.url, 'POST', '/login', { from, body: `_csrf=${csrf}&email=a${i}@example.test`, headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: jar.header() } });
      many.push(r.status);
    }
    expect(many.slice(0, 20).every((x) => x === 200)).toBe(true);
    expect(many[20]).toBe(429);
  });

  it('mails a link only for a host the operator allowed: another Host header gets no mail, whatever it claims', async () => {
    const port = new URL(s.url).port;
    const ask = async (host: string, email: string) => {
      const jar = new Jar();
      const headers = { host, origin: `http://${host}` };
      const csrf = csrfOf((await browse(s.url, jar, 'GET', '/login', undefined, headers)).text);
      return browse(s.url, jar, 'POST', '/login', { _csrf: csrf, email }, headers);
    };
    const before = smtp.mails.length;
    const forged = await ask('attacker.example', s.ownerEmail);
    expect(forged.status).toBe(200);
    // An allowed name with another port (whatever listens there would get the link), or with
    // characters mail clients' URL parsers read differently: no mail either.
    const otherPort = Number(port) === 65535 ? 65534 : Number(port) + 1;
    // (Another person: three links an address a minute is the mailbox's own limit.)
    const other = (await s.team('Host Trust')).ownerEmail;
    for (const host of [`localhost:${otherPort}`, 'localhost\\@attacker.example', `user@localhost:${port}`]) expect((await ask(host, other)).status).toBe(200);
    // Bound to loopback without BERTH_PUBLIC_URL: the loopback names are allowed (as on /mcp), with their port.
    const local = await ask(`localhost:${port}`, s.ownerEmail);
    expect(local.text).not.toContain('mails sign-in links only');
    await until('the sign-in mail', () => smtp.mails.length > before);
    await new Promise((r) => setTimeout(r, 300));
    expect(smtp.mails.slice(before)).toHaveLength(1);
    expect(smtp.mails.at(-1)!.text).toMatch(new RegExp(`http://localhost:${port}/login/link\\?token=`));
    expect(smtp.mails.map((m) => m.text).join('\n')).not.toContain('attacker.example');
    expect(smtp.mails.map((m) => m.text).join('\n')).not.toContain(`localhost:${otherPort}`);
    // The page says why no mail comes (the same for any address, so it tells nothing about accounts).
    expect(forged.text).toContain('mails sign-in links only for its configured address');
  });

  it('with MCP_ALLOWED_HOSTS, mails links for the hosts it names only (the loopback names are then not assumed)', async () => {
    const named = await startTestServer({ smtpUrl: smtp.url, mcpAllowedHosts: ['berth.lan'] });
    try {
      const port = new URL(named.url).port;
      const before = smtp.mails.length;
      for (const host of [`localhost:${port}`, `berth.lan:${port}`]) {
        const jar = new Jar();
        const headers = { host, origin: `http://${host}` };
        const csrf = csrfOf((await browse(named.url, jar, 'GET', '/login', undefined, headers)).text);
        expect((await browse(named.url, jar, 'POST', '/login', { _csrf: csrf, email: named.ownerEmail }, headers)).status).toBe(200);
      }
      await until('the sign-in mail', () => smtp.mails.length > before);
      await new Promise((r) => setTimeout(r, 300));
      expect(smtp.mails.slice(before).map((m) => /http:\/\/[^/\s]+\/login\/link/.exec(m.text)?.[0])).toEqual([`http://berth.lan:${port}/login/link`]);
    } finally {
      await named.stop();
    }
  });

  it('goes on only to a local page after signing in', async () => {
    for (const next of ['//evil.example/x', 'https://evil.example', '/\\evil.example']) {
      const page = await browse(s.url, new Jar(), 'GET', `/login?next=${encodeURIComponent(next)}`);
      expect(page.text).toContain('data-next=""');
    }
    const page = await browse(s.url, new Jar(), 'GET', `/login?next=${encodeURIComponent('/tokens')}`);
    expect(page.text).toContain('data-next="/tokens"');
  });
});

describe('CSRF on every form', () => {
  it('refuses each state-changing post without the token or with a wrong one, changing nothing', async () => {
    const m = await member('member');
    const tokenRow = await admin.createToken(s.db, { email: s.ownerEmail, team: String(s.rootTeamId), name: 'keep', permissions: ['read'], expires: 'never' });
    const posts: [string, Record<string, string>][] = [
      ['/tokens', { team: String(s.rootTeamId), name: 'x', expires: '7d', permissions: 'read' }],
      [`/tokens/${tokenRow.id}/revoke`, {}],
      [`/teams/${s.rootTeamId}/members/${m.id}/role`, { role: 'admin' }],
      [`/teams/${s.rootTeamId}/members/${m.id}/remove`, {}],
      ['/passkeys/abc/delete', {}],
      ['/apps/abc/revoke', {}],
      ['/logout', {}],
    ];
    const tokensBefore = await s.db.selectFrom('api_tokens').select('id').orderBy('id').execute();
    for (const [path, form] of posts) {
      expect((await browse(s.url, owner.jar, 'POST', path, form)).status, path).toBe(403);
      expect((await browse(s.url, owner.jar, 'POST', path, { ...form, _csrf: 'wrong' })).status, path).toBe(403);
      expect((await browse(s.url, owner.jar, 'POST', path, { ...form, _csrf: owner.csrf }, { origin: 'https://evil.example' })).status, path).toBe(403);
    }
    for (const path of ['/passkeys/register/options', '/login/passkey/options', '/approvals/abc/approve/options']) {
      const r = await browse(s.url, owner.jar, 'POST', path, undefined, { 'content-type': 'application/json' });
      expect(r.status, path).toBe(403);
    }
    expect(await s.db.selectFrom('api_tokens').select('id').orderBy('id').execute()).toEqual(tokensBefore);
    expect((await s.db.selectFrom('team_members').select('role').where('user_id', '=', m.id).executeTakeFirstOrThrow()).role).toBe('member');
    // Still signed in: the refused sign-out did nothing.
    expect((await browse(s.url, owner.jar, 'GET', '/tokens')).status).toBe(200);
  });
});

describe('tokens', () => {
  it('creates only in the person’s own teams, within their role, with the spec’s choices', async () => {
    const other = await s.team(`Other ${process.pid}`);
    const post = (form: Record<string, string | string[]>) => browse(s.url, owner.jar, 'POST', '/tokens', { _csrf: owner.csrf, ...form });
    const foreign = await post({ team: String(other.id), name: 'x', expires: '7d', permissions: 'read' });
    expect(foreign.status).toBe(422);
    expect(foreign.text).toContain('Choose one of your teams.');
    expect(foreign.text).not.toContain(`Other ${process.pid}`);
    expect((await post({ team: String(s.rootTeamId), name: 'x', expires: '2d', permissions: 'read' })).status).toBe(422);
    expect((await post({ team: String(s.rootTeamId), name: 'x', expires: '7d' })).status).toBe(422);
    expect((await post({ team: String(s.rootTeamId), name: '', expires: '7d', permissions: 'read' })).status).toBe(422);
    const made = await post({ team: String(s.rootTeamId), name: 'all of them', expires: 'never', permissions: ['read', 'read:sensitive', 'write', 'deploy', 'root'] });
    expect(made.status).toBe(200);
    const value = /id="token-value" class="secret">([^<]+)</.exec(made.text)![1]!;
    expect(made.headers['cache-control']).toBe('no-store');
    expect((await call(s.url, 'POST', '/api/v1/disable', { token: value })).status).toBe(200);
    expect((await call(s.url, 'POST', '/api/v1/enable', { token: value })).status).toBe(200);
  });

  it('revokes only the person’s own tokens: another’s is the same 404 as a missing one', async () => {
    const m = await member('member');
    const mine = await signInByLink(s.url, s.db, m.email);
    const ownerToken = await admin.createToken(s.db, { email: s.ownerEmail, team: String(s.rootTeamId), name: 'owner’s', permissions: ['read'], expires: 'never' });
    const theirs = await browse(s.url, mine.jar, 'POST', `/tokens/${ownerToken.id}/revoke`, { _csrf: mine.csrf });
    const missing = await browse(s.url, mine.jar, 'POST', '/tokens/999999/revoke', { _csrf: mine.csrf });
    expect(theirs.status).toBe(404);
    expect(missing.status).toBe(404);
    expect(theirs.text).toBe(missing.text);
    expect((await call(s.url, 'GET', '/api/v1/teams/current', { token: ownerToken.token })).status).toBe(200);
  });
});

describe('members', () => {
  it('an admin manages admins and members but no owner, and makes no owner; the last owner stays', async () => {
    const team = await s.team(`Crew ${process.pid}`);
    const a = await member('admin', team.id);
    const m = await member('member', team.id);
    const ownerRow = await s.db.selectFrom('users').select('id').where('email', '=', team.ownerEmail).executeTakeFirstOrThrow();
    const adminSession = await signInByLink(s.url, s.db, a.email);
    const post = (path: string, form: Record<string, string> = {}) => browse(s.url, adminSession.jar, 'POST', `/teams/${team.id}/members${path}`, { _csrf: adminSession.csrf, ...form });
    expect((await browse(s.url, adminSession.jar, 'GET', `/teams/${team.id}/members`)).status).toBe(200);
    expect((await post(`/${ownerRow.id}/role`, { role: 'member' })).status).toBe(403);
    expect((await post(`/${ownerRow.id}/remove`)).status).toBe(403);
    expect((await post(`/${m.id}/role`, { role: 'owner' })).status).toBe(403);
    expect((await post(`/${m.id}/role`, { role: 'boss' })).status).toBe(422);
    expect((await post(`/${m.id}/role`, { role: 'admin' })).status).toBe(303);
    expect((await s.db.selectFrom('team_members').select('role').where('user_id', '=', m.id).where('team_id', '=', team.id).executeTakeFirstOrThrow()).role).toBe('admin');

    const ownerSession = await signInByLink(s.url, s.db, team.ownerEmail);
    const last = await browse(s.url, ownerSession.jar, 'POST', `/teams/${team.id}/members/${ownerRow.id}/role`, { _csrf: ownerSession.csrf, role: 'admin' });
    expect(last.status).toBe(409);
    expect(last.text).toContain('A team must keep at least one owner.');
    expect((await browse(s.url, ownerSession.jar, 'POST', `/teams/${team.id}/members/${ownerRow.id}/remove`, { _csrf: ownerSession.csrf })).status).toBe(409);
  });

  it('another team’s members page is the same 404 as a missing team; a plain member gets 403', async () => {
    const team = await s.team(`Far ${process.pid}`);
    const foreign = await browse(s.url, owner.jar, 'GET', `/teams/${team.id}/members`);
    const missing = await browse(s.url, owner.jar, 'GET', '/teams/999999/members');
    expect(foreign.status).toBe(404);
    expect(missing.status).toBe(404);
    expect(foreign.text).toBe(missing.text);
    const m = await member('member');
    const ms = await signInByLink(s.url, s.db, m.email);
    expect((await browse(s.url, ms.jar, 'GET', `/teams/${s.rootTeamId}/members`)).status).toBe(403);
    expect((await browse(s.url, ms.jar, 'POST', `/teams/${s.rootTeamId}/members/${m.id}/remove`, { _csrf: ms.csrf })).status).toBe(403);
  });
});

describe('passkey challenges', () => {
  it('are kept in the store, used once, and a response that does not verify signs nobody in', async () => {
    const jar = new Jar();
    const csrf = csrfOf((await browse(s.url, jar, 'GET', '/login')).text);
    const json = { 'content-type': 'application/json', 'x-csrf-token': csrf };
    const opts = await browse(s.url, jar, 'POST', '/login/passkey/options', undefined, json);
    expect(opts.status).toBe(200);
    expect(JSON.parse(opts.text).rpId).toBe('127.0.0.1');
    expect(await s.db.selectFrom('webauthn_challenges').select('purpose').execute()).toContainEqual({ purpose: 'authenticate' });
    const bogus = { id: 'AAAA', rawId: 'AAAA', type: 'public-key', response: { clientDataJSON: 'e30', authenticatorData: 'AAAA', signature: 'AAAA' }, clientExtensionResults: {} };
    const h = { ...json, cookie: jar.header() };
    const first = await call(s.url, 'POST', '/login/passkey/verify', { body: { response: bogus }, headers: h });
    expect(first.status).toBe(400);
    expect(first.headers['set-cookie']).not.toMatch(/berth_session=[^;]/);
    expect(await s.db.selectFrom('webauthn_challenges').select('purpose').where('purpose', '=', 'authenticate').execute()).toEqual([]);
  });
});
