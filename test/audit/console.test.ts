import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { browse, csrfOf, Jar, signInByLink, type ConsoleSession } from '../helpers/console.js';
import { call, startTestServer, type TestServer } from '../helpers/server.js';
import { until } from '../helpers/wait.js';

/**
 * The audit log's `console` door (issue 26): each change a person makes in the console leaves
 * one entry in the change's team (the root team's for their passkeys and sign-in links), naming
 * the signed-in person and the request's address, with no token; refusals too. What the console
 * shows once (a new token, a sign-in link) and passkey material are stored nowhere in the log.
 * Forms are posted as a browser posts them (test/console/browser.test.ts drives Chromium).
 * Runs on the store BERTH_TEST_STORE names.
 */

/** A real SMTP server keeping what it receives (quoted-printable undone): where sign-in links go. */
async function startSmtp() {
  const mails: string[] = [];
  const server = new SMTPServer({
    disabledCommands: ['STARTTLS', 'AUTH'],
    authOptional: true,
    logger: false,
    onData(stream, _session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        mails.push(
          Buffer.concat(chunks)
            .toString('utf8')
            .replace(/=\r?\n/g, '')
            .replace(/=([0-9A-F]{2})/g, (_m, h: string) => String.fromCharCode(parseInt(h, 16))),
        );
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
let ownerId: number;
let other: { id: number; rootToken: string; ownerEmail: string };
/** Values that must never be stored in an entry. */
const secrets: string[] = [];

beforeAll(async () => {
  smtp = await startSmtp();
  s = await startTestServer({ smtpUrl: smtp.url });
  owner = await signInByLink(s.url, s.db, s.ownerEmail);
  ownerId = (await s.db.selectFrom('users').select('id').where('email', '=', s.ownerEmail).executeTakeFirstOrThrow()).id;
  other = await s.team('Elsewhere');
});
afterAll(async () => {
  await s?.stop();
  await smtp?.close();
});

const post = (path: string, form: Record<string, string | string[]> = {}) => browse(s.url, owner.jar, 'POST', path, { _csrf: owner.csrf, ...form });

/** The console's entries of a team as its API shows them (newest first). */
async function consoleEntries(token: string): Promise<any[]> {
  const r = await call(s.url, 'GET', '/api/v1/audit?per_page=100', { token });
  expect(r.status).toBe(200);
  return (r.json as any[]).filter((e) => e.door === 'console');
}

async function member(role: 'admin' | 'member', team = s.rootTeamId) {
  const email = `${role}-${Math.random().toString(36).slice(2, 8)}@example.test`;
  const t = await s.token({ permissions: ['read'], email, role, team });
  const u = await s.db.selectFrom('users').select('id').where('email', '=', email).executeTakeFirstOrThrow();
  return { email, id: u.id, tokenId: t.id };
}

describe('audit log: the console door', () => {
  it('a role change and a removal: one entry each, for the person who made it, from their address', async () => {
    const m = await member('member');
    const before = (await consoleEntries(s.rootToken)).length;
    expect((await post(`/teams/${s.rootTeamId}/members/${m.id}/role`, { role: 'admin' })).status).toBe(303);
    expect((await post(`/teams/${s.rootTeamId}/members/${m.id}/remove`)).status).toBe(303);
    const entries = await consoleEntries(s.rootToken);
    expect(entries.length - before).toBe(2);
    const [removed, changed] = entries;
    const common = { door: 'console', user_id: ownerId, user_email: s.ownerEmail, token_id: null, oauth_client_id: null, source_ip: '127.0.0.1', result: 'ok', status: 200 };
    expect(changed).toMatchObject({
      ...common,
      operation: 'update_team_member',
      targets: [`team:${s.rootTeamId}`, `user:${m.id}`],
      arguments: { team_id: s.rootTeamId, user_id: m.id, role: 'admin' },
    });
    expect(removed).toMatchObject({
      ...common,
      operation: 'remove_team_member',
      targets: [`team:${s.rootTeamId}`, `user:${m.id}`, `token:${m.tokenId}`],
      arguments: { team_id: s.rootTeamId, user_id: m.id },
    });
    expect(changed.duration_ms).toBeGreaterThanOrEqual(0);
  });

  it('a refused change is an entry too, after its rollback; another team never sees it', async () => {
    const m = await member('member');
    // The last owner cannot step down: refused, nothing changed, one entry with the reason.
    const refused = await post(`/teams/${s.rootTeamId}/members/${ownerId}/role`, { role: 'member' });
    expect(refused.status).toBeGreaterThanOrEqual(400);
    expect((await s.db.selectFrom('team_members').select('role').where('team_id', '=', s.rootTeamId).where('user_id', '=', ownerId).executeTakeFirstOrThrow()).role).toBe('owner');
    const [last] = await consoleEntries(s.rootToken);
    expect(last).toMatchObject({ operation: 'update_team_member', user_id: ownerId, status: refused.status, arguments: { role: 'member' } });
    expect(last.result).not.toBe('ok');

    // A team the person is not in: the same 404 as a missing one, and the entry stays in the
    // instance's own log, not in that team's.
    const theirs = await member('member', other.id);
    const probe = await post(`/teams/${other.id}/members/${theirs.id}/role`, { role: 'admin' });
    expect(probe.status).toBe(404);
    const [notFound] = await consoleEntries(s.rootToken);
    expect(notFound).toMatchObject({ operation: 'update_team_member', result: 'not_found', status: 404, user_id: ownerId, arguments: { team_id: other.id, user_id: theirs.id } });
    expect(await consoleEntries(other.rootToken)).toEqual([]);
    void m;
  });

  it('tokens made and revoked: entries in the token team, the value shown once stored nowhere', async () => {
    const made = await post('/tokens', { team: String(s.rootTeamId), name: 'from the console', expires: '7d', permissions: ['read', 'write'] });
    expect(made.status).toBe(200);
    const value = /<output id="token-value" class="secret">([^<]+)<\/output>/.exec(made.text)![1]!;
    secrets.push(value, value.split('|')[1]!);
    const id = Number(value.split('|')[0]);
    expect((await post(`/tokens/${id}/revoke`)).status).toBe(303);
    // Someone else's token: 404, and an entry of the refusal.
    const theirs = await member('member');
    expect((await post(`/tokens/${theirs.tokenId}/revoke`)).status).toBe(404);
    expect(await s.db.selectFrom('api_tokens').select('id').where('id', '=', theirs.tokenId).execute()).toHaveLength(1);

    const [refused, revoked, created] = await consoleEntries(s.rootToken);
    expect(created).toMatchObject({
      operation: 'create_token',
      result: 'ok',
      status: 201,
      user_id: ownerId,
      targets: [`token:${id}`],
      arguments: { team_id: s.rootTeamId, name: 'from the console', permissions: ['read', 'write'], expires: '7d' },
    });
    expect(revoked).toMatchObject({ operation: 'revoke_token', result: 'ok', user_id: ownerId, targets: [`token:${id}`], arguments: { id } });
    expect(refused).toMatchObject({ operation: 'revoke_token', result: 'not_found', status: 404, arguments: { id: theirs.tokenId } });

    // A refused form (root is not a member's to grant) is a validation entry; nothing is made.
    const m = await member('member');
    const session = await signInByLink(s.url, s.db, m.email);
    const tooMuch = await browse(s.url, session.jar, 'POST', '/tokens', { _csrf: session.csrf, team: String(s.rootTeamId), name: 'x', expires: '7d', permissions: ['root'] });
    expect(tooMuch.status).toBe(422);
    const [invalid] = await consoleEntries(s.rootToken);
    expect(invalid).toMatchObject({ operation: 'create_token', result: 'validation', status: 422, user_id: m.id, arguments: { permissions: ['root'] } });
  });

  it('a connected app revoked is revoke_token, in the app team, naming the client', async () => {
    const now = new Date().toISOString();
    const row = await s.db
      .insertInto('api_tokens')
      .values({
        name: 'An agent',
        user_id: ownerId,
        team_id: s.rootTeamId,
        token_hash: `unused-${Math.random()}`,
        permissions: JSON.stringify(['read']),
        expires_at: null,
        last_used_at: null,
        created_at: now,
        oauth_grant_id: 'grant-for-the-audit-test',
        oauth_client_id: 'https://agent.example.test/client.json',
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    expect((await post(`/apps/${row.id}/revoke`)).status).toBe(303);
    expect(await s.db.selectFrom('api_tokens').select('id').where('id', '=', row.id).execute()).toEqual([]);
    const [revoked] = await consoleEntries(s.rootToken);
    expect(revoked).toMatchObject({
      operation: 'revoke_token',
      result: 'ok',
      user_id: ownerId,
      targets: [`token:${row.id}`, 'oauth_client:https://agent.example.test/client.json'],
      arguments: { id: row.id },
    });
  });

  it('a passkey removed and a sign-in link issued: the root team log, no key material, no link', async () => {
    const credential = `credential-${Math.random().toString(36).slice(2)}-planted`;
    const publicKey = `public-key-${Math.random().toString(36).slice(2)}-planted`;
    secrets.push(credential, publicKey);
    await s.db
      .insertInto('passkeys')
      .values({ credential_id: credential, user_id: ownerId, name: 'old laptop', public_key: publicKey, counter: 0, transports: '[]', created_at: new Date().toISOString(), last_used_at: null })
      .execute();
    expect((await post(`/passkeys/${encodeURIComponent(credential)}/delete`)).status).toBe(303);
    const [deleted] = await consoleEntries(s.rootToken);
    expect(deleted).toMatchObject({ operation: 'delete_passkey', result: 'ok', user_id: ownerId, targets: [`user:${ownerId}`, 'passkey:old laptop'] });

    // Nobody is signed in to ask for a link: the entry names the person it is for.
    const jar = new Jar();
    const csrf = csrfOf((await browse(s.url, jar, 'GET', '/login')).text);
    expect((await browse(s.url, jar, 'POST', '/login', { _csrf: csrf, email: s.ownerEmail })).status).toBe(200);
    await until('the sign-in mail', () => smtp.mails.length >= 1);
    const token = /\/login\/link\?token=([A-Za-z0-9_-]+)/.exec(smtp.mails[0]!)![1]!;
    secrets.push(token);
    await until('the link entry', async () => (await consoleEntries(s.rootToken))[0]?.operation === 'issue_login_link');
    const [issued] = await consoleEntries(s.rootToken);
    expect(issued).toMatchObject({ result: 'ok', status: 201, user_id: ownerId, source_ip: '127.0.0.1', targets: [`user:${ownerId}`], arguments: { email: s.ownerEmail } });
    // An address with no account gets no link, and no entry.
    expect((await browse(s.url, jar, 'POST', '/login', { _csrf: csrf, email: 'nobody-at-all@example.test' })).status).toBe(200);
    await new Promise((r) => setTimeout(r, 300));
    expect((await consoleEntries(s.rootToken))[0].uuid).toBe(issued.uuid);
  });

  it('stores none of the planted or shown-once secrets in any entry', async () => {
    expect(secrets.length).toBeGreaterThanOrEqual(5);
    const text = JSON.stringify(await s.db.selectFrom('audit_log').selectAll().execute());
    for (const secret of secrets) expect(text).not.toContain(secret);
  });
});
