/**
 * A compose file on a swarm destination: deploy.replicas and deploy.endpoint_mode as the parser
 * reads them, and the one check of what a swarm service has no place for (core/compose-swarm.ts),
 * on a parsed file and on planned container settings.
 */
import { describe, expect, it } from 'vitest';
import { BerthError } from '../../src/errors.js';
import { parseCompose } from '../../src/core/compose.js';
import { composeSwarmProblems, swarmMisfits } from '../../src/core/compose-swarm.js';

const problemsOf = (yaml: string): string[] => {
  try {
    parseCompose(yaml);
  } catch (err) {
    expect(err).toBeInstanceOf(BerthError);
    return Object.values((err as BerthError).details.errors ?? {}).flat() as string[];
  }
  throw new Error('parseCompose accepted it');
};

describe('deploy.replicas and deploy.endpoint_mode', () => {
  it('are read beside deploy.resources; absent, neither is set', () => {
    const [web, db] = parseCompose(
      'services:\n  web:\n    image: busybox\n    deploy:\n      replicas: 3\n      endpoint_mode: dnsrr\n      resources:\n        limits:\n          memory: 64m\n  db:\n    image: busybox\n',
    ).containers;
    expect(web).toMatchObject({ replicas: 3, endpointMode: 'dnsrr', limits: { memory: 64 * 1024 ** 2 } });
    expect(db!.replicas).toBeUndefined();
    expect(db!.endpointMode).toBeUndefined();
    expect(parseCompose('services:\n  web:\n    image: busybox\n    deploy:\n      replicas: 0\n').containers[0]!.replicas).toBe(0);
  });

  it('refuses what is not a count or a mode, and other deploy keys, by name', () => {
    expect(problemsOf('services:\n  web:\n    image: busybox\n    deploy:\n      replicas: 101\n').join('\n')).toMatch(/services\.web\.deploy.*replicas must be a whole number from 0 to 100/);
    expect(problemsOf('services:\n  web:\n    image: busybox\n    deploy:\n      replicas: two\n').join('\n')).toContain('replicas must be');
    expect(problemsOf('services:\n  web:\n    image: busybox\n    deploy:\n      endpoint_mode: ingress\n').join('\n')).toContain('endpoint_mode must be vip or dnsrr');
    expect(problemsOf('services:\n  web:\n    image: busybox\n    deploy:\n      mode: global\n').join('\n')).toContain('berth honours deploy.replicas, deploy.endpoint_mode');
  });
});

describe('what a stack cannot run', () => {
  it('names every compose key a swarm service has no place for, once per service', () => {
    const { containers } = parseCompose(
      [
        'services:',
        '  a:',
        '    image: busybox',
        '    privileged: true',
        '    devices: ["/dev/fuse"]',
        '    network_mode: none',
        '    ipc: private',
        '    volumes: ["/srv/data:/data"]',
        '  b:',
        '    image: busybox',
        '    ports: ["127.0.0.1:8080:80"]',
        '  c:',
        '    image: busybox',
        '    ports: ["8081:80"]',
        '    deploy:',
        '      endpoint_mode: dnsrr',
        '  fine:',
        '    image: busybox',
        '    ports: ["8082:80"]',
        '    cap_drop: [ALL]',
        '    volumes: ["data:/data"]',
        'volumes:',
        '  data:',
      ].join('\n'),
    );
    const p = composeSwarmProblems(containers);
    const keys = p.map((l) => l.split(':')[0]);
    expect(keys).toEqual(['services.a.privileged', 'services.a.devices', 'services.a.network_mode', 'services.a.ipc', 'services.a.volumes', 'services.b.ports', 'services.c.deploy']);
    expect(p.every((l) => l.includes('swarm'))).toBe(true);
  });

  it('reads planned settings the same way (Docker bind strings, port bindings)', () => {
    expect(swarmMisfits({ binds: ['/srv:/x'], ports: [{ hostIp: '127.0.0.1', hostPort: 80 }] }).map((m) => m.key)).toEqual(['volumes', 'ports']);
    expect(swarmMisfits({ binds: [], ports: [{ hostPort: 80 }], networkMode: null, capDrop: ['ALL'] } as never)).toEqual([]);
  });
});
