/**
 * Resource planning's pure parts: which containers a resource has on its engine, and whether a
 * plan may run on a server that does not allow host access.
 */
import { describe, expect, it } from 'vitest';
import { containerNames, planRefusal, type Plan } from '../../src/engine/plan.js';

const plan = (hostAccess: boolean, specs: Plan['containers'][number]['spec'][]): Plan => ({
  serverId: 1,
  engineKind: 'standalone',
  hostAccess,
  network: 'berth',
  ownNetwork: false,
  containers: specs.map((spec, i) => ({ name: `c${i}`, spec })),
  volumes: [],
  notes: [],
});

describe('containerNames', () => {
  it('an application or a database is one container named by its uuid; a service one per compose service', () => {
    expect(containerNames({ uuid: 'u1', kind: 'application', config: '{}' })).toEqual(['u1']);
    expect(containerNames({ uuid: 'u2', kind: 'postgresql', config: '{}' })).toEqual(['u2']);
    const config = JSON.stringify({ docker_compose_raw: '', volumes: [], containers: [{ name: 'web' }, { name: 'db' }] });
    expect(containerNames({ uuid: 'u3', kind: 'service', config })).toEqual(['u3-web', 'u3-db']);
  });
});

describe('planRefusal', () => {
  it('a plain plan runs anywhere', () => {
    expect(planRefusal(plan(false, [{ image: 'busybox', networkMode: 'berth' }]))).toBeNull();
  });

  it('a container that reaches into the host is refused without host access, named, and allowed with it', () => {
    const reaching = plan(false, [{ image: 'busybox' }, { image: 'busybox', privileged: true, binds: ['/var/run/docker.sock:/var/run/docker.sock'] }]);
    const refusal = planRefusal(reaching);
    expect(refusal).toMatch(/Container c1/);
    expect(refusal).toMatch(/privileged/);
    expect(planRefusal({ ...reaching, hostAccess: true })).toBeNull();
  });
});
