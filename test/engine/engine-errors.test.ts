/**
 * Failure modes of the engine client, against a small fake engine speaking the Docker API on a
 * unix socket (or TLS on loopback), where failures can be injected. No real engine needed.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { EngineClient, goFileModeToUnix, splitImageRef } from '../../src/engine/engine-client.js';
import { ConflictError, EngineError, EngineTimeoutError, EngineUnreachableError, NotFoundError } from '../../src/engine/engine-errors.js';
import { backoffDelay } from '../../src/engine/retry.js';

type Handler = (req: http.IncomingMessage, res: http.ServerResponse, body: Buffer) => void;

interface FakeEngine {
  endpoint: string;
  requests: { method: string; url: string; bodyBytes: number }[];
  /** Handles everything except /version and /_ping (unless overridden). */
  handle: Handler;
  version: { ApiVersion: string; MinAPIVersion?: string };
  close(): Promise<void>;
}

const tmp = mkdtempSync(path.join(os.tmpdir(), 'berth-fake-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const clients: EngineClient[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.destroy()));
});

function client(endpoint: string, extra: Partial<ConstructorParameters<typeof EngineClient>[0]> = {}): EngineClient {
  const c = new EngineClient({ endpoint, retry: { retries: 3, baseDelayMs: 5, maxDelayMs: 20 }, ...extra });
  clients.push(c);
  return c;
}

function json(res: http.ServerResponse, status: number, body: unknown) {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

let fakeCount = 0;
async function fakeEngine(handle: Handler = (_q, res) => json(res, 200, {})): Promise<FakeEngine> {
  const socket = path.join(tmp, `fake-${fakeCount++}.sock`);
  const fake: FakeEngine = {
    endpoint: `unix://${socket}`,
    requests: [],
    handle,
    version: { ApiVersion: '1.41', MinAPIVersion: '1.24' },
    close: () =>
      new Promise((r) => {
        server.close(() => r());
        server.closeAllConnections();
      }),
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      fake.requests.push({ method: req.method ?? '', url: req.url ?? '', bodyBytes: body.length });
      if (req.url === '/version') return json(res, 200, { Version: 'fake', ...fake.version });
      fake.handle(req, res, body);
    });
  });
  server.keepAliveTimeout = 100;
  await new Promise<void>((r) => server.listen(socket, r));
  return fake;
}

/** Requests other than the version negotiation. */
const calls = (f: FakeEngine) => f.requests.filter((r) => r.url !== '/version');

describe('unreachable engines', () => {
  it('names the endpoint when the socket does not exist', async () => {
    const endpoint = `unix://${path.join(tmp, 'nothing-here.sock')}`;
    const c = client(endpoint);
    const err = await c.ping().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EngineUnreachableError);
    expect((err as EngineUnreachableError).code).toBe('ENOENT');
    expect((err as Error).message).toContain(endpoint);
    // Also through API-version negotiation (a versioned call).
    await expect(c.inspectContainer('x')).rejects.toBeInstanceOf(EngineUnreachableError);
  });

  it('names the endpoint when a TCP port is closed', async () => {
    const port = await new Promise<number>((resolve) => {
      const s = net.createServer().listen(0, '127.0.0.1', () => {
        const p = (s.address() as net.AddressInfo).port;
        s.close(() => resolve(p));
      });
    });
    const endpoint = `tcp://127.0.0.1:${port}`;
    const err = await client(endpoint)
      .version()
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EngineUnreachableError);
    expect((err as EngineUnreachableError).code).toBe('ECONNREFUSED');
    expect((err as Error).message).toContain(endpoint);
  });

  it('rejects malformed endpoints', () => {
    expect(() => new EngineClient({ endpoint: 'ftp://x:1' })).toThrow(/unsupported scheme/);
    expect(() => new EngineClient({ endpoint: 'tcp://host' })).toThrow(/tcp:\/\/host:port/);
    expect(() => new EngineClient({ endpoint: 'unix:///x.sock', tls: {} })).toThrow(/TLS/);
  });

  it('retries negotiation on the next call after the engine comes up', async () => {
    const socket = path.join(tmp, 'late.sock');
    const c = client(`unix://${socket}`, { retry: { retries: 0 } });
    await expect(c.inspectVolume('v')).rejects.toBeInstanceOf(EngineUnreachableError);
    const server = http.createServer((req, res) => (req.url === '/version' ? json(res, 200, { ApiVersion: '1.41' }) : json(res, 200, { Name: 'v', url: req.url })));
    await new Promise<void>((r) => server.listen(socket, r));
    try {
      expect(await c.inspectVolume('v')).toMatchObject({ url: '/v1.41/volumes/v' });
    } finally {
      await c.destroy();
      await new Promise((r) => server.close(r));
    }
  });
});

describe('retries', () => {
  it('retries a GET on 503 and on a dropped connection, then succeeds', async () => {
    let n = 0;
    const fake = await fakeEngine((_req, res) => {
      n++;
      if (n === 1) return json(res, 503, { message: 'busy' });
      if (n === 2) return res.socket?.destroy();
      json(res, 200, { Id: 'abc', Name: '/x', State: { Status: 'running' } });
    });
    try {
      expect((await client(fake.endpoint).inspectContainer('x')).Id).toBe('abc');
      expect(calls(fake).map((r) => `${r.method} ${r.url}`)).toEqual(Array(3).fill('GET /v1.41/containers/x/json'));
    } finally {
      await fake.close();
    }
  });

  it('gives up after the bounded number of retries, with the last error', async () => {
    const fake = await fakeEngine((_req, res) => json(res, 503, { message: 'still busy' }));
    try {
      const err = await client(fake.endpoint)
        .listVolumes()
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(EngineError);
      expect(err).toMatchObject({ status: 503, engineMessage: 'still busy' });
      expect(calls(fake)).toHaveLength(4); // 1 + 3 retries
    } finally {
      await fake.close();
    }
  });

  it('backs off exponentially with jitter between retries', async () => {
    const times: number[] = [];
    const fake = await fakeEngine((_req, res) => {
      times.push(performance.now());
      json(res, 502, { message: 'bad gateway' });
    });
    try {
      const c = client(fake.endpoint, { retry: { retries: 3, baseDelayMs: 40, maxDelayMs: 1_000 } });
      await expect(c.listContainers()).rejects.toMatchObject({ status: 502 });
      const gaps = times.slice(1).map((t, i) => t - times[i]!);
      // Equal jitter: retry k waits between half and all of 40·2^k ms.
      expect(gaps[0]).toBeGreaterThanOrEqual(19);
      expect(gaps[1]).toBeGreaterThanOrEqual(39);
      expect(gaps[2]).toBeGreaterThanOrEqual(79);
    } finally {
      await fake.close();
    }
    for (let k = 0; k < 6; k++) {
      const opts = { retries: 6, baseDelayMs: 100, maxDelayMs: 1_000 };
      const cap = Math.min(1_000, 100 * 2 ** k);
      expect(backoffDelay(k, opts, () => 0)).toBe(cap / 2);
      expect(backoffDelay(k, opts, () => 0.999999)).toBeCloseTo(cap, -1);
    }
  });

  it('retries stop and DELETE (idempotent), treating 304 and 404 as answers', async () => {
    let stops = 0;
    let deletes = 0;
    const fake = await fakeEngine((req, res) => {
      if (req.url?.includes('/stop')) {
        stops++;
        if (stops === 1) return res.socket?.destroy();
        res.writeHead(304).end();
        return;
      }
      if (req.method === 'DELETE') {
        deletes++;
        if (deletes === 1) return json(res, 503, { message: 'busy' });
        return json(res, 404, { message: 'no such container' });
      }
      json(res, 500, { message: 'unexpected' });
    });
    try {
      const c = client(fake.endpoint);
      expect(await c.stopContainer('x', 3)).toBe('already-stopped');
      expect(stops).toBe(2);
      expect(calls(fake)[0]!.url).toBe('/v1.41/containers/x/stop?t=3');
      expect(await c.removeContainer('x')).toBe(false);
      expect(deletes).toBe(2);
      expect(await c.removeVolume('v')).toBe(false);
      expect(await c.removeNetwork('n')).toBe(false);
    } finally {
      await fake.close();
    }
  });

  it('repeats a forced removal that meets the container changing state (podman: 500 "state improper"), and only a forced one', async () => {
    let deletes = 0;
    const fake = await fakeEngine((req, res) => {
      deletes++;
      if (req.url?.includes('/containers/looping') && deletes === 1) return json(res, 500, { message: 'cannot remove container: container state improper: stopped' });
      if (req.url?.includes('/containers/looping')) return res.writeHead(204).end();
      json(res, 500, { message: 'cannot remove container: container state improper: stopped' });
    });
    try {
      const c = client(fake.endpoint);
      expect(await c.removeContainer('looping', { force: true })).toBe(true);
      expect(deletes).toBe(2);
      deletes = 0;
      await expect(c.removeContainer('plain')).rejects.toMatchObject({ status: 500 });
      expect(deletes).toBe(1);
      deletes = 0;
      // Bounded: the first try and the client's three retries.
      await expect(c.removeContainer('stuck', { force: true })).rejects.toMatchObject({ status: 500 });
      expect(deletes).toBe(4);
    } finally {
      await fake.close();
    }
  });

  it('never retries create, start, wait or an archive upload', async () => {
    const fake = await fakeEngine((req, res) => {
      if (req.url?.includes('/archive')) return res.socket?.destroy();
      if (req.url?.includes('/start')) return json(res, 503, { message: 'busy' });
      if (req.url?.includes('/wait')) return res.socket?.destroy();
      res.socket?.destroy(); // create: the answer is lost
    });
    try {
      const c = client(fake.endpoint);
      await expect(c.createContainer('n', { image: 'i' })).rejects.toBeInstanceOf(EngineUnreachableError);
      await expect(c.createVolume('v')).rejects.toBeInstanceOf(EngineUnreachableError);
      await expect(c.createNetwork('n')).rejects.toBeInstanceOf(EngineUnreachableError);
      await expect(c.startContainer('x')).rejects.toMatchObject({ status: 503 });
      await expect(c.waitContainer('x')).rejects.toBeInstanceOf(EngineError);
      await expect(c.putArchive('x', '/data', Readable.from([Buffer.alloc(4096, 1)]))).rejects.toBeInstanceOf(EngineError);
      expect(calls(fake).map((r) => `${r.method} ${r.url.split('?')[0]}`)).toEqual([
        'POST /v1.41/containers/create',
        'POST /v1.41/volumes/create',
        'POST /v1.41/networks/create',
        'POST /v1.41/containers/x/start',
        'POST /v1.41/containers/x/wait',
        'PUT /v1.41/containers/x/archive',
      ]);
    } finally {
      await fake.close();
    }
  });

  it('does not retry deterministic errors (404, 409, 500)', async () => {
    const fake = await fakeEngine((req, res) => {
      if (req.url?.includes('/volumes/missing')) return json(res, 404, { message: 'no such volume' });
      if (req.url?.includes('/volumes/busy')) return json(res, 409, { message: 'volume is in use' });
      json(res, 500, { cause: 'x', message: 'internal thing', response: 500 });
    });
    try {
      const c = client(fake.endpoint);
      const nf = await c.inspectVolume('missing').catch((e: unknown) => e);
      expect(nf).toBeInstanceOf(NotFoundError);
      expect(nf).toMatchObject({ status: 404, engineMessage: 'no such volume', endpoint: fake.endpoint });
      await expect(c.removeVolume('busy')).rejects.toBeInstanceOf(ConflictError);
      const ie = await c.inspectContainer('x').catch((e: unknown) => e);
      expect(ie).toBeInstanceOf(EngineError);
      expect((ie as Error).message).toMatch(/GET \/containers\/x\/json on engine unix:.*: 500 internal thing/);
      expect(calls(fake)).toHaveLength(3);
    } finally {
      await fake.close();
    }
  });

  it('times out a metadata call that gets no answer, and retries it only as a GET', async () => {
    const fake = await fakeEngine(() => undefined); // never answers
    try {
      const c = client(fake.endpoint, { timeouts: { metadataMs: 100 }, retry: { retries: 1, baseDelayMs: 5, maxDelayMs: 5 } });
      await expect(c.inspectContainer('x')).rejects.toBeInstanceOf(EngineTimeoutError);
      expect(calls(fake)).toHaveLength(2);
      await expect(c.startContainer('x')).rejects.toBeInstanceOf(EngineTimeoutError);
      expect(calls(fake)).toHaveLength(3);
    } finally {
      await fake.close();
    }
  });

  it('stops retrying when the caller aborts', async () => {
    const fake = await fakeEngine((_req, res) => json(res, 503, { message: 'busy' }));
    try {
      const c = client(fake.endpoint, { retry: { retries: 10, baseDelayMs: 200, maxDelayMs: 200 } });
      const ac = new AbortController();
      setTimeout(() => ac.abort(new Error('caller gave up')), 50);
      await expect(c.listVolumes({ signal: ac.signal })).rejects.toThrow('caller gave up');
      expect(calls(fake).length).toBeLessThanOrEqual(2);
    } finally {
      await fake.close();
    }
  });
});

describe('protocol details', () => {
  it('negotiates the API version: capped at the newest we speak, refused when too old', async () => {
    const fake = await fakeEngine((req, res) => json(res, 200, { Name: 'v', url: req.url }));
    try {
      fake.version = { ApiVersion: '1.52', MinAPIVersion: '1.44' };
      const c = client(fake.endpoint);
      expect(await c.apiVersion()).toBe('1.47');
      expect(await c.inspectVolume('v')).toMatchObject({ url: '/v1.47/volumes/v' });
      fake.version = { ApiVersion: '1.30', MinAPIVersion: '1.12' };
      await expect(client(fake.endpoint).inspectVolume('v')).rejects.toThrow(/older than the minimum supported 1\.40/);
      fake.version = { ApiVersion: '1.52', MinAPIVersion: '1.50' };
      await expect(client(fake.endpoint).inspectVolume('v')).rejects.toThrow(/requires API 1\.50/);
    } finally {
      await fake.close();
    }
  });

  it('demultiplexes logs split across chunks, and reads TTY logs raw', async () => {
    const frame = (type: number, text: string) => {
      const payload = Buffer.from(text);
      const h = Buffer.alloc(8);
      h[0] = type;
      h.writeUInt32BE(payload.length, 4);
      return Buffer.concat([h, payload]);
    };
    const muxed = Buffer.concat([frame(1, 'out one\nout '), frame(2, 'err one\n'), frame(1, 'two\n'), frame(2, 'no newline')]);
    const fake = await fakeEngine(async (req, res) => {
      if (req.url?.includes('/containers/tty/json')) return json(res, 200, { Id: 'tty', Config: { Tty: true } });
      if (req.url?.includes('/containers/mux/json')) return json(res, 200, { Id: 'mux', Config: { Tty: false } });
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      const body = req.url?.includes('/tty/') ? Buffer.from('raw line\nsecond\n') : muxed;
      // Dribble it out in 3-byte pieces.
      for (let i = 0; i < body.length; i += 3) {
        res.write(body.subarray(i, i + 3));
        await new Promise((r) => setImmediate(r));
      }
      res.end();
    });
    try {
      const c = client(fake.endpoint);
      expect((await c.containerLogs('mux')).entries).toEqual([
        { stream: 'stdout', line: 'out one' },
        { stream: 'stderr', line: 'err one' },
        { stream: 'stdout', line: 'out two' },
        { stream: 'stderr', line: 'no newline' },
      ]);
      expect((await c.containerLogs('tty')).entries).toEqual([
        { stream: 'stdout', line: 'raw line' },
        { stream: 'stdout', line: 'second' },
      ]);
      const capped = await c.containerLogs('tty', { tty: true, maxBytes: 5 });
      expect(capped).toEqual({ entries: [{ stream: 'stdout', line: 'raw l' }], truncated: true });
    } finally {
      await fake.close();
    }
  });

  it('reports a pull failure sent inside a 200 progress stream', async () => {
    const fake = await fakeEngine((req, res) => {
      expect(req.url).toBe('/v1.41/images/create?fromImage=registry.example%3A5000%2Fteam%2Fapp&tag=latest');
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"status":"Trying to pull"}\n');
      res.end('{"errorDetail":{"message":"manifest unknown"},"error":"manifest unknown"}\n');
    });
    try {
      await expect(client(fake.endpoint).pullImage('registry.example:5000/team/app')).rejects.toThrow(/pulling registry\.example:5000\/team\/app on engine .*failed: manifest unknown/);
    } finally {
      await fake.close();
    }
  });

  it('streams an archive upload without buffering it in the client', async () => {
    let received = 0;
    const fake = await fakeEngine((req, res, body) => {
      received = body.length;
      expect(req.headers['content-type']).toBe('application/x-tar');
      expect(req.headers['transfer-encoding']).toBe('chunked');
      res.writeHead(200).end();
    });
    try {
      let produced = 0;
      const source = Readable.from(
        (function* () {
          for (let i = 0; i < 64; i++) {
            produced += 65536;
            yield Buffer.alloc(65536, i);
          }
        })(),
      );
      await client(fake.endpoint).putArchive('x', '/data', source);
      expect(received).toBe(64 * 65536);
      expect(produced).toBe(received);
    } finally {
      await fake.close();
    }
  });

  it('parses image references and Go file modes', () => {
    expect(splitImageRef('busybox')).toEqual({ fromImage: 'busybox', tag: 'latest' });
    expect(splitImageRef('localhost:5000/a/b')).toEqual({ fromImage: 'localhost:5000/a/b', tag: 'latest' });
    expect(splitImageRef('localhost:5000/a/b:1.2')).toEqual({ fromImage: 'localhost:5000/a/b', tag: '1.2' });
    expect(splitImageRef('a/b@sha256:abc')).toEqual({ fromImage: 'a/b', tag: 'sha256:abc' });
    expect(goFileModeToUnix(2147484141)).toBe(0o755); // dir bit + 0755
    expect(goFileModeToUnix((1 << 31) | (1 << 20) | 0o777)).toBe(0o1777); // sticky /tmp
  });
});

const haveOpenssl = spawnSync('openssl', ['version'], { stdio: 'ignore' }).status === 0;

describe.skipIf(!haveOpenssl)('TCP with TLS client certificates', () => {
  const dir = path.join(tmp, 'tls');
  const pem = (n: string) => readFileSync(path.join(dir, n), 'utf8');
  let server: https.Server;
  let endpoint = '';

  beforeAll(async () => {
    const sh = (cmd: string) => execFileSync('sh', ['-c', cmd], { cwd: dir, stdio: 'pipe' });
    execFileSync('mkdir', ['-p', dir]);
    sh('openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 1 -subj /CN=test-ca');
    sh('openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr -subj /CN=localhost');
    sh(`printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\\n' > san.ext`);
    sh('openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem -days 1 -extfile san.ext');
    sh('openssl req -newkey rsa:2048 -nodes -keyout client.key -out client.csr -subj /CN=berth');
    sh('openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out client.pem -days 1');
    server = https.createServer({ key: pem('server.key'), cert: pem('server.pem'), ca: pem('ca.pem'), requestCert: true, rejectUnauthorized: true }, (req, res) => {
      if (req.url === '/_ping') return res.writeHead(200).end('OK');
      if (req.url === '/version') return json(res, 200, { ApiVersion: '1.41', Version: 'tls-fake' });
      json(res, 200, { Name: 'v', cn: (req.socket as import('node:tls').TLSSocket).getPeerCertificate().subject?.CN });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    endpoint = `tcp://localhost:${(server.address() as net.AddressInfo).port}`;
  }, 60_000);
  afterAll(() => new Promise<void>((r) => (server ? server.close(() => r()) : r())));

  it('talks to the engine with a client certificate', async () => {
    const c = client(endpoint, { tls: { ca: pem('ca.pem'), cert: pem('client.pem'), key: pem('client.key') } });
    await c.ping();
    expect(await c.inspectVolume('v')).toMatchObject({ cn: 'berth' });
  });

  it('fails as unreachable without a client certificate or with an unknown CA', async () => {
    const noCert = client(endpoint, { tls: { ca: pem('ca.pem') }, retry: { retries: 0 } });
    const e1 = await noCert.ping().catch((e: unknown) => e);
    expect(e1).toBeInstanceOf(EngineUnreachableError);
    expect((e1 as Error).message).toContain(endpoint);
    const wrongCa = client(endpoint, { tls: { cert: pem('client.pem'), key: pem('client.key') }, retry: { retries: 0 } });
    const e2 = await wrongCa.ping().catch((e: unknown) => e);
    expect(e2).toBeInstanceOf(EngineUnreachableError);
    expect((e2 as EngineUnreachableError).code).toMatch(/SELF_SIGNED|UNABLE_TO|CERT/);
  });
});
