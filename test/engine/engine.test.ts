import { Readable } from 'node:stream';
import { Header } from 'tar';
import { describe, expect, it } from 'vitest';
import { EngineClient } from '../../src/engine/engine-client.js';
import { EngineError, NotFoundError } from '../../src/engine/engine-errors.js';
import { manifestOf } from '../../src/engine/tar-manifest.js';
import { enginesAvailable, uniqueName, useEngines } from '../helpers/engines.js';

/** A tar archive in memory (test fixtures only): entries of [path, content | null for a directory]. */
function tarOf(entries: [string, string | null][]): Buffer {
  const blocks: Buffer[] = [];
  for (const [path, content] of entries) {
    const body = content === null ? Buffer.alloc(0) : Buffer.from(content);
    const h = new Header({
      path: content === null && !path.endsWith('/') ? `${path}/` : path,
      type: content === null ? 'Directory' : 'File',
      mode: content === null ? 0o755 : 0o644,
      size: body.length,
      mtime: new Date('2024-01-02T03:04:05Z'),
      uid: 0,
      gid: 0,
    });
    const block = Buffer.alloc(512);
    h.encode(block, 0);
    blocks.push(block, body, Buffer.alloc((512 - (body.length % 512)) % 512));
  }
  blocks.push(Buffer.alloc(1024));
  return Buffer.concat(blocks);
}

describe.skipIf(!enginesAvailable)('engine client against real engines', () => {
  const engines = useEngines();

  it('pings, reports the version and negotiates the API version', async () => {
    await engines.a.ping();
    await engines.b.ping();
    const v = await engines.a.version();
    expect(v.ApiVersion).toMatch(/^1\.\d+$/);
    expect(await engines.a.apiVersion()).toBe(v.ApiVersion); // podman 4.3 says 1.41, under our cap
    const capped = new EngineClient({ endpoint: `unix://${engines.socketA}`, maxApiVersion: '1.40' });
    try {
      expect(await capped.apiVersion()).toBe('1.40');
      expect((await capped.inspectImage(engines.image)).Id).toBeTruthy();
    } finally {
      await capped.close();
    }
  });

  it('inspects images, and a missing image is a NotFoundError', async () => {
    const img = await engines.a.inspectImage(engines.image);
    expect(img.RepoTags).toContain(engines.image);
    await expect(engines.a.inspectImage('localhost/no-such-image:1')).rejects.toBeInstanceOf(NotFoundError);
  });

  it('fails a pull clearly when no registry is reachable', async () => {
    const err = await engines.a.pullImage('localhost:1/berth/nothing:1').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EngineError);
    expect((err as EngineError).message).toMatch(/pulling localhost:1\/berth\/nothing:1 .*failed: .*(refused|connect)/);
  });

  it('creates, lists, inspects and removes volumes; each engine has its own', async () => {
    const name = uniqueName('vol');
    const v = await engines.a.createVolume(name, { labels: { 'berth.test': 'vol', 'berth.run': name } });
    expect(v.Name).toBe(name);
    expect((await engines.a.inspectVolume(name)).Labels).toMatchObject({ 'berth.test': 'vol' });
    expect((await engines.a.listVolumes({ labels: { 'berth.run': name } })).map((x) => x.Name)).toEqual([name]);
    expect(await engines.a.listVolumes({ labels: { 'berth.run': 'nope' } })).toEqual([]);
    // Engine b knows nothing of it.
    await expect(engines.b.inspectVolume(name)).rejects.toBeInstanceOf(NotFoundError);
    expect((await engines.b.listVolumes()).map((x) => x.Name)).not.toContain(name);
    expect(await engines.a.removeVolume(name, { force: true })).toBe(true);
    expect(await engines.a.removeVolume(name)).toBe(false);
    // Forced, the engine answers 204 for a volume it does not have: still false, nothing was removed.
    expect(await engines.a.removeVolume(name, { force: true })).toBe(false);
    await expect(engines.a.inspectVolume(name)).rejects.toBeInstanceOf(NotFoundError);
  });

  it('creates, inspects and removes networks', async () => {
    const name = uniqueName('net');
    const { Id } = await engines.a.createNetwork(name, { labels: { 'berth.test': 'net' }, internal: true });
    expect(Id).toBeTruthy();
    const n = await engines.a.inspectNetwork(name);
    expect(n.Name).toBe(name);
    expect(n.Labels).toMatchObject({ 'berth.test': 'net' });
    await expect(engines.b.inspectNetwork(name)).rejects.toBeInstanceOf(NotFoundError);
    expect(await engines.a.removeNetwork(name)).toBe(true);
    expect(await engines.a.removeNetwork(name)).toBe(false);
  });

  it('runs a container with env and a named volume, and reads its logs', async () => {
    const name = uniqueName('life');
    const vol = uniqueName('lifevol');
    const { Id } = await engines.a.createContainer(name, {
      image: engines.image,
      // stderr first, then a pause: the engine orders lines of the two streams only by arrival.
      cmd: ['sh', '-c', 'echo oops >&2; sleep 0.2; echo hello; echo "greeting=$GREETING"; echo kept > /data/kept.txt; ls /data'],
      env: ['GREETING=bonjour le monde'],
      labels: { 'berth.test': 'lifecycle', 'berth.run': name },
      volumes: [{ volume: vol, target: '/data' }],
      networkMode: 'none',
      restartPolicy: { name: 'no' },
    });
    try {
      const created = await engines.a.inspectContainer(Id);
      expect(created.State.Status).toBe('created');
      expect(created.Config.Env).toContain('GREETING=bonjour le monde');
      expect(created.Mounts).toEqual([expect.objectContaining({ Type: 'volume', Name: vol, Destination: '/data', RW: true })]);
      // No grace asked for: Docker's 10 s, set explicitly (podman would make it 0: anyone's stop kills).
      expect((created.Config as { StopTimeout?: number }).StopTimeout).toBe(10);
      expect(engines.podman('a', ['inspect', '--format', '{{.Config.StopTimeout}}', Id]).trim()).toBe('10');
      expect((await engines.a.listContainers({ labels: { 'berth.run': name } })).map((c) => c.Id)).toEqual([Id]);
      expect(await engines.a.listContainers({ labels: { 'berth.run': 'nope' } })).toEqual([]);

      expect(await engines.a.startContainer(Id)).toBe('started');
      expect((await engines.a.waitContainer(Id)).StatusCode).toBe(0);
      expect((await engines.a.inspectContainer(Id)).State).toMatchObject({ Status: 'exited', ExitCode: 0, Running: false });

      const { entries, truncated } = await engines.a.containerLogs(Id);
      expect(truncated).toBe(false);
      expect(entries.filter((e) => e.stream === 'stdout').map((e) => e.line)).toEqual(['hello', 'greeting=bonjour le monde', 'kept.txt']);
      expect(entries.filter((e) => e.stream === 'stderr').map((e) => e.line)).toEqual(['oops']);
      // (podman applies `tail` before filtering streams, so ask for both.)
      const tail = await engines.a.containerLogs(Id, { tail: 1, timestamps: true });
      expect(tail.entries, JSON.stringify(tail.entries)).toHaveLength(1);
      expect(tail.entries[0]).toMatchObject({ stream: 'stdout', line: 'kept.txt', timestamp: expect.stringMatching(/^\d{4}-\d\d-\d\dT/) });

      expect(await engines.a.stopContainer(Id, 1)).toBe('already-stopped');
    } finally {
      expect(await engines.a.removeContainer(Id, { force: true })).toBe(true);
    }
    expect(await engines.a.removeContainer(Id)).toBe(false);
    await expect(engines.a.inspectContainer(Id)).rejects.toBeInstanceOf(NotFoundError);
    // The named volume outlives the container (removeVolumes defaults to false) and kept the file.
    expect(engines.podman('a', ['run', '--rm', '-v', `${vol}:/v:ro`, engines.image, 'cat', '/v/kept.txt'])).toBe('kept\n');
    expect(await engines.a.removeVolume(vol)).toBe(true);
  });

  it('creates a container with port bindings and a restart policy', async () => {
    // Port bindings need a network: podman drops them with network mode none. Created, never started.
    const { Id } = await engines.a.createContainer(uniqueName('ports'), {
      image: engines.image,
      cmd: ['true'],
      ports: [
        { containerPort: 8080, hostPort: 18080 },
        { containerPort: 53, protocol: 'udp' },
      ],
      restartPolicy: { name: 'on-failure', maximumRetryCount: 3 },
    });
    try {
      const ins = await engines.a.inspectContainer(Id);
      expect(ins.HostConfig.PortBindings).toMatchObject({ '8080/tcp': [expect.objectContaining({ HostPort: '18080' })] });
      expect(Object.keys(ins.HostConfig.PortBindings ?? {})).toContain('53/udp');
      expect(ins.HostConfig.RestartPolicy).toMatchObject({ Name: 'on-failure', MaximumRetryCount: 3 });
    } finally {
      await engines.a.removeContainer(Id, { force: true });
    }
  });

  it('starts and stops a long-running container', async () => {
    const name = uniqueName('run');
    const { Id } = await engines.a.createContainer(name, {
      image: engines.image,
      cmd: ['sh', '-c', 'trap "exit 0" TERM; while true; do sleep 0.1; done'],
      networkMode: 'none',
    });
    try {
      await engines.a.startContainer(Id);
      expect(await engines.a.startContainer(Id)).toBe('already-running');
      expect((await engines.a.inspectContainer(Id)).State.Running).toBe(true);
      expect(await engines.a.stopContainer(Id, 5)).toBe('stopped');
      expect((await engines.a.inspectContainer(Id)).State.Running).toBe(false);
      expect(await engines.a.stopContainer(Id, 5)).toBe('already-stopped');
    } finally {
      await engines.a.removeContainer(Id, { force: true });
    }
  });

  it('runs an exec with its stdin open: a line written reaches it at once, and end of input is end of file', async () => {
    const { Id } = await engines.a.createContainer(uniqueName('stdin'), {
      image: engines.image,
      cmd: ['sh', '-c', 'trap "exit 0" TERM; while :; do sleep 3600 & wait $!; done'],
      networkMode: 'none',
    });
    try {
      await engines.a.startContainer(Id);
      const collect = async (x: Awaited<ReturnType<EngineClient['execWithInput']>>) => {
        const out = { stdout: '', stderr: '' };
        for await (const f of x.output) if (f.stream !== 'stdin') out[f.stream] += f.data.toString();
        return { ...out, code: await x.exitCode() };
      };
      const answered = await engines.a.execWithInput(Id, ['sh', '-c', 'echo waiting; read -r line; echo "got $line"; echo done >&2']);
      const reading = collect(answered);
      answered.input.write('go\n');
      expect(await reading).toEqual({ stdout: 'waiting\ngot go\n', stderr: 'done\n', code: 0 });
      // Nothing written and the input closed: the command reads end of file.
      const abandoned = await engines.a.execWithInput(Id, ['sh', '-c', 'if read -r line; then exit 0; else echo eof; exit 9; fi']);
      const ending = collect(abandoned);
      abandoned.input.end();
      expect(await ending).toEqual({ stdout: 'eof\n', stderr: '', code: 9 });
    } finally {
      await engines.a.removeContainer(Id, { force: true });
    }
  });

  it('round-trips an archive through a stopped container', async () => {
    const name = uniqueName('arch');
    const vol = uniqueName('archvol');
    const { Id } = await engines.a.createContainer(name, {
      image: engines.image,
      cmd: ['true'],
      volumes: [{ volume: vol, target: '/data' }],
      networkMode: 'none',
    });
    try {
      const tar = tarOf([
        ['dir', null],
        ['dir/a.txt', 'alpha\n'],
        ['dir/sub', null],
        ['dir/sub/b name.txt', 'beta '.repeat(1000)],
        ['top.txt', ''],
      ]);
      await engines.a.putArchive(Id, '/data', Readable.from([tar.subarray(0, 700), tar.subarray(700)]));
      const stat = await engines.a.statPath(Id, '/data/dir/a.txt');
      expect(stat).toMatchObject({ name: 'a.txt', size: 6, isDir: false, mode: 0o644 });
      expect((await engines.a.statPath(Id, '/data')).isDir).toBe(true);
      await expect(engines.a.statPath(Id, '/data/missing')).rejects.toBeInstanceOf(NotFoundError);

      const stream = await engines.a.getArchive(Id, '/data/.');
      expect(stream).toBeInstanceOf(Readable);
      const m = await manifestOf(stream);
      expect([...m.entries.keys()].sort()).toEqual(['dir', 'dir/a.txt', 'dir/sub', 'dir/sub/b name.txt', 'top.txt']);
      expect(m.entries.get('dir/sub/b name.txt')).toMatchObject({ type: 'File', size: 5000 });
      expect(m.files).toBe(3);
      expect(m.bytes).toBe(5006);
      // The container never ran; the files are in the volume.
      expect(engines.podman('a', ['run', '--rm', '-v', `${vol}:/v:ro`, engines.image, 'cat', '/v/dir/a.txt'])).toBe('alpha\n');
    } finally {
      await engines.a.removeContainer(Id, { force: true });
      await engines.a.removeVolume(vol);
    }
  });

  it('does not retry a failing create, and reports the engine message', async () => {
    const err = await engines.a.createContainer(uniqueName('bad'), { image: 'localhost/no-such-image:1', networkMode: 'none' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EngineError);
    expect((err as EngineError).status).toBeGreaterThanOrEqual(400);
    expect((err as EngineError).engineMessage).toMatch(/no-such-image/);
  });
});
