/**
 * Cloud-init scripts (Coolify's /cloud-init-scripts): a shell script or cloud-config YAML, checked
 * when saved, its text redacted without read:sensitive, scoped to the team like everything else.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NOT_FOUND, setup, type Ctx } from './support.js';

let c: Ctx;
beforeAll(async () => {
  c = await setup();
});
afterAll(() => c.stop());

describe('cloud-init scripts', () => {
  it('create → 201 with the script; read tokens see the name, not the text', async () => {
    const r = await c.api('POST', '/cloud-init-scripts', c.readWrite, { name: 'docker host', script: '#cloud-config\npackages:\n  - docker.io\n' });
    expect(r.status).toBe(201);
    expect(r.json).toMatchObject({ uuid: expect.any(String), name: 'docker host' });
    expect(r.json).not.toHaveProperty('script');
    const got = (await c.api('GET', `/cloud-init-scripts/${r.json.uuid}`, c.sensitive)).json;
    expect(got.script).toBe('#cloud-config\npackages:\n  - docker.io\n');
    expect((await c.api('GET', '/cloud-init-scripts', c.read)).json.find((x: { uuid: string }) => x.uuid === r.json.uuid)).not.toHaveProperty('script');
  });

  it('accepts a #! script or YAML without the header; refuses broken YAML, empty patches and unknown fields, changing nothing', async () => {
    expect((await c.api('POST', '/cloud-init-scripts', c.write, { name: 'sh', script: '#!/bin/sh\nset -e\n{ broken: yaml' })).status).toBe(201);
    expect((await c.api('POST', '/cloud-init-scripts', c.write, { name: 'bare', script: 'runcmd:\n  - echo hi\n' })).status).toBe(201);
    const before = (await c.api('GET', '/cloud-init-scripts', c.read)).json.length;
    const bad = await c.api('POST', '/cloud-init-scripts', c.write, { name: 'bad', script: '#cloud-config\nusers: [\n' });
    expect(bad.status).toBe(422);
    expect(bad.json.errors.script[0]).toMatch(/valid cloud-config YAML/);
    expect((await c.api('POST', '/cloud-init-scripts', c.write, { name: 'x', script: '#!/bin/sh', runs: true })).status).toBe(422);
    expect((await c.api('GET', '/cloud-init-scripts', c.read)).json.length).toBe(before);
    const { uuid } = (await c.api('POST', '/cloud-init-scripts', c.write, { name: 'p', script: '#!/bin/sh\n' })).json;
    expect((await c.api('PATCH', `/cloud-init-scripts/${uuid}`, c.write, {})).status).toBe(422);
    expect((await c.api('PATCH', `/cloud-init-scripts/${uuid}`, c.write, { script: 'a: [' })).status).toBe(422);
    const p = await c.api('PATCH', `/cloud-init-scripts/${uuid}`, c.write, { name: 'renamed' });
    expect(p.status).toBe(200);
    expect((await c.api('GET', `/cloud-init-scripts/${uuid}`, c.sensitive)).json).toMatchObject({ name: 'renamed', script: '#!/bin/sh\n' });
    expect((await c.api('DELETE', `/cloud-init-scripts/${uuid}`, c.write)).json).toEqual({ message: 'Cloud-init script deleted.' });
    expect((await c.api('GET', `/cloud-init-scripts/${uuid}`, c.read)).text).toBe(NOT_FOUND);
  });

  it("another team's script is the same 404 as a missing one", async () => {
    const other = await c.s.team('init-neighbour');
    for (const [m, body] of [['GET'], ['PATCH', { name: 'mine' }], ['DELETE']] as const) {
      const r = await c.api(m, `/cloud-init-scripts/${c.w.cloudInitScriptUuid}`, other.rootToken, body);
      expect(r.status).toBe(404);
      expect(r.text).toBe(NOT_FOUND);
    }
    expect((await c.api('GET', '/cloud-init-scripts', other.rootToken)).json).toEqual([]);
    expect((await c.api('POST', '/cloud-init-scripts', c.read, { name: 'n', script: '#!/bin/sh' })).status).toBe(403);
  });
});
