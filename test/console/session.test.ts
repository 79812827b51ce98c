import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issueLoginLink } from '../../src/auth/login-links.js';
import { secretHash } from '../../src/auth/secrets.js';
import * as admin from '../../src/core/admin.js';
import { browse, csrfOf, Jar, signInByLink } from '../helpers/console.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

let s: TestServer;
let other: TestServer;

beforeAll(async () => {
  s = await startTestServer();
  // The same berth behind an https public URL: cookies must be Secure there.
  other = await startTestServer({ publicUrl: 'https://berth.example.test' });
});
afterAll(async () => {
  await s?.stop();
  await other?.stop();
});

const sessionCookie = (jar: Jar) => jar.cookies.get('berth_session');

describe('sign-in by login link', () => {
  it('signs in once; the cookie is http-only, SameSite=Lax, expiring; the link cannot be used again', async () => {
    const link = await issueLoginLink(s.db, s.ownerEmail);
    const jar = new Jar();
    const page = await browse(s.url, jar, 'GET', `/login/link?token=${link.token}`);
    expect(page.status).toBe(200);
    const csrf = csrfOf(page.text);
    const done = await browse(s.url, jar, 'POST', '/login/link', { _csrf: csrf, token: link.token });
    expect(done.status).toBe(303);
    expect(done.headers.location).toBe('/passkeys?setup=1');
    const setCookie = ([] as string[]).concat(done.headers['set-cookie'] as string[]).find((c) => c.startsWith('berth_session='))!;
    expect(setCookie).toMatch(/HttpOnly/);
    expect(setCookie).toMatch(/SameSite=Lax/);
    expect(setCookie).toMatch(/Path=\//);
    expect(setCookie).toMatch(/Max-Age=43200/);
    expect(setCookie).not.toMatch(/Secure/);
    // Only the id's hash is in the store.
    const id = sessionCookie(jar)!;
    const rows = await s.db.selectFrom('console_sessions').select('id_hash').execute();
    expect(rows.map((r) => r.id_hash)).toContain(secretHash(id));
    expect(rows.map((r) => r.id_hash)).not.toContain(id);

    const tokens = await browse(s.url, jar, 'GET', '/passkeys');
    expect(tokens.status).toBe(200);
    expect(tokens.text).toContain(s.ownerEmail);

    // Used: refused, whether opened or posted again, with or without a session.
    const again = new Jar();
    const reopened = await browse(s.url, again, 'GET', `/login/link?token=${link.token}`);
    expect(reopened.status).toBe(400);
    const reposted = await browse(s.url, again, 'POST', '/login/link', { _csrf: csrfOf(reopened.text), token: link.token });
    expect(reposted.status).toBe(400);
    expect(sessionCookie(again)).toBeUndefined();
  });

  it('two racing uses of one link sign in exactly once', async () => {
    const link = await issueLoginLink(s.db, s.ownerEmail);
    const jars = [new Jar(), new Jar(), new Jar(), new Jar()];
    const csrfs = await Promise.all(jars.map(async (j) => csrfOf((await browse(s.url, j, 'GET', '/login')).text)));
    const results = await Promise.all(jars.map((j, i) => browse(s.url, j, 'POST', '/login/link', { _csrf: csrfs[i]!, token: link.token })));
    expect(results.map((r) => r.status).sort()).toEqual([303, 400, 400, 400]);
  });

  it('refuses an expired link', async () => {
    const link = await issueLoginLink(s.db, s.ownerEmail);
    await s.db
      .updateTable('login_links')
      .set({ expires_at: new Date(Date.now() - 1000).toISOString() })
      .where('token_hash', '=', secretHash(link.token))
      .execute();
    const jar = new Jar();
    const page = await browse(s.url, jar, 'GET', `/login/link?token=${link.token}`);
    expect(page.status).toBe(400);
    const post = await browse(s.url, jar, 'POST', '/login/link', { _csrf: csrfOf(page.text), token: link.token });
    expect(post.status).toBe(400);
    expect(sessionCookie(jar)).toBeUndefined();
  });

  it('a link is worth nothing without the form token (CSRF), and the link survives the refusal', async () => {
    const link = await issueLoginLink(s.db, s.ownerEmail);
    const jar = new Jar();
    const page = await browse(s.url, jar, 'GET', `/login/link?token=${link.token}`);
    expect((await browse(s.url, jar, 'POST', '/login/link', { token: link.token })).status).toBe(403);
    expect((await browse(s.url, jar, 'POST', '/login/link', { _csrf: 'x'.repeat(43), token: link.token })).status).toBe(403);
    // A token from another browser's cookie does not fit this one.
    const stranger = new Jar();
    const strangerCsrf = csrfOf((await browse(s.url, stranger, 'GET', '/login')).text);
    expect((await browse(s.url, jar, 'POST', '/login/link', { _csrf: strangerCsrf, token: link.token })).status).toBe(403);
    // Another site's page posting here is refused by its Origin, even with the right token.
    expect((await browse(s.url, jar, 'POST', '/login/link', { _csrf: csrfOf(page.text), token: link.token }, { origin: 'https://evil.example' })).status).toBe(403);
    expect((await browse(s.url, jar, 'POST', '/login/link', { _csrf: csrfOf(page.text), token: link.token }, { origin: s.url })).status).toBe(303);
  });
});

describe('sessions', () => {
  it('sign-out deletes the session: the old cookie no longer signs in', async () => {
    const session = await signInByLink(s.url, s.db, s.ownerEmail);
    const id = sessionCookie(session.jar)!;
    expect((await browse(s.url, session.jar, 'POST', '/logout', {})).status).toBe(403);
    const out = await browse(s.url, session.jar, 'POST', '/logout', { _csrf: session.csrf });
    expect(out.status).toBe(303);
    expect(await s.db.selectFrom('console_sessions').select('id_hash').where('id_hash', '=', secretHash(id)).executeTakeFirst()).toBeUndefined();
    const replay = new Jar();
    replay.cookies.set('berth_session', id);
    const page = await browse(s.url, replay, 'GET', '/passkeys');
    expect(page.status).toBe(303);
    expect(page.headers.location).toBe('/login?next=%2Fpasskeys');
  });

  it('an expired session is signed out', async () => {
    const session = await signInByLink(s.url, s.db, s.ownerEmail);
    const hash = secretHash(sessionCookie(session.jar)!);
    await s.db
      .updateTable('console_sessions')
      .set({ expires_at: new Date(Date.now() - 1000).toISOString() })
      .where('id_hash', '=', hash)
      .execute();
    const page = await browse(s.url, session.jar, 'GET', '/passkeys');
    expect(page.status).toBe(303);
    expect(await s.db.selectFrom('console_sessions').select('id_hash').where('id_hash', '=', hash).executeTakeFirst()).toBeUndefined();
  });

  it('a planted or unknown session cookie is ignored, and signing in replaces it', async () => {
    const jar = new Jar();
    jar.cookies.set('berth_session', 'planted-by-someone');
    expect((await browse(s.url, jar, 'GET', '/passkeys')).status).toBe(303);
  });

  it('a user removed from berth loses their sessions', async () => {
    const email = `gone-${process.pid}@example.test`;
    const u = await admin.createUser(s.db, { email });
    const session = await signInByLink(s.url, s.db, email);
    await s.db.deleteFrom('users').where('id', '=', u.id).execute();
    expect((await browse(s.url, session.jar, 'GET', '/passkeys')).status).toBe(303);
  });

  it('over https (public URL) the cookies are Secure and __Host- prefixed', async () => {
    const link = await issueLoginLink(other.db, other.ownerEmail);
    const jar = new Jar();
    const page = await browse(other.url, jar, 'GET', `/login/link?token=${link.token}`);
    expect([...jar.cookies.keys()]).toEqual(['__Host-berth_csrf']);
    const done = await browse(other.url, jar, 'POST', '/login/link', { _csrf: csrfOf(page.text), token: link.token });
    expect(done.status).toBe(303);
    const line = ([] as string[]).concat(done.headers['set-cookie'] as string[]).find((c) => c.startsWith('__Host-berth_session='))!;
    expect(line).toMatch(/; Secure/);
    expect(line).toMatch(/HttpOnly/);
  });
});

describe('every console answer', () => {
  it('carries a strict CSP and no-store', async () => {
    const page = await browse(s.url, new Jar(), 'GET', '/login');
    expect(page.headers['content-security-policy']).toContain("script-src 'self'");
    expect(page.headers['content-security-policy']).not.toContain('unsafe-inline');
    expect(page.headers['cache-control']).toBe('no-store');
    expect(page.headers['referrer-policy']).toBe('same-origin');
    expect(page.text).not.toMatch(/<script(?![^>]*\bsrc=)/);
    expect(page.text).not.toMatch(/\son[a-z]+=/);
  });

  it('escapes what people typed', async () => {
    const jar = new Jar();
    const csrf = csrfOf((await browse(s.url, jar, 'GET', '/login')).text);
    const page = await browse(s.url, jar, 'POST', '/login', { _csrf: csrf, email: '<script>x</script>@example.test' });
    expect(page.status).toBe(200);
    expect(page.text).toContain('&lt;script&gt;x&lt;/script&gt;@example.test');
    expect(page.text).not.toContain('<script>x');
  });
});
