import { describe, expect, it } from 'vitest';
import { parseCompose } from '../../src/core/compose.js';
import { interpolate, interpolateContainer, magicVariable, magicVariablesIn } from '../../src/core/compose-variables.js';
import { templateEnvironment } from '../../src/core/operations/service-templates.js';
import { BUILTIN_TEMPLATES, parseCoolifyCatalog } from '../../src/core/service-templates/catalog.js';

const UUID = 'abcdefghijklmnopqrstuvwx';

describe('built-in one-click catalog: every template is one berth runs', () => {
  it('holds at least 30 templates, names unique and as Coolify spells them, each with a description and tags', () => {
    expect(BUILTIN_TEMPLATES.length).toBeGreaterThanOrEqual(30);
    const types = BUILTIN_TEMPLATES.map((t) => t.type);
    expect(new Set(types).size).toBe(types.length);
    for (const t of BUILTIN_TEMPLATES) {
      expect(t.type).toMatch(/^[a-z0-9][a-z0-9-]*$/);
      expect(t.slogan.length, t.type).toBeGreaterThan(10);
      expect(t.tags.length, t.type).toBeGreaterThan(0);
    }
    for (const popular of ['uptime-kuma', 'n8n', 'vaultwarden', 'gitea', 'umami', 'ghost', 'minio', 'grafana', 'wordpress-with-mariadb']) expect(types, popular).toContain(popular);
  });

  for (const t of BUILTIN_TEMPLATES) {
    it(`${t.type}: parses under berth's compose rules, reaches nothing of the host, and every variable it reads is generated`, () => {
      const parsed = parseCompose(t.compose); // a 422 would throw
      expect(parsed.hostReach, t.type).toEqual([]);
      for (const k of parsed.containers) expect(k.binds, `${t.type}/${k.name}`).toEqual([]);
      const env = templateEnvironment(parsed.yaml, UUID, parsed.containers);
      // Every magic variable it names has a value: nothing unknown, nothing left empty.
      for (const v of magicVariablesIn(parsed.yaml)) expect(env[v.key], `${t.type}: ${v.key}`).toBeTruthy();
      // What the containers see: no variable read but unset, no `$` left from a reference.
      const missing = new Set<string>();
      for (const k of parsed.containers) {
        const seen = interpolateContainer(k, env, missing);
        for (const [key, value] of Object.entries(seen.environment)) expect(value, `${t.type}/${k.name} ${key}`).not.toMatch(/\$\{|\$SERVICE_/);
      }
      expect([...missing], t.type).toEqual([]);
    });
  }
});

describe('magic variables, as Coolify reads their names', () => {
  it('splits command, name and port; the longest command wins', () => {
    expect(magicVariable('SERVICE_PASSWORD_POSTGRES')).toMatchObject({ command: 'PASSWORD', name: 'POSTGRES', port: null });
    expect(magicVariable('SERVICE_PASSWORD_64_ADMIN')).toMatchObject({ command: 'PASSWORD_64', name: 'ADMIN' });
    expect(magicVariable('SERVICE_BASE64_128_KEY')).toMatchObject({ command: 'BASE64_128', name: 'KEY' });
    expect(magicVariable('SERVICE_REALBASE64_64_KEY')).toMatchObject({ command: 'REALBASE64_64', name: 'KEY' });
    expect(magicVariable('SERVICE_URL_UPTIMEKUMA_3001')).toMatchObject({ command: 'URL', name: 'UPTIMEKUMA', port: 3001 });
    expect(magicVariable('SERVICE_FQDN_APP')).toMatchObject({ command: 'FQDN', name: 'APP', port: null });
    expect(magicVariable('SERVICE_SUPABASEANON_KEY')).toBeNull();
    expect(magicVariable('POSTGRES_PASSWORD')).toBeNull();
  });

  it('generates values of the documented shapes, fresh each time', () => {
    const yaml = [
      'SERVICE_PASSWORD_A',
      'SERVICE_PASSWORD_64_B',
      'SERVICE_USER_C',
      'SERVICE_BASE64_D',
      'SERVICE_BASE64_64_E',
      'SERVICE_BASE64_128_F',
      'SERVICE_REALBASE64_G',
      'SERVICE_HEX_32_H',
      'SERVICE_PASSWORDWITHSYMBOLS_I',
      'SERVICE_URL_WEB_8080',
    ]
      .map((k) => `$${k}`)
      .join(' ');
    const parsed = parseCompose(`services:\n  web:\n    image: nginx:1\n    environment:\n      X: "${yaml}"\n`);
    const a = templateEnvironment(parsed.yaml, UUID, parsed.containers);
    const b = templateEnvironment(parsed.yaml, UUID, parsed.containers);
    expect(a.SERVICE_PASSWORD_A).toMatch(/^[A-Za-z0-9]{32}$/);
    expect(a.SERVICE_PASSWORD_64_B).toMatch(/^[A-Za-z0-9]{64}$/);
    expect(a.SERVICE_USER_C).toMatch(/^[A-Za-z0-9]{16}$/);
    expect(a.SERVICE_BASE64_D).toMatch(/^[A-Za-z0-9]{32}$/);
    expect(a.SERVICE_BASE64_64_E).toMatch(/^[A-Za-z0-9]{64}$/);
    expect(a.SERVICE_BASE64_128_F).toMatch(/^[A-Za-z0-9]{128}$/);
    expect(Buffer.from(a.SERVICE_REALBASE64_G!, 'base64').toString()).toMatch(/^[A-Za-z0-9]{32}$/);
    expect(a.SERVICE_HEX_32_H).toMatch(/^[0-9a-f]{64}$/);
    expect(a.SERVICE_PASSWORDWITHSYMBOLS_I).toMatch(/^[A-Za-z0-9!#%*+,\-.:=?@^_~]{32}$/);
    // URL and FQDN of the container on the service's network, with and without the port.
    expect(a).toMatchObject({
      SERVICE_URL_WEB: `http://${UUID}-web`,
      SERVICE_FQDN_WEB: `${UUID}-web`,
      SERVICE_URL_WEB_8080: `http://${UUID}-web:8080`,
      SERVICE_FQDN_WEB_8080: `${UUID}-web:8080`,
    });
    expect(a.SERVICE_PASSWORD_A).not.toBe(b.SERVICE_PASSWORD_A);
    expect(a.SERVICE_USER_C).not.toBe(b.SERVICE_USER_C);
  });

  it('interpolates as compose does: $$, braces, bare names, defaults, unset names', () => {
    const vars = { A: 'x', EMPTY: '' };
    const missing = new Set<string>();
    expect(interpolate('$A-${A}-$$A-$${A}', vars, missing)).toBe('x-x-$A-${A}');
    expect(interpolate('${EMPTY:-d} ${EMPTY-d} ${NOPE-d} ${A:-d} ${A:+set} ${NOPE:+set}|', vars, missing)).toBe('d  d x set |');
    expect(interpolate('postgres://$A:$A@db/$NOPE', vars, missing)).toBe('postgres://x:x@db/');
    expect([...missing]).toEqual(['NOPE']);
  });
});

describe("an operator's catalog in Coolify's service-templates.json form", () => {
  it('decodes base64 compose and reads slogan, tags, documentation and port; entries it cannot read are named', () => {
    const compose = 'services:\n  web:\n    image: nginx:1\n';
    const { templates, skipped } = parseCoolifyCatalog({
      web: { compose: Buffer.from(compose).toString('base64'), slogan: 'A web server.', tags: ['web'], documentation: 'https://example.test', port: 80, logo: 'x.svg', minversion: '0.0.0' },
      broken: { slogan: 'no compose' },
      'bad name!': { compose: Buffer.from(compose).toString('base64') },
    });
    expect(templates).toEqual([{ type: 'web', slogan: 'A web server.', tags: ['web'], documentation: 'https://example.test', port: '80', compose, source: 'operator' }]);
    expect(skipped.sort()).toEqual(['bad name!', 'broken']);
    expect(() => parseCoolifyCatalog([])).toThrow();
  });
});
