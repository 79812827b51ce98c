/**
 * Domain claims under concurrent clients, on whichever store the run uses (SQLite, or PostgreSQL
 * with BERTH_TEST_STORE=postgres): many resources created (or changed) at once to answer one
 * domain: exactly one gets it, the others a 409 naming it (within the team) or naming nobody
 * (another team's), and never two records answering it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { b64, placeOf, setup, type Ctx } from '../resources/support.js';

let c: Ctx;
let other: { rootToken: string; place: { project_uuid: string; server_uuid: string; environment_name: string } };
beforeAll(async () => {
  c = await setup();
  const t = await c.s.team('Claims elsewhere');
  const project = (await c.api('POST', '/projects', t.rootToken, { name: 'theirs' })).json.uuid as string;
  const server = (await c.api('POST', '/servers', t.rootToken, { ip: '127.0.0.1', name: 'theirs' })).json.uuid as string;
  other = { rootToken: t.rootToken, place: { project_uuid: project, server_uuid: server, environment_name: 'production' } };
}, 60_000);
afterAll(() => c?.stop());

const CLIENTS = 10;
const range = (n: number) => Array.from({ length: n }, (_, i) => i);
const compose = b64('services:\n  web:\n    image: localhost/berth-busybox:latest\n    command: ["sleep", "3600"]\n');

/** Every record of every team that answers `host` (applications' domains and service applications' urls). */
async function holders(host: string): Promise<string[]> {
  const out: string[] = [];
  for (const token of [c.root, other.rootToken]) {
    for (const a of (await c.api('GET', '/applications', token)).json) if (String(a.fqdn ?? '').includes(host)) out.push(a.uuid);
    for (const s of (await c.api('GET', '/services', token)).json) {
      for (const p of (await c.api('GET', `/services/${s.uuid}/applications`, token)).json) if (String(p.fqdn ?? '').includes(host)) out.push(`${s.uuid}/${p.name}`);
    }
  }
  return out;
}

describe('one domain, many claimants at once', () => {
  it('concurrent application creates (both teams, every create route): exactly one wins; the 409s name the winner within the team only', async () => {
    const host = 'race-create.example.com';
    const bodies = range(CLIENTS).map((i) => ({ name: `racer-${i}`, domains: `https://${host}` }));
    const replies = await Promise.all(
      bodies.map((b, i) => {
        const mine = i % 3 !== 2;
        const token = mine ? c.write : other.rootToken;
        const place = mine ? placeOf(c.w) : other.place;
        if (i % 2) return c.api('POST', '/applications/dockerfile', token, { ...place, ...b, dockerfile: b64('FROM busybox\n'), ports_exposes: '80' });
        return c.api('POST', '/applications/dockerimage', token, { ...place, ...b, docker_registry_image_name: 'nginx' });
      }),
    );
    for (const r of replies) expect([201, 409], r.text).toContain(r.status);
    const won = replies.filter((r) => r.status === 201);
    expect(won).toHaveLength(1);
    const winner = replies.indexOf(won[0]!);
    expect(await holders(host)).toEqual([won[0]!.json.uuid]);
    const winnersTeam = winner % 3 !== 2;
    replies.forEach((r, i) => {
      if (r.status !== 409) return;
      const sameTeam = (i % 3 !== 2) === winnersTeam;
      if (sameTeam) expect(r.json.message).toContain(`application 'racer-${winner}'`);
      else {
        expect(r.json.message).toBe(`Domain conflicts detected: ${host} is used by another resource.`);
        expect(r.text).not.toContain(`racer-${winner}`);
      }
    });
  }, 60_000);

  it('concurrent service creates with urls and application updates: exactly one holds the domain', async () => {
    const host = 'race-mixed.example.com';
    const apps = await Promise.all(
      range(4).map(async (i) => (await c.api('POST', '/applications/dockerimage', c.write, { ...placeOf(c.w), name: `mixed-${i}`, docker_registry_image_name: 'nginx' })).json.uuid as string),
    );
    const replies = await Promise.all([
      ...range(CLIENTS - apps.length).map((i) =>
        c.api('POST', '/services', c.write, { ...placeOf(c.w), name: `svc-${i}`, docker_compose_raw: compose, urls: [{ name: 'web', url: `http://${host}` }] }),
      ),
      ...apps.map((uuid) => c.api('PATCH', `/applications/${uuid}`, c.write, { domains: `http://${host}` })),
    ]);
    for (const r of replies) expect([200, 201, 409], r.text).toContain(r.status);
    expect(replies.filter((r) => r.status !== 409)).toHaveLength(1);
    expect(await holders(host)).toHaveLength(1);
    // A refused service create leaves no service behind.
    const services = (await c.api('GET', '/services', c.read)).json.filter((s: { name: string }) => s.name.startsWith('svc-'));
    expect(services.length).toBe(replies.slice(0, CLIENTS - apps.length).filter((r) => r.status === 201).length);
  }, 60_000);
});
