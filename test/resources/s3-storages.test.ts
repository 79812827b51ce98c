/**
 * S3 storages (Coolify's /s3-storages): CRUD with keys redacted, endpoints checked like every
 * outbound target, and validate against an S3 stand-in on loopback that checks AWS Signature V4
 * itself (its own implementation of the canonical request, not the one berth uses) and answers
 * with S3's XML: a listing, NoSuchBucket, InvalidAccessKeyId, SignatureDoesNotMatch.
 */
import { createHash, createHmac } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestServer, type TestServer } from '../helpers/server.js';
import { NOT_FOUND } from './support.js';

const KEYS: Record<string, string> = { AKIDBERTHTEST: 'berth-secret-key' };
const BUCKETS = new Set(['berth-backups']);
let s: TestServer;
let s3: http.Server;
let endpoint: string;
let read: string;
let sensitive: string;
const seen: string[] = [];

const hmac = (key: Buffer | string, data: string) => createHmac('sha256', key).update(data).digest();
const sha256 = (data: string) => createHash('sha256').update(data).digest('hex');
const enc = (v: string) => encodeURIComponent(v).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

/** Signature V4 as AWS documents it, for a GET without a body. */
function verify(req: http.IncomingMessage): 'ok' | 'InvalidAccessKeyId' | 'SignatureDoesNotMatch' {
  const m = /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/s3\/aws4_request, ?SignedHeaders=([^,]+), ?Signature=([0-9a-f]{64})$/.exec(String(req.headers.authorization));
  if (!m) return 'SignatureDoesNotMatch';
  const [, key, day, region, signed, signature] = m;
  const secret = KEYS[key!];
  if (!secret) return 'InvalidAccessKeyId';
  const url = new URL(req.url!, 'http://x');
  const query = [...url.searchParams]
    .map(([k, v]) => `${enc(k)}=${enc(v)}`)
    .sort()
    .join('&');
  const headers = signed!
    .split(';')
    .map((h) => `${h}:${String(req.headers[h]).trim()}\n`)
    .join('');
  const payload = String(req.headers['x-amz-content-sha256'] ?? sha256(''));
  const canonical = ['GET', url.pathname, query, headers, signed, payload].join('\n');
  const scope = `${day}/${region}/s3/aws4_request`;
  const toSign = ['AWS4-HMAC-SHA256', String(req.headers['x-amz-date']), scope, sha256(canonical)].join('\n');
  const k = hmac(hmac(hmac(hmac(`AWS4${secret}`, day!), region!), 's3'), 'aws4_request');
  return hmac(k, toSign).toString('hex') === signature ? 'ok' : 'SignatureDoesNotMatch';
}

const xmlError = (code: string) => `<?xml version="1.0" encoding="UTF-8"?><Error><Code>${code}</Code><Message>${code}</Message></Error>`;

beforeAll(async () => {
  s3 = http.createServer((req, res) => {
    seen.push(`${req.method} ${req.url}`);
    const check = verify(req);
    if (check !== 'ok') return res.writeHead(403, { 'content-type': 'application/xml' }).end(xmlError(check));
    const bucket = decodeURIComponent(new URL(req.url!, 'http://x').pathname.split('/')[1] ?? '');
    if (!BUCKETS.has(bucket)) return res.writeHead(404, { 'content-type': 'application/xml' }).end(xmlError('NoSuchBucket'));
    res
      .writeHead(200, { 'content-type': 'application/xml' })
      .end(`<?xml version="1.0" encoding="UTF-8"?><ListBucketResult><Name>${bucket}</Name><KeyCount>0</KeyCount><MaxKeys>1</MaxKeys><IsTruncated>false</IsTruncated></ListBucketResult>`);
    return undefined;
  });
  await new Promise<void>((r) => s3.listen(0, '127.0.0.1', r));
  endpoint = `http://127.0.0.1:${(s3.address() as AddressInfo).port}`;
  s = await startTestServer({ apiRateLimit: 0 }, { BERTH_OUTBOUND_ALLOWED_TARGETS: '127.0.0.1' });
  read = (await s.token({ permissions: ['read'] })).token;
  sensitive = (await s.token({ permissions: ['read:sensitive'] })).token;
});
afterAll(async () => {
  await s?.stop();
  await new Promise((r) => s3?.close(r));
});

const api = (method: string, path: string, token: string, body?: unknown) => call(s.url, method, `/api/v1${path}`, { token, body });
const good = () => ({ name: 'backups', endpoint, bucket: 'berth-backups', region: 'us-east-1', key: 'AKIDBERTHTEST', secret: 'berth-secret-key' });

describe('s3 storages', () => {
  it('create → 201 {uuid}; get and list hide key and secret without read:sensitive', async () => {
    const c = await api('POST', '/s3-storages', s.rootToken, good());
    expect(c.status).toBe(201);
    const uuid = c.json.uuid as string;
    const plain = (await api('GET', `/s3-storages/${uuid}`, read)).json;
    expect(plain).toMatchObject({ uuid, name: 'backups', endpoint, bucket: 'berth-backups', region: 'us-east-1', is_usable: false, team_id: s.rootTeamId });
    expect(plain).not.toHaveProperty('key');
    expect(plain).not.toHaveProperty('secret');
    expect((await api('GET', '/s3-storages', read)).json.find((x: { uuid: string }) => x.uuid === uuid)).not.toHaveProperty('secret');
    expect((await api('GET', `/s3-storages/${uuid}`, sensitive)).json).toMatchObject({ key: 'AKIDBERTHTEST', secret: 'berth-secret-key' });
  });

  it('validate lists the bucket with a V4 signature; a wrong secret, an unknown key or bucket says which', async () => {
    const { uuid } = (await api('POST', '/s3-storages', s.rootToken, good())).json;
    const v = await api('POST', `/s3-storages/${uuid}/validate`, s.rootToken);
    expect(v.status).toBe(200);
    expect(v.json).toEqual({ valid: true, message: 'S3 storage connection is valid.' });
    expect(seen.at(-1)).toBe('GET /berth-backups?list-type=2&max-keys=1');
    expect((await api('GET', `/s3-storages/${uuid}`, read)).json.is_usable).toBe(true);

    for (const [patch, why] of [
      [{ secret: 'not-the-secret' }, /secret key does not match/],
      [{ key: 'AKIDUNKNOWN' }, /access key is not known/],
      [{ bucket: 'no-such-bucket' }, /bucket does not exist/],
    ] as const) {
      const { uuid: u } = (await api('POST', '/s3-storages', s.rootToken, { ...good(), ...patch })).json;
      const r = await api('POST', `/s3-storages/${u}/validate`, s.rootToken);
      expect(r.json.valid).toBe(false);
      expect(r.json.message).toMatch(why);
      expect((await api('GET', `/s3-storages/${u}`, read)).json.is_usable).toBe(false);
    }
  });

  it('PATCH to another bucket clears is_usable until validated again; delete → gone', async () => {
    const { uuid } = (await api('POST', '/s3-storages', s.rootToken, good())).json;
    await api('POST', `/s3-storages/${uuid}/validate`, s.rootToken);
    const p = await api('PATCH', `/s3-storages/${uuid}`, s.rootToken, { bucket: 'other-bucket', description: 'moved' });
    expect(p.status).toBe(200);
    expect((await api('GET', `/s3-storages/${uuid}`, read)).json).toMatchObject({ bucket: 'other-bucket', description: 'moved', is_usable: false });
    expect((await api('DELETE', `/s3-storages/${uuid}`, s.rootToken)).json).toEqual({ message: 'S3 storage deleted.' });
    expect((await api('GET', `/s3-storages/${uuid}`, read)).text).toBe(NOT_FOUND);
  });

  it('refuses metadata, link-local and private endpoints, bad bucket names and unknown fields; nothing is created', async () => {
    const before = (await api('GET', '/s3-storages', read)).json.length;
    for (const [patch, field] of [
      [{ endpoint: 'http://169.254.169.254' }, 'endpoint'],
      [{ endpoint: 'http://192.168.1.10:9000' }, 'endpoint'],
      [{ endpoint: 'file:///etc' }, 'endpoint'],
      // What URL parsers read differently (issue 22).
      [{ endpoint: 'http://s3.example.test\\@127.0.0.1:9000' }, 'endpoint'],
      [{ endpoint: 'http://s3.example.test@192.168.1.10:9000' }, 'endpoint'],
      [{ endpoint: 'http://s3.example.test%2f.192.168.1.10:9000' }, 'endpoint'],
      [{ endpoint: 'http://0xc0a8010a:9000' }, 'endpoint'],
      [{ bucket: 'Upper_Case' }, 'bucket'],
      [{ bucket: '10.0.0.1' }, 'bucket'],
      [{ acl: 'public' }, 'acl'],
    ] as const) {
      const r = await api('POST', '/s3-storages', s.rootToken, { ...good(), ...patch });
      expect(r.status, JSON.stringify(patch)).toBe(422);
      expect(Object.keys(r.json.errors)).toContain(field);
    }
    const { secret: _secret, ...missing } = good();
    expect((await api('POST', '/s3-storages', s.rootToken, missing)).json.errors).toHaveProperty('secret');
    expect((await api('GET', '/s3-storages', read)).json.length).toBe(before);
  });

  it("another team's storage is the same 404 as a missing one, for every operation; a read token cannot write", async () => {
    const { uuid } = (await api('POST', '/s3-storages', s.rootToken, good())).json;
    const other = await s.team('s3-neighbour');
    for (const [m, p] of [
      ['GET', `/s3-storages/${uuid}`],
      ['PATCH', `/s3-storages/${uuid}`],
      ['DELETE', `/s3-storages/${uuid}`],
      ['POST', `/s3-storages/${uuid}/validate`],
    ] as const) {
      const r = await api(m, p, other.rootToken, m === 'PATCH' ? { name: 'stolen' } : undefined);
      expect(r.status, `${m} ${p}`).toBe(404);
      expect(r.text).toBe(NOT_FOUND);
    }
    expect((await api('GET', '/s3-storages', other.rootToken)).json).toEqual([]);
    expect((await api('POST', '/s3-storages', read, good())).status).toBe(403);
  });
});
