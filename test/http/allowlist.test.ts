import http from 'node:http';
import net from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { writeSettings } from '../../src/store/settings.js';
import { call, startTestServer, type Reply, type TestServer } from '../helpers/server.js';

/**
 * The source-address allow-list over real HTTP with real source addresses: Linux routes all of
 * 127.0.0.0/8 to loopback, so `from` binds the client socket to any of those addresses. Admin
 * calls (no `from`) come from 127.0.0.1, so every list set through the API keeps 127.0.0.1 on it;
 * each test resets the setting through the store afterwards.
 */

const NOT_ALLOWED = '{"message":"You are not allowed to access the API."}';
const invalidMsg = (e: string) => `"${e}" is not a valid IP address or CIDR range.`;

function portOf(s: TestServer): number {
  const addr = s.app.server.address();
  if (!addr || typeof addr !== 'object') throw new Error('server has no TCP address');
  return addr.port;
}

let s: TestServer;
let reader: string;

beforeAll(async () => {
  s = await startTestServer();
  reader = (await s.token({ permissions: ['read'] })).token;
});
afterAll(() => s.stop());
afterEach(() => writeSettings(s.db, { allowedIps: '', apiEnabled: true }));

async function setList(server: TestServer, value: string, base = server.url): Promise<Reply> {
  return call(base, 'PATCH', '/api/v1/settings', { token: server.rootToken, body: { allowed_ips: value } });
}

async function saved(server: TestServer, base = server.url): Promise<string> {
  const r = await call(base, 'GET', '/api/v1/settings', { token: server.rootToken });
  expect(r.status).toBe(200);
  return r.json.allowed_ips as string;
}

const current = (from: string, opts: { token?: string; headers?: Record<string, string>; base?: string } = {}) =>
  call(opts.base ?? s.url, 'GET', '/api/v1/teams/current', { token: opts.token ?? reader, from, headers: opts.headers });

async function expectAllowed(from: string, opts: Parameters<typeof current>[1] = {}): Promise<void> {
  const r = await current(from, opts);
  expect(r.status, `${from} ${JSON.stringify(opts.headers ?? {})}: ${r.text}`).toBe(200);
  expect(r.json.id).toBe(s.rootTeamId);
}

async function expectDenied(from: string, opts: Parameters<typeof current>[1] = {}): Promise<void> {
  const r = await current(from, opts);
  expect(r.status, `${from} ${JSON.stringify(opts.headers ?? {})}: ${r.text}`).toBe(403);
  expect(r.text).toBe(NOT_ALLOWED);
  expect(r.headers['content-type']).toMatch(/^application\/json/);
}

describe('allow-list over HTTP', () => {
  it('the premise: requests with `from` really leave from that loopback address', async () => {
    const echo = http.createServer((req, res) => res.end(req.socket.remoteAddress));
    await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve));
    const base = `http://127.0.0.1:${(echo.address() as net.AddressInfo).port}`;
    try {
      for (const from of ['127.0.0.2', '127.0.0.5', '127.0.1.200']) expect((await call(base, 'GET', '/', { from })).text).toBe(from);
      expect((await call(base, 'GET', '/')).text).toBe('127.0.0.1');
    } finally {
      await new Promise<void>((resolve) => echo.close(() => resolve()));
    }
  });

  it('by default (empty) every source address may call the API', async () => {
    expect(await saved(s)).toBe('');
    for (const from of ['127.0.0.1', '127.0.0.2', '127.1.2.3', '127.255.255.254']) await expectAllowed(from);
  });

  it('a listed address gets 200, an unlisted one 403 with the contract body', async () => {
    const r = await setList(s, '127.0.0.1, 127.0.0.2');
    expect(r.status).toBe(200);
    expect(r.json).toEqual({ api_enabled: true, mcp_enabled: true, allowed_ips: '127.0.0.1,127.0.0.2', audit_retention_days: 90 });

    await expectAllowed('127.0.0.2');
    await expectAllowed('127.0.0.1');
    await expectDenied('127.0.0.3');
    await expectDenied('127.0.1.2');

    // Every API route is behind it, settings included, whatever the token's permissions.
    for (const [method, path] of [
      ['GET', '/api/v1/teams'],
      ['GET', '/api/v1/settings'],
      ['PATCH', '/api/v1/settings'],
    ] as const) {
      const d = await call(s.url, method, path, { token: s.rootToken, from: '127.0.0.3', body: method === 'PATCH' ? { allowed_ips: '' } : undefined });
      expect(d.status, path).toBe(403);
      expect(d.text).toBe(NOT_ALLOWED);
    }
    // The denied PATCH changed nothing.
    expect(await saved(s)).toBe('127.0.0.1,127.0.0.2');
  });

  it('CIDR ranges admit exactly the addresses inside them', async () => {
    expect((await setList(s, '127.0.0.1, 127.0.0.4/30')).json.allowed_ips).toBe('127.0.0.1,127.0.0.4/30');
    for (const from of ['127.0.0.4', '127.0.0.5', '127.0.0.6', '127.0.0.7']) await expectAllowed(from);
    for (const from of ['127.0.0.3', '127.0.0.8', '127.0.0.2']) await expectDenied(from);

    expect((await setList(s, '127.0.0.1, 127.0.1.0/24')).json.allowed_ips).toBe('127.0.0.1,127.0.1.0/24');
    await expectAllowed('127.0.1.1');
    await expectAllowed('127.0.1.254');
    await expectDenied('127.0.2.1');
    await expectDenied('127.0.0.2');

    // Host bits in a range are ignored: 127.9.9.9/16 means 127.9.0.0/16.
    expect((await setList(s, '127.9.9.9/16, 127.0.0.1')).json.allowed_ips).toBe('127.9.0.0/16,127.0.0.1');
    await expectAllowed('127.9.200.1');
    await expectDenied('127.10.0.1');

    expect((await setList(s, '127.0.0.0/8')).json.allowed_ips).toBe('127.0.0.0/8');
    await expectAllowed('127.200.100.50');
  });

  it('empty and "0.0.0.0" allow every address again', async () => {
    const restrict = async () => {
      expect((await setList(s, '127.0.0.1')).status).toBe(200);
      await expectDenied('127.0.0.9');
    };

    await restrict();
    const empty = await setList(s, '');
    expect(empty.status).toBe(200);
    expect(empty.json.allowed_ips).toBe('');
    await expectAllowed('127.0.0.9');

    await restrict();
    const blanks = await setList(s, ' , ');
    expect(blanks.json.allowed_ips).toBe('');
    await expectAllowed('127.0.0.9');

    await restrict();
    const zero = await setList(s, '0.0.0.0');
    expect(zero.status).toBe(200);
    expect(zero.json.allowed_ips).toBe('0.0.0.0');
    await expectAllowed('127.0.0.9');
    await expectAllowed('127.3.2.1');

    await restrict();
    expect((await setList(s, '127.0.0.1, 0.0.0.0')).json.allowed_ips).toBe('0.0.0.0');
    await expectAllowed('127.0.0.9');
  });

  it('the single address 0.0.0.0/32 does not open the list to everyone', async () => {
    const r = await setList(s, '127.0.0.1, 0.0.0.0/32');
    expect(r.status).toBe(200);
    expect(r.json.allowed_ips).toBe('127.0.0.1,0.0.0.0/32');
    await expectAllowed('127.0.0.1');
    await expectDenied('127.0.0.9');
  });

  it('invalid entries give 422 naming each one, and the stored value is unchanged', async () => {
    expect((await setList(s, '127.0.0.1, 127.0.0.2')).status).toBe(200);

    const bad = ['10.0.0', '1.2.3.4/33', '::g', '010.1.1.1', 'abc', '1.2.3.4/'];
    const r = await setList(s, `127.0.0.1, ${bad.join(', ')}, ::1`);
    expect(r.status).toBe(422);
    expect(r.json).toEqual({ message: 'Validation error.', errors: { allowed_ips: bad.map(invalidMsg) } });

    // Nothing was saved half-checked, not even a field sent alongside.
    const both = await call(s.url, 'PATCH', '/api/v1/settings', { token: s.rootToken, body: { api_enabled: false, allowed_ips: '127.0.0.1, junk' } });
    expect(both.status).toBe(422);
    expect(both.json).toEqual({ message: 'Validation error.', errors: { allowed_ips: [invalidMsg('junk')] } });

    const now = await call(s.url, 'GET', '/api/v1/settings', { token: s.rootToken });
    expect(now.json).toEqual({ api_enabled: true, mcp_enabled: true, allowed_ips: '127.0.0.1,127.0.0.2', audit_retention_days: 90 });
    await expectAllowed('127.0.0.2');
    await expectDenied('127.0.0.3');

    // "0.0.0.0" does not excuse an invalid neighbour.
    const withAll = await setList(s, '0.0.0.0, 999.1.1.1');
    expect(withAll.status).toBe(422);
    expect(withAll.json.errors).toEqual({ allowed_ips: [invalidMsg('999.1.1.1')] });
    expect(await saved(s)).toBe('127.0.0.1,127.0.0.2');
  });

  it('a non-string allow-list is a 422 on the field', async () => {
    const r = await call(s.url, 'PATCH', '/api/v1/settings', { token: s.rootToken, body: { allowed_ips: ['127.0.0.1'] } });
    expect(r.status).toBe(422);
    expect(r.json.message).toBe('Validation error.');
    expect(Object.keys(r.json.errors)).toEqual(['allowed_ips']);
    expect(await saved(s)).toBe('');
  });

  it('normalizes on save: canonical forms, duplicates and redundant entries removed', async () => {
    const r = await setList(s, ' 127.0.0.0/8, 127.0.0.1, 10.1.2.3/8, 10.0.0.0/8, 192.168.1.7, ::1, 0:0:0:0:0:0:0:1, 2001:DB8::/32, 2001:db8::5 ');
    expect(r.status).toBe(200);
    expect(r.json.allowed_ips).toBe('127.0.0.0/8,10.0.0.0/8,192.168.1.7,::1,2001:db8::/32');
    expect(await saved(s)).toBe('127.0.0.0/8,10.0.0.0/8,192.168.1.7,::1,2001:db8::/32');

    expect((await setList(s, '10.0.0.0/8, 10.1.2.3, 192.168.1.7, ::1, 127.0.0.1')).json.allowed_ips).toBe('10.0.0.0/8,192.168.1.7,::1,127.0.0.1');
    // An IPv4-mapped entry is saved as the IPv4 address it carries.
    expect((await setList(s, '::ffff:127.0.0.2, 127.0.0.1')).json.allowed_ips).toBe('127.0.0.2,127.0.0.1');
    await expectAllowed('127.0.0.2');
    await expectDenied('127.0.0.3');
  });

  it('authentication comes first: an unlisted address with a bad or no token gets 401', async () => {
    expect((await setList(s, '127.0.0.1')).status).toBe(200);

    for (const token of ['1|nope', 'garbage', `999999|${'a'.repeat(48)}`]) {
      const r = await current('127.0.0.3', { token });
      expect(r.status, token).toBe(401);
      expect(r.json).toEqual({ message: 'Invalid token.' });
    }
    const none = await call(s.url, 'GET', '/api/v1/teams/current', { from: '127.0.0.3' });
    expect(none.status).toBe(401);
    expect(none.json).toEqual({ message: 'Unauthenticated.' });
    expect(none.headers['www-authenticate']).toBe('Bearer');

    // A valid token from the same address is refused by the allow-list.
    await expectDenied('127.0.0.3');
  });

  it('the API toggle comes before the allow-list, the permission check after it', async () => {
    expect((await setList(s, '127.0.0.1')).status).toBe(200);

    // A read-only token asking for a root operation from an unlisted address: the address decides.
    const r = await call(s.url, 'GET', '/api/v1/settings', { token: reader, from: '127.0.0.3' });
    expect(r.status).toBe(403);
    expect(r.text).toBe(NOT_ALLOWED);
    const listed = await call(s.url, 'GET', '/api/v1/settings', { token: reader, from: '127.0.0.1' });
    expect(listed.status).toBe(403);
    expect(listed.json).toEqual({ message: 'Missing required permissions: root', missing_permissions: ['root'] });

    await writeSettings(s.db, { apiEnabled: false });
    const off = await current('127.0.0.3');
    expect(off.status).toBe(403);
    expect(off.json).toEqual({ message: 'API is disabled.' });
  });

  it('X-Forwarded-For is ignored without TRUST_PROXY', async () => {
    expect((await setList(s, '127.0.0.1, 10.9.9.9')).status).toBe(200);
    // A forged header from an unlisted peer does not get it in...
    await expectDenied('127.0.0.6', { headers: { 'x-forwarded-for': '10.9.9.9' } });
    await expectDenied('127.0.0.6', { headers: { 'x-forwarded-for': '127.0.0.1' } });
    // ...and a listed peer is not shut out by one.
    await expectAllowed('127.0.0.1', { headers: { 'x-forwarded-for': '10.9.9.8' } });
  });
});

describe('allow-list behind a trusted proxy (TRUST_PROXY=127.0.0.5)', () => {
  let p: TestServer;
  let preader: string;
  beforeAll(async () => {
    p = await startTestServer({ trustProxy: ['127.0.0.5'] });
    preader = (await p.token({ permissions: ['read'] })).token;
  });
  afterAll(() => p.stop());

  const via = (from: string, xff?: string) => call(p.url, 'GET', '/api/v1/teams/current', { token: preader, from, headers: xff === undefined ? {} : { 'x-forwarded-for': xff } });

  it('believes X-Forwarded-For only from the trusted proxy, and only its own hop', async () => {
    const set = await setList(p, '127.0.0.1, 127.0.0.5, 10.9.9.9');
    expect(set.json.allowed_ips).toBe('127.0.0.1,127.0.0.5,10.9.9.9');

    const cases: [from: string, xff: string | undefined, status: number][] = [
      ['127.0.0.5', '10.9.9.9', 200], // the proxy forwards a listed client
      ['127.0.0.5', '10.9.9.8', 403], // a listed proxy forwarding an unlisted client
      ['127.0.0.5', '10.9.9.9, 10.9.9.8', 403], // the client's own claim is not believed; the proxy's hop is
      ['127.0.0.5', '10.9.9.8, 10.9.9.9', 200],
      ['127.0.0.5', undefined, 200], // no header: the proxy itself
      ['127.0.0.6', '10.9.9.9', 403], // not a trusted proxy: header ignored
      ['127.0.0.6', '127.0.0.5', 403],
      ['127.0.0.1', '10.9.9.8', 200], // a listed direct client: header ignored
    ];
    for (const [from, xff, status] of cases) {
      const r = await via(from, xff);
      expect(r.status, `${from} XFF=${xff}: ${r.text}`).toBe(status);
      if (status === 403) expect(r.text).toBe(NOT_ALLOWED);
    }

    await writeSettings(p.db, { allowedIps: '' });
  });
});

describe('allow-list on a dual-stack listener (host "::")', () => {
  let d: TestServer;
  let v4Base: string;
  let v6Base: string;
  let dreader: string;
  beforeAll(async () => {
    d = await startTestServer({ host: '::' });
    v4Base = `http://127.0.0.1:${portOf(d)}`;
    v6Base = `http://[::1]:${portOf(d)}`;
    dreader = (await d.token({ permissions: ['read'] })).token;
  });
  afterAll(() => d.stop());
  afterEach(() => writeSettings(d.db, { allowedIps: '' }));

  const get = (base: string, from?: string) => call(base, 'GET', '/api/v1/teams/current', { token: dreader, from });

  it('the premise: an IPv4 client of a "::" socket is seen as ::ffff:a.b.c.d', async () => {
    const srv = net.createServer();
    const seen = new Promise<string | undefined>((resolve) =>
      srv.once('connection', (c) => {
        resolve(c.remoteAddress);
        c.destroy();
      }),
    );
    await new Promise<void>((resolve) => srv.listen(0, '::', resolve));
    const port = (srv.address() as net.AddressInfo).port;
    const sock = net.connect({ host: '127.0.0.1', port, localAddress: '127.0.0.2' });
    sock.on('error', () => {});
    expect(await seen).toBe('::ffff:127.0.0.2');
    sock.destroy();
    await new Promise<void>((resolve) => srv.close(() => resolve()));
  });

  it('an IPv4-mapped client matches an IPv4 entry', async () => {
    const r = await setList(d, '127.0.0.1, 127.0.0.2', v4Base);
    expect(r.status).toBe(200);
    expect(r.json.allowed_ips).toBe('127.0.0.1,127.0.0.2');

    const ok = await get(v4Base, '127.0.0.2');
    expect(ok.status, ok.text).toBe(200);
    expect(ok.json.id).toBe(d.rootTeamId);
    const no = await get(v4Base, '127.0.0.3');
    expect(no.status).toBe(403);
    expect(no.text).toBe(NOT_ALLOWED);

    // A range too.
    expect((await setList(d, '127.0.0.0/30', v4Base)).json.allowed_ips).toBe('127.0.0.0/30');
    expect((await get(v4Base, '127.0.0.3')).status).toBe(200);
    expect((await get(v4Base, '127.0.0.4')).status).toBe(403);
  });

  it('an IPv4-mapped IPv6 entry matches the IPv4 client it names', async () => {
    expect((await setList(d, '::ffff:127.0.0.1, ::ffff:127.0.0.2', v4Base)).json.allowed_ips).toBe('127.0.0.1,127.0.0.2');
    expect((await get(v4Base, '127.0.0.2')).status).toBe(200);
    expect((await get(v4Base, '127.0.0.3')).status).toBe(403);
  });

  it('a ::1 entry admits a client connecting over [::1]; IPv4 entries do not', async () => {
    expect((await setList(d, '127.0.0.1, ::1', v4Base)).json.allowed_ips).toBe('127.0.0.1,::1');
    const ok = await get(v6Base);
    expect(ok.status, ok.text).toBe(200);
    expect(ok.json.id).toBe(d.rootTeamId);
    expect((await get(v4Base, '127.0.0.2')).status).toBe(403);

    expect((await setList(d, '127.0.0.1, ::/127', v4Base)).json.allowed_ips).toBe('127.0.0.1,::/127');
    expect((await get(v6Base)).status).toBe(200);

    expect((await setList(d, '127.0.0.0/8', v4Base)).json.allowed_ips).toBe('127.0.0.0/8');
    const no = await get(v6Base);
    expect(no.status).toBe(403);
    expect(no.text).toBe(NOT_ALLOWED);
    // The IPv4 clients are still fine.
    expect((await get(v4Base, '127.0.0.2')).status).toBe(200);
  });
});
