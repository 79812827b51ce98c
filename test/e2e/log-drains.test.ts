/**
 * Log drains on a real engine: an application printing numbered lines on stdout and stderr, a
 * server's drain turned on for Axiom and New Relic, and a stand-in for each provider that speaks
 * its ingest API (Axiom: POST /v1/datasets/{dataset}/ingest, Bearer key, a JSON array of events;
 * New Relic's Log API: the license key in X-License-Key, the detailed JSON form). Lines arrive
 * with their resource, container, stream and time; a provider that fails backs off and gets the
 * lines later while the other keeps receiving; turning the drains off stops the shipping.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enginesAvailable, useEngines } from '../helpers/engines.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { Api, deployed, ensurePrinterImage, PRINTER_IMAGE, registerEngines, sleep, until, type Platform } from './support.js';

interface Received {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: unknown;
}

/** A provider stand-in: records every POST; answers `status()` (202 unless a test says otherwise). */
async function provider(status: () => number): Promise<{ url: string; got: Received[]; close: () => Promise<void> }> {
  const got: Received[] = [];
  const server = http.createServer((req, res) => {
    let text = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (text += c));
    req.on('end', () => {
      const code = status();
      if (code < 300) got.push({ path: req.url ?? '', headers: req.headers, body: JSON.parse(text) });
      res.writeHead(code, { 'content-type': 'application/json' }).end(code < 300 ? '{}' : '{"message":"unavailable"}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, got, close: () => new Promise((r) => server.close(() => r())) };
}

type AxiomEvent = { _time: string; message: string; stream: string; container: string; resource_uuid: string; resource_name: string; server_name: string };
type NewRelicBlock = { common: { attributes: Record<string, string> }; logs: Array<{ timestamp: number; message: string; attributes: Record<string, string> }> };

describe.skipIf(!enginesAvailable)('log drains on a real engine', () => {
  const engines = useEngines();
  let s: TestServer;
  let api: Api;
  let p: Platform;
  let app: string;
  let axiomStatus = 200;
  let axiom: Awaited<ReturnType<typeof provider>>;
  let newrelic: Awaited<ReturnType<typeof provider>>;

  const axiomEvents = () => axiom.got.flatMap((g) => g.body as AxiomEvent[]);
  const nrLogs = () => newrelic.got.flatMap((g) => (g.body as NewRelicBlock[]).flatMap((b) => b.logs));
  const numbers = (messages: string[], prefix: string) => messages.filter((m) => m.startsWith(prefix)).map((m) => Number(m.slice(prefix.length)));

  beforeAll(async () => {
    ensurePrinterImage(engines);
    axiom = await provider(() => axiomStatus);
    newrelic = await provider(() => 202);
    s = await startTestServer(
      { helperImage: engines.image, watchLeaseMs: 900, logDrains: { axiomApiUrl: axiom.url, scanMs: 300, flushMs: 300 } },
      { API_RATE_LIMIT: '0', BERTH_OUTBOUND_ALLOWED_TARGETS: '127.0.0.1' },
    );
    api = new Api(s.url, s.rootToken);
    p = await registerEngines(api, engines);
    const [repo, tag] = PRINTER_IMAGE.split(':');
    app = (
      await api.ok('POST', '/applications/dockerimage', {
        project_uuid: p.project,
        server_uuid: p.serverA,
        destination_uuid: p.destA,
        environment_name: 'production',
        name: 'printer',
        docker_registry_image_name: repo,
        docker_registry_image_tag: tag,
      })
    ).uuid;
    await deployed(api, (await api.ok('POST', `/deploy?uuid=${app}`)).deployments[0].deployment_uuid);
  }, 120_000);

  afterAll(async () => {
    if (app) await api.req('DELETE', `/applications/${app}`).catch(() => undefined);
    if (app) await until('deleted', async () => ((await api.req('GET', `/applications/${app}`)).status === 404 ? true : undefined), 30_000).catch(() => undefined);
    await s?.stop();
    await axiom?.close();
    await newrelic?.close();
  });

  it('ships new lines to Axiom and New Relic by their ingest APIs, each with its resource, container, stream and time', async () => {
    const on = await api.ok('PATCH', `/servers/${p.serverA}/log-drains`, {
      is_logdrain_axiom_enabled: true,
      logdrain_axiom_dataset_name: 'berth-e2e',
      logdrain_axiom_api_key: 'xaat-test-key',
      is_logdrain_newrelic_enabled: true,
      logdrain_newrelic_base_uri: `${newrelic.url}/log/v1`,
      logdrain_newrelic_license_key: 'nr-license-123',
    });
    expect(on).toMatchObject({ is_logdrain_axiom_enabled: true, is_logdrain_newrelic_enabled: true, logdrain_axiom_api_key: 'xaat-test-key' });

    await until('stdout and stderr lines at Axiom', async () => (axiomEvents().some((e) => e.stream === 'stderr') && axiomEvents().some((e) => e.stream === 'stdout') ? true : undefined), 20_000);
    const a = axiom.got[0]!;
    expect(a.path).toBe('/v1/datasets/berth-e2e/ingest');
    expect(a.headers.authorization).toBe('Bearer xaat-test-key');
    expect(a.headers['content-type']).toBe('application/json');
    const e = axiomEvents().find((x) => x.message.startsWith('drain-out '))!;
    expect(e).toMatchObject({ stream: 'stdout', container: app, resource_uuid: app, resource_name: 'printer', server_name: 'engine-a' });
    expect(Number.isNaN(Date.parse(e._time))).toBe(false);
    expect(axiomEvents().find((x) => x.message.startsWith('drain-err '))).toMatchObject({ stream: 'stderr', resource_uuid: app });
    // Only the lines said after the drain was turned on, each once, in order.
    const outs = numbers(
      axiomEvents().map((x) => x.message),
      'drain-out ',
    );
    expect(new Set(outs).size).toBe(outs.length);
    expect(outs).toEqual([...outs].sort((x, y) => x - y));

    await until('lines at New Relic', async () => (nrLogs().length >= 2 ? true : undefined), 20_000);
    const n = newrelic.got[0]!;
    expect(n.path).toBe('/log/v1');
    expect(n.headers['x-license-key']).toBe('nr-license-123');
    expect((n.body as NewRelicBlock[])[0]!.common.attributes.server_name).toBe('engine-a');
    const log = nrLogs().find((x) => x.message.startsWith('drain-'))!;
    expect(typeof log.timestamp).toBe('number');
    expect(log.attributes).toMatchObject({ resource_uuid: app, resource_name: 'printer', container: app });
    // berth's own secrets never travel: no record carries the keys.
    expect(JSON.stringify(newrelic.got.map((g) => g.body))).not.toContain('xaat-test-key');
    expect(JSON.stringify(axiom.got.map((g) => g.body))).not.toContain('nr-license-123');
  }, 60_000);

  it('a failing provider backs off and gets the lines later; the other keeps receiving meanwhile', async () => {
    axiomStatus = 503;
    const nrBefore = nrLogs().length;
    const axiomBefore = axiomEvents().length;
    const lastOut = Math.max(
      ...numbers(
        axiomEvents().map((x) => x.message),
        'drain-out ',
      ),
    );
    await sleep(2_500);
    expect(axiomEvents().length).toBe(axiomBefore);
    expect(nrLogs().length).toBeGreaterThan(nrBefore);
    axiomStatus = 200;
    // What was said while Axiom failed arrives once it answers again (backoff: seconds).
    await until(
      'the lines held back reach Axiom',
      async () =>
        numbers(
          axiomEvents().map((x) => x.message),
          'drain-out ',
        ).includes(lastOut + 4)
          ? true
          : undefined,
      30_000,
    );
    const outs = numbers(
      axiomEvents().map((x) => x.message),
      'drain-out ',
    );
    for (let i = lastOut; i <= lastOut + 4; i++) expect(outs).toContain(i);
    expect(new Set(outs).size).toBe(outs.length);
  }, 60_000);

  it('a container the engine restarts is followed again from where it was left: no line twice', async () => {
    const before = axiomEvents().length;
    const ones = axiomEvents().filter((e) => e.message === 'drain-out 1').length;
    // Straight through the engine (not berth): the same container, its output continuing in the same log.
    engines.podman('a', ['restart', '-t', '1', app]);
    // The printer counts from 1 again: its lines after the restart are told apart by their count.
    await until(
      'lines after the restart',
      async () =>
        axiomEvents()
          .slice(before)
          .some((e) => e.message === 'drain-out 2')
          ? true
          : undefined,
      30_000,
    );
    const keys = axiomEvents().map((e) => `${e._time}|${e.stream}|${e.message}`);
    expect(new Set(keys).size).toBe(keys.length);
    expect(axiomEvents().filter((e) => e.message === 'drain-out 1')).toHaveLength(ones + 1);
  }, 60_000);

  it('turning the drains off stops the shipping', async () => {
    const off = await api.ok('PATCH', `/servers/${p.serverA}/log-drains`, { is_logdrain_axiom_enabled: false, is_logdrain_newrelic_enabled: false });
    expect(off).toMatchObject({ is_logdrain_axiom_enabled: false, is_logdrain_newrelic_enabled: false, logdrain_axiom_dataset_name: 'berth-e2e' });
    // One scan and one flush later nothing more is sent, while the application keeps printing.
    await sleep(1_500);
    const a = axiom.got.length;
    const n = newrelic.got.length;
    await sleep(2_500);
    expect(axiom.got.length).toBe(a);
    expect(newrelic.got.length).toBe(n);
  }, 30_000);
});
