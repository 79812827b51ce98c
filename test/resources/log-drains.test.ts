/**
 * Log drain settings (Coolify's GET/PATCH /servers/{uuid}/log-drains) at the door: defaults,
 * Coolify's conditional requirements and field rules as 422s, the keys hidden without
 * read:sensitive, a New Relic base URI checked like every outbound target, Highlight and custom
 * Fluent Bit drains refused by name, another team's server a 404. Shipping itself is in
 * test/e2e/log-drains.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestServer, type TestServer } from '../helpers/server.js';
import { NOT_FOUND } from './support.js';

let s: TestServer;
let read: string;
let sensitive: string;
let server: string;

beforeAll(async () => {
  s = await startTestServer({ apiRateLimit: 0 });
  read = (await s.token({ permissions: ['read'] })).token;
  sensitive = (await s.token({ permissions: ['read:sensitive'] })).token;
  server = (await call(s.url, 'POST', '/api/v1/servers', { token: s.rootToken, body: { name: 'drains', ip: '10.0.0.44' } })).json.uuid;
});
afterAll(async () => {
  await s?.stop();
});

const api = (method: string, path: string, token: string, body?: unknown) => call(s.url, method, `/api/v1${path}`, { token, body });
const patch = (body: unknown, token = s.rootToken) => api('PATCH', `/servers/${server}/log-drains`, token, body);

describe('log drain settings', () => {
  it('starts with every drain off; keys saved are hidden without read:sensitive', async () => {
    expect((await api('GET', `/servers/${server}/log-drains`, s.rootToken)).json).toEqual({
      is_logdrain_newrelic_enabled: false,
      logdrain_newrelic_license_key: null,
      logdrain_newrelic_base_uri: null,
      is_logdrain_axiom_enabled: false,
      logdrain_axiom_dataset_name: null,
      logdrain_axiom_api_key: null,
      is_logdrain_custom_enabled: false,
      logdrain_custom_config: null,
      logdrain_custom_config_parser: null,
    });
    const saved = await patch({ logdrain_axiom_dataset_name: 'logs', logdrain_axiom_api_key: 'xaat-secret', logdrain_newrelic_license_key: 'nr-secret' });
    expect(saved.status, saved.text).toBe(200);
    const plain = (await api('GET', `/servers/${server}/log-drains`, read)).json;
    expect(plain).toMatchObject({ logdrain_axiom_dataset_name: 'logs', is_logdrain_axiom_enabled: false });
    for (const k of ['logdrain_axiom_api_key', 'logdrain_newrelic_license_key', 'logdrain_custom_config', 'logdrain_custom_config_parser']) expect(plain).not.toHaveProperty(k);
    expect((await api('GET', `/servers/${server}/log-drains`, sensitive)).json).toMatchObject({ logdrain_axiom_api_key: 'xaat-secret', logdrain_newrelic_license_key: 'nr-secret' });
  });

  it("enabling a drain needs its fields (Coolify's messages); a field given with it counts", async () => {
    const nr = await patch({ is_logdrain_newrelic_enabled: true });
    expect(nr.status).toBe(422);
    expect(nr.json.errors).toEqual({ logdrain_newrelic_base_uri: ['The New Relic base URI is required when New Relic log drain is enabled.'] });
    const ax = await patch({ is_logdrain_axiom_enabled: true, logdrain_axiom_api_key: null });
    expect(ax.json.errors).toEqual({ logdrain_axiom_api_key: ['The Axiom API key is required when Axiom log drain is enabled.'] });
    // Nothing of a refused change was kept.
    expect((await api('GET', `/servers/${server}/log-drains`, sensitive)).json).toMatchObject({ is_logdrain_axiom_enabled: false, logdrain_axiom_api_key: 'xaat-secret' });
    const on = await patch({ is_logdrain_axiom_enabled: true }, (await s.token({ permissions: ['write'] })).token);
    expect(on.status, on.text).toBe(200);
    expect(on.json).not.toHaveProperty('logdrain_axiom_api_key');
    expect(on.json.is_logdrain_axiom_enabled).toBe(true);
    expect((await patch({ is_logdrain_axiom_enabled: false })).json.is_logdrain_axiom_enabled).toBe(false);
  });

  it('refuses what berth cannot ship or send to, by field', async () => {
    const cases: Array<[Record<string, unknown>, string, RegExp]> = [
      [{ is_logdrain_custom_enabled: true, logdrain_custom_config: '[OUTPUT]\n    Name stdout' }, 'is_logdrain_custom_enabled', /runs no Fluent Bit/],
      [{ is_logdrain_highlight_enabled: true }, 'is_logdrain_highlight_enabled', /Highlight/],
      [{ logdrain_axiom_api_key: 'has spaces' }, 'logdrain_axiom_api_key', /letters, digits/],
      [{ logdrain_axiom_dataset_name: '../other' }, 'logdrain_axiom_dataset_name', /letters, digits/],
      [{ logdrain_newrelic_base_uri: 'ftp://log-api.newrelic.com/log/v1' }, 'logdrain_newrelic_base_uri', /http/],
      [{ logdrain_newrelic_base_uri: 'http://127.0.0.1:9/log/v1' }, 'logdrain_newrelic_base_uri', /loopback|BERTH_OUTBOUND_ALLOWED_TARGETS/],
      [{ logdrain_newrelic_base_uri: 'http://169.254.169.254/latest' }, 'logdrain_newrelic_base_uri', /metadata/],
      [{ is_logdrain_axiom_enabled: 'maybe' }, 'is_logdrain_axiom_enabled', /./],
    ];
    for (const [body, field, why] of cases) {
      const r = await patch(body);
      expect(r.status, `${JSON.stringify(body)} → ${r.text}`).toBe(422);
      expect(r.json.errors?.[field]?.join(' '), r.text).toMatch(why);
    }
    // Asking for what berth does anyway passes.
    expect((await patch({ is_logdrain_highlight_enabled: false, is_logdrain_custom_enabled: false })).status).toBe(200);
  });

  it("another team's server and a missing one are the same 404; a read token cannot change", async () => {
    const other = await s.team('Drains Other');
    for (const token of [other.rootToken]) {
      const g = await api('GET', `/servers/${server}/log-drains`, token);
      expect(g.status).toBe(404);
      expect(g.text).toBe(NOT_FOUND);
      expect((await api('PATCH', `/servers/${server}/log-drains`, token, { is_logdrain_axiom_enabled: false })).text).toBe(NOT_FOUND);
    }
    expect((await api('GET', '/servers/nosuchserver/log-drains', s.rootToken)).text).toBe(NOT_FOUND);
    expect((await patch({ logdrain_axiom_dataset_name: 'x' }, read)).status).toBe(403);
  });
});
