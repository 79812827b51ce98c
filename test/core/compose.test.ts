/**
 * The compose parser on its own (it is reached through HTTP elsewhere): what it keeps, the order
 * depends_on gives, durations, Coolify's base64 form, and refusals that name the line.
 */
import { describe, expect, it } from 'vitest';
import { BerthError } from '../../src/errors.js';
import { decodeCompose, dependencyOrder, durationSeconds, parseCompose, requireHostAccess } from '../../src/core/compose.js';

const problemsOf = (yaml: string): string[] => {
  try {
    parseCompose(yaml);
  } catch (err) {
    expect(err).toBeInstanceOf(BerthError);
    return Object.values((err as BerthError).details.errors ?? {}).flat() as string[];
  }
  throw new Error('parseCompose accepted it');
};

describe('parseCompose', () => {
  it('keeps what berth honours, in dependency order, with named volumes collected', () => {
    const c = parseCompose(`
services:
  web:
    image: nginx:1.27
    depends_on:
      db: { condition: service_healthy }
    ports: ["8080:80"]
    environment: { MODE: prod }
    volumes: ["static:/srv"]
  db:
    image: postgres:16
    environment: ["POSTGRES_PASSWORD=x"]
    volumes: ["data:/var/lib/postgresql/data"]
    healthcheck: { test: ["CMD", "pg_isready"], interval: 1m30s }
    stop_grace_period: 45s
volumes: { data: {}, static: }
`);
    expect(c.containers.map((k) => k.name)).toEqual(['db', 'web']);
    const [db, web] = c.containers;
    expect(web).toMatchObject({ image: 'nginx:1.27', ports: ['8080:80'], environment: { MODE: 'prod' }, dependsOn: [{ service: 'db', condition: 'service_healthy' }] });
    expect(web!.mounts).toEqual([{ volume: 'static', target: '/srv', readOnly: false }]);
    expect(db).toMatchObject({ environment: { POSTGRES_PASSWORD: 'x' }, stopGraceS: 45 });
    expect(db!.healthcheck?.test).toEqual(['CMD', 'pg_isready']);
    expect([...c.volumes].sort()).toEqual(['data', 'static']);
    expect(c.hostReach).toEqual([]);
  });

  it('refuses what it would otherwise ignore, naming the line', () => {
    const problems = problemsOf(`
services:
  web:
    image: nginx
    build: .
    volumes: ["/var/../etc:/x", "./rel:/y"]
    restart: sometimes
`);
    expect(problems.join('\n')).toMatch(/build.*not supported by berth/);
    expect(problems.join('\n')).toMatch(/line \d+/);
    expect(problems.join('\n')).toMatch(/"\.\."/);
    expect(problems.join('\n')).toMatch(/relative host paths/);
    expect(problems.join('\n')).toMatch(/use no, always, unless-stopped or on-failure/);
  });

  it('a dependency cycle and an empty file are refused', () => {
    expect(problemsOf('services:\n  a: { image: x, depends_on: [b] }\n  b: { image: y, depends_on: [a] }\n').join('\n')).toMatch(/a.*b.*a|cycle/i);
    expect(problemsOf('services: {}\n').join('\n')).toMatch(/non-empty "services"/);
    expect(problemsOf('services: [\n').join('\n')).toMatch(/not valid YAML/);
  });

  it('settings that reach into the host are collected and pass only with host access', () => {
    const c = parseCompose('services:\n  x:\n    image: busybox\n    privileged: true\n    volumes: ["/var/run/docker.sock:/var/run/docker.sock"]\n');
    expect(c.hostReach.length).toBeGreaterThanOrEqual(2);
    expect(() => requireHostAccess(c, false)).toThrow(BerthError);
    expect(() => requireHostAccess(c, true)).not.toThrow();
  });
});

describe('compose helpers', () => {
  it('durations in compose form', () => {
    expect(durationSeconds('1m30s')).toBe(90);
    expect(durationSeconds('500ms')).toBe(0.5);
    expect(durationSeconds('1h')).toBe(3600);
    expect(durationSeconds('90')).toBeNull();
    expect(durationSeconds(5)).toBeNull();
  });

  it("Coolify's base64 form decodes; plain YAML passes through", () => {
    const yaml = 'services:\n  a:\n    image: busybox\n';
    expect(decodeCompose(Buffer.from(yaml).toString('base64'))).toBe(yaml);
    expect(decodeCompose(yaml)).toBe(yaml);
  });

  it('dependency order puts what is depended on first, and finds cycles', () => {
    const r = dependencyOrder([{ name: 'app', dependsOn: [{ service: 'cache' }, { service: 'db' }] }, { name: 'db' }, { name: 'cache', dependsOn: [{ service: 'db' }] }]);
    expect('order' in r && r.order.map((i) => i.name)).toEqual(['db', 'cache', 'app']);
    const c = dependencyOrder([
      { name: 'a', dependsOn: [{ service: 'b' }] },
      { name: 'b', dependsOn: [{ service: 'a' }] },
    ]);
    expect('cycle' in c && c.cycle).toEqual(['a', 'b', 'a']);
  });
});

describe("a repository's compose file (build: sections)", () => {
  const withBuild = (yaml: string): string[] => {
    try {
      parseCompose(yaml, { build: true });
    } catch (err) {
      return Object.values((err as BerthError).details.errors ?? {}).flat() as string[];
    }
    return [];
  };

  it('takes a context and a dockerfile, with or without an image; an inline compose file refuses build', () => {
    const c = parseCompose('services:\n  web:\n    build:\n      context: ./api\n      dockerfile: docker/Dockerfile.prod\n  short:\n    build: .\n  db:\n    image: postgres:16\n', { build: true });
    expect(c.containers.map((k) => [k.name, k.build ?? null, k.image])).toEqual([
      ['web', { context: 'api', dockerfile: 'docker/Dockerfile.prod' }, ''],
      ['short', { context: '.', dockerfile: 'Dockerfile' }, ''],
      ['db', null, 'postgres:16'],
    ]);
    expect(problemsOf('services:\n  web:\n    build: .\n')).toEqual(expect.arrayContaining([expect.stringMatching(/^services\.web\.build.*not supported by berth/)]));
  });

  it('refuses what would leave the repository or what berth does not build', () => {
    expect(withBuild('services:\n  web:\n    build: ../elsewhere\n')).toEqual([expect.stringContaining('must be a relative directory of the repository')]);
    expect(withBuild('services:\n  web:\n    build: /etc\n')).toEqual([expect.stringContaining('must be a relative directory of the repository')]);
    expect(withBuild('services:\n  web:\n    build: https://github.com/x/y.git\n')).toEqual([expect.stringContaining('must be a relative directory of the repository')]);
    expect(withBuild('services:\n  web:\n    build:\n      context: .\n      dockerfile: ../../Dockerfile\n')).toEqual([expect.stringContaining('relative path inside the context')]);
    expect(withBuild('services:\n  web:\n    build:\n      context: .\n      args:\n        A: b\n')).toEqual([
      expect.stringMatching(/^services\.web\.build \(line 3\): args is not supported by berth/),
    ]);
    expect(withBuild('services:\n  web:\n    build: [a]\n')).toEqual(expect.arrayContaining([expect.stringContaining('must be a context directory')]));
    expect(withBuild('services:\n  web:\n    environment: {}\n')).toEqual([expect.stringContaining('a valid image reference is required (or a build section)')]);
  });
});
