/**
 * End to end, on two real engines: a service of two containers and two volumes (one of them
 * also mounted read-only by the other container) moves from engine a to engine b. Started over
 * MCP without a progress token (the pending answer), followed over MCP and REST; both volumes
 * are checked byte for byte on b, both sources untouched, and a redeploy runs both containers
 * on b with the copied volumes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINE_IMAGE, enginesAvailable, useEngines } from '../helpers/engines.js';
import { httpClient, type AnyClient } from '../helpers/mcp.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import {
  Api,
  containersLabelled,
  containerState,
  deployed,
  KEEP_RUNNING,
  KNOWN_FILES,
  registerEngines,
  sumsInContainer,
  until,
  volumeExists,
  volumeNames,
  volumesLabelled,
  volumeTruth,
  writeVolume,
  type Platform,
} from './support.js';

const COMPOSE = `services:
  web:
    image: ${ENGINE_IMAGE}
    command: ["sh", "-c", ${JSON.stringify(KEEP_RUNNING)}]
    environment:
      ROLE: web
    volumes:
      - web-data:/srv/web
  worker:
    image: ${ENGINE_IMAGE}
    command: ["sh", "-c", ${JSON.stringify(KEEP_RUNNING)}]
    volumes:
      - work-data:/srv/work
      - web-data:/srv/shared:ro
volumes:
  web-data:
  work-data:
`;

/** Many small files in a deep tree, and a couple of larger ones. */
const WORK_FILES = `
set -e
cd /data
i=0
while [ $i -lt 120 ]; do
  d="queue/$((i % 7))/part $((i % 3))"
  mkdir -p "$d"
  head -c $(( (i * 7919) % 20000 )) /dev/urandom > "$d/item-$i.json"
  i=$((i + 1))
done
dd if=/dev/urandom of=queue/snapshot.db bs=1048576 count=4 2>/dev/null
printf '' > queue/lock
mkdir -p 'state/with space/and.dots'
printf 'ok\\n' > 'state/with space/and.dots/status'
`;

describe.skipIf(!enginesAvailable)('migrating a service (two containers, two volumes) between two engines', () => {
  const engines = useEngines();
  let s: TestServer;
  let api: Api;
  let p: Platform;
  let mcp: AnyClient;

  beforeAll(async () => {
    s = await startTestServer({ apiRateLimit: 0, helperImage: ENGINE_IMAGE });
    api = new Api(s.url, s.rootToken);
    p = await registerEngines(api, engines);
    mcp = await httpClient('v1', s.url, s.rootToken);
  }, 60_000);
  afterAll(async () => {
    await mcp?.close();
    await s?.stop();
  });

  it('moves both volumes byte for byte, leaves nothing on a, and both containers run on b after a redeploy', async () => {
    const { uuid } = await api.ok('POST', '/services', {
      project_uuid: p.project,
      server_uuid: p.serverA,
      destination_uuid: p.destA,
      environment_name: 'production',
      name: 'two-volume-service',
      docker_compose_raw: Buffer.from(COMPOSE).toString('base64'),
    });
    const d = await api.ok('POST', `/deploy?uuid=${uuid}`);
    await deployed(api, d.deployments[0].deployment_uuid);
    const web = `${uuid}-web`;
    const worker = `${uuid}-worker`;
    expect(containerState(engines, 'a', web)).toMatchObject({ running: true });
    expect(containerState(engines, 'a', worker)).toMatchObject({ running: true });

    const vols = await volumeNames(api, 'services', uuid);
    expect(Object.keys(vols).sort()).toEqual(['web-data', 'work-data']);
    writeVolume(engines, 'a', vols['web-data']!, KNOWN_FILES, ['2']);
    writeVolume(engines, 'a', vols['work-data']!, WORK_FILES);
    const before = { web: volumeTruth(engines, 'a', vols['web-data']!), work: volumeTruth(engines, 'a', vols['work-data']!) };
    expect(before.web.files).toBe(46);
    expect(before.work.files).toBe(123);

    // Over MCP without a progress token: the pending answer at once, then followed.
    const r = await mcp.callTool('migrate_service', { uuid, destination_uuid: p.destB });
    expect(r.isError, JSON.stringify(r)).toBeFalsy();
    expect(r.structuredContent).toMatchObject({ uuid, moves_data: true, async: true, volume_jobs: 2, status: 'pending' });
    const migrationUuid = r.structuredContent!.migration_uuid as string;
    const m = await until(
      'the service migration',
      async () => {
        const g = await mcp.callTool('get_migration', { uuid: migrationUuid });
        const st = g.structuredContent as { status: string };
        return ['pending', 'copying'].includes(st.status) ? undefined : (g.structuredContent as Record<string, any>);
      },
      90_000,
      250,
    );
    expect(m).toMatchObject({ status: 'finished', error: null, progress: { phase: 'done', volumes_total: 2, volumes_done: 2, bytes_total: before.web.bytes + before.work.bytes } });

    // Records on b, through REST; each storage now names its copy.
    const rec = await api.ok('GET', `/services/${uuid}`);
    expect(rec).toMatchObject({ server_uuid: p.serverB, destination_uuid: p.destB, status: 'exited' });
    const moved = await volumeNames(api, 'services', uuid);
    expect(moved['web-data']).not.toBe(vols['web-data']);
    expect(moved['work-data']).not.toBe(vols['work-data']);
    expect(volumesLabelled(engines, 'b', `berth.migration=${migrationUuid}`)).toEqual([moved['web-data'], moved['work-data']].sort());

    for (const [name, truth] of [
      ['web-data', before.web],
      ['work-data', before.work],
    ] as const) {
      const after = volumeTruth(engines, 'b', moved[name]!);
      for (const [file, sum] of truth.hashes) expect(after.hashes.get(file), `${name}: ${file}`).toBe(sum);
      expect(after.listing, name).toBe(truth.listing);
    }
    // Nothing of it left on a once the copies are verified: containers and source volumes removed.
    await until(
      'the source cleared',
      async () =>
        [web, worker].every((c) => containerState(engines, 'a', c) === null) && !volumeExists(engines, 'a', vols['web-data']!) && !volumeExists(engines, 'a', vols['work-data']!) ? true : undefined,
      20_000,
    );
    expect(containerState(engines, 'b', web)).toBeNull();
    expect(containerState(engines, 'b', worker)).toBeNull();
    // This migration's helpers (other test files copy volumes on the same engines meanwhile).
    expect(containersLabelled(engines, 'a', `berth.migration=${migrationUuid}`)).toEqual([]);
    expect(containersLabelled(engines, 'b', `berth.migration=${migrationUuid}`)).toEqual([]);

    // Redeploy: both containers run on b, mounting the copies (web-data in both).
    const again = await api.ok('POST', `/deploy?uuid=${uuid}`);
    const dep = await deployed(api, again.deployments[0].deployment_uuid);
    expect(dep.server_uuid).toBe(p.serverB);
    const webB = containerState(engines, 'b', web)!;
    const workerB = containerState(engines, 'b', worker)!;
    expect(webB.running).toBe(true);
    expect(workerB.running).toBe(true);
    expect(webB.mounts).toEqual([expect.objectContaining({ Name: moved['web-data'], Destination: '/srv/web', RW: true })]);
    expect(workerB.mounts.map((x) => [x.Name, x.Destination, x.RW]).sort()).toEqual(
      [
        [moved['work-data'], '/srv/work', true],
        [moved['web-data'], '/srv/shared', false],
      ].sort(),
    );
    expect(sumsInContainer(engines, 'b', web, '/srv/web')).toBe(before.web.sums);
    expect(sumsInContainer(engines, 'b', worker, '/srv/work')).toBe(before.work.sums);
    expect(sumsInContainer(engines, 'b', worker, '/srv/shared')).toBe(before.web.sums);
    expect(containerState(engines, 'a', web)).toBeNull();
  }, 240_000);
});
