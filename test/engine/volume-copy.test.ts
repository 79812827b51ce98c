/**
 * copyVolume between two real, independent engines. Ground truth comes from busybox inside
 * containers run with the podman CLI (sha256sum, stat), independent of the client under test.
 */
import net from 'node:net';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { NotFoundError, VerificationError } from '../../src/engine/engine-errors.js';
import { copyVolume, DestinationNotEmptyError, type CopyProgress } from '../../src/engine/volume-copy.js';
import { VolumeSync } from '../../src/engine/volume-sync.js';
import { enginesAvailable, uniqueName, useEngines, type TestEngines } from '../helpers/engines.js';

const LONG_DIR = 'd'.repeat(60);
const LONG_FILE = 'f'.repeat(80); // LONG_DIR/LONG_FILE is longer than ustar's 100-byte name field

const MIXED = `
set -e
cd /v
mkdir -p 'dir one/nested/deeper' empty-dir '${LONG_DIR}'
: > empty.txt
printf 'hello world\\n' > 'file with spaces.txt'
dd if=/dev/urandom of=big.bin bs=1024 count=3072 2>/dev/null
dd if=/dev/urandom of='dir one/nested/deeper/mid.bin' bs=1024 count=300 2>/dev/null
dd if=/dev/urandom of=exact-512.bin bs=512 count=1 2>/dev/null
i=1; while [ $i -le 40 ]; do head -c $((i * 997)) /dev/urandom > "dir one/small $i.dat"; i=$((i + 1)); done
printf x > 'dir one/nested/one-byte'
printf 'long name\\n' > '${LONG_DIR}/${LONG_FILE}'
ln -s big.bin link-to-big
chmod 600 'file with spaces.txt'
chmod 1777 empty-dir
chown 999:998 'file with spaces.txt' 'dir one' 'dir one/nested/deeper/mid.bin'
chown -h 1000:1001 link-to-big
chown 1234:1234 exact-512.bin
chmod 4755 exact-512.bin
chmod 2775 'dir one'
chown 70:70 /v
chmod 750 /v
`;

/** Every entry (type, size, permissions) and every file's sha256, as busybox sees the volume. */
function groundTruth(engines: TestEngines, engine: 'a' | 'b', volume: string): { listing: string; sums: string; rootMode: string } {
  const out = engines.podman(engine, [
    'run',
    '--rm',
    '-v',
    `${volume}:/v:ro`,
    engines.image,
    'sh',
    '-c',
    'cd /v && stat -c "%a %u:%g" . && echo --- && find . -mindepth 1 -exec stat -c "%n|%F|%s|%a|%u:%g" {} + | sort && echo --- && find . -type f -exec sha256sum {} + | sort -k 2',
  ]);
  const [rootMode, listing, sums] = out.split('---\n');
  return { rootMode: rootMode!.trim(), listing: listing!, sums: sums! };
}

/** Put on every helper of this file, so that other test files' copies on the same engines do not count. */
const RUN = { 'berth.test-run': uniqueName('vcopy') };

/** A sync between two existing volumes (nothing copied yet), closed afterwards whatever happens. */
async function withSync(engines: TestEngines, from: string, to: string, use: (sync: VolumeSync) => Promise<void>): Promise<void> {
  const sync = await VolumeSync.open({ from: { engine: engines.a, volume: from }, to: { engine: engines.b, volume: to }, helperImage: engines.image, helperLabels: RUN });
  try {
    await use(sync);
  } finally {
    await sync.close();
  }
}

function helpersLeft(engines: TestEngines): Promise<unknown[][]> {
  const labels = ['berth.volume-copy', `berth.test-run=${RUN['berth.test-run']}`];
  return Promise.all([engines.a.listContainers({ labels }), engines.b.listContainers({ labels })]);
}

describe.skipIf(!enginesAvailable)('copyVolume between two engines', () => {
  const engines = useEngines();

  it('copies mixed files, nested dirs, an empty file, spaces and long names, and verifies them', async () => {
    const src = uniqueName('src');
    const staging = uniqueName('staging');
    engines.podman('a', ['volume', 'create', src]);
    engines.podman('a', ['run', '--rm', '-v', `${src}:/v`, engines.image, 'sh', '-c', MIXED]);
    const before = groundTruth(engines, 'a', src);
    expect(before.listing).toContain('./file with spaces.txt|regular file|12|600|999:998');
    expect(before.listing).toContain('./empty.txt|regular empty file|0|644|0:0');
    expect(before.listing).toContain('./exact-512.bin|regular file|512|4755|1234:1234');
    expect(before.listing).toContain('./link-to-big|symbolic link|7|777|1000:1001');
    expect(before.listing).toContain(`./${LONG_DIR}/${LONG_FILE}|regular file|10|644|0:0`);
    expect(before.rootMode).toBe('750 70:70');

    const progress: CopyProgress[] = [];
    const result = await copyVolume({
      from: { engine: engines.a, volume: src },
      to: { engine: engines.b, volume: staging, labels: { 'berth.test': 'staging' } },
      helperImage: engines.image,
      helperLabels: RUN,
      onProgress: (p) => progress.push(p),
      progressIntervalMs: 0,
    });

    const fileCount = before.sums.trim().split('\n').length;
    const totalBytes = before.listing
      .trim()
      .split('\n')
      .map((l) => l.split('|'))
      .filter(([, type]) => type!.startsWith('regular'))
      .reduce((sum, [, , size]) => sum + Number(size), 0);
    expect(result).toMatchObject({ files: fileCount, bytes: totalBytes, verified: { listing: true, checksums: false } });
    // podman's archive download loses owners; they were listed and re-applied (the root + 5 entries).
    expect(result.ownership).toEqual({ mode: 'fixup', entries: 6 });
    expect(totalBytes).toBeGreaterThan(3 * 1024 * 1024);
    expect(result.transferredBytes).toBeGreaterThan(totalBytes);

    // Every byte arrived: same entries, sizes, permissions, owners and sha256 on engine b.
    const after = groundTruth(engines, 'b', staging);
    expect(after.sums).toBe(before.sums);
    expect(after.listing).toBe(before.listing);
    expect(after.rootMode).toBe('750 70:70');
    expect((await engines.b.inspectVolume(staging)).Labels).toMatchObject({ 'berth.test': 'staging' });
    // The source is untouched.
    expect(groundTruth(engines, 'a', src)).toEqual(before);

    expect(progress.length).toBeGreaterThan(1);
    const last = progress.at(-1)!;
    expect(last).toEqual({ transferredBytes: result.transferredBytes, files: result.files, bytes: result.bytes });
    for (let i = 1; i < progress.length; i++) expect(progress[i]!.transferredBytes).toBeGreaterThanOrEqual(progress[i - 1]!.transferredBytes);

    expect(await helpersLeft(engines)).toEqual([[], []]);
    // The staging volume exists only on b, the source only on a.
    await expect(engines.b.inspectVolume(src)).rejects.toBeInstanceOf(NotFoundError);
    await expect(engines.a.inspectVolume(staging)).rejects.toBeInstanceOf(NotFoundError);
  });

  it('copies an empty volume', async () => {
    const src = uniqueName('empty');
    await engines.a.createVolume(src);
    const staging = uniqueName('staging');
    const result = await copyVolume({ from: { engine: engines.a, volume: src }, to: { engine: engines.b, volume: staging }, helperImage: engines.image, helperLabels: RUN });
    expect(result).toMatchObject({ files: 0, bytes: 0, verified: { listing: true, checksums: false } });
    expect(groundTruth(engines, 'b', staging).listing).toBe('');
  });

  it('with checksums, also reads the destination back and compares every sha256', async () => {
    const src = uniqueName('src');
    engines.podman('a', ['volume', 'create', src]);
    engines.podman('a', ['run', '--rm', '-v', `${src}:/v`, engines.image, 'sh', '-c', MIXED]);
    const staging = uniqueName('staging');
    const result = await copyVolume({ from: { engine: engines.a, volume: src }, to: { engine: engines.b, volume: staging }, helperImage: engines.image, helperLabels: RUN, checksums: true });
    expect(result.verified).toEqual({ listing: true, checksums: true });
    const before = groundTruth(engines, 'a', src);
    expect(groundTruth(engines, 'b', staging)).toEqual(before);
    expect(await helpersLeft(engines)).toEqual([[], []]);
  });

  it('the listings catch a destination that differs from the source in size, type or entries', async () => {
    const src = uniqueName('src');
    const dst = uniqueName('dst');
    engines.podman('a', ['volume', 'create', src]);
    engines.podman('b', ['volume', 'create', dst]);
    const files = 'mkdir -p /v/d && printf 12345 > /v/d/five && printf abc > /v/same && touch -t 202001010000 /v/same';
    // Only the source's copy of ./same is owned by 7:7: the fix-up must re-apply it on b.
    engines.podman('a', ['run', '--rm', '-v', `${src}:/v`, engines.image, 'sh', '-c', `${files} && chown 7:7 /v/same && printf x > /v/only-source`]);
    // Same names, one byte short, a directory where a file was, one entry missing and one extra.
    engines.podman('b', ['run', '--rm', '-v', `${dst}:/v`, engines.image, 'sh', '-c', `${files} && printf 1234 > /v/d/five && mkdir /v/extra`]);
    await withSync(engines, src, dst, async (sync) => {
      const err = await sync.verify().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(VerificationError);
      const diffs = (err as VerificationError).differences.join('\n');
      expect(diffs).toContain('5 entries, 3 files, 9 bytes → 5 entries, 2 files, 7 bytes');
      expect(diffs).toMatch(/^-f\|5\|.*\|\.\/d\/five$/m);
      expect(diffs).toMatch(/^\+f\|4\|.*\|\.\/d\/five$/m);
      expect(diffs).toMatch(/^-f\|1\|.*\|\.\/only-source$/m);
      expect(diffs).toMatch(/^\+d\|.*\|\.\/extra$/m);
      // Owners were re-applied (fixup), so the file with the same content is not a difference.
      expect(diffs).not.toContain('./same');
    });
  });

  it('copies a volume holding a unix socket without it (archives carry no sockets), and verifies', async () => {
    const src = uniqueName('src');
    engines.podman('a', ['volume', 'create', src]);
    engines.podman('a', ['run', '--rm', '-v', `${src}:/v`, engines.image, 'sh', '-c', 'printf data > /v/file']);
    // A socket, as an app leaves one: made on the host in the volume's directory (Node removes
    // the file when the server closes, so it listens until the copy is done).
    const mountpoint = engines.podman('a', ['volume', 'inspect', '--format', '{{.Mountpoint}}', src]).trim();
    const server = net.createServer().listen(path.join(mountpoint, 'app.sock'));
    await new Promise((r) => server.once('listening', r));
    try {
      expect(engines.podman('a', ['run', '--rm', '-v', `${src}:/v:ro`, engines.image, 'sh', '-c', 'test -S /v/app.sock && echo socket'])).toBe('socket\n');
      const staging = uniqueName('staging');
      const result = await copyVolume({ from: { engine: engines.a, volume: src }, to: { engine: engines.b, volume: staging }, helperImage: engines.image, helperLabels: RUN });
      expect(result).toMatchObject({ files: 1, bytes: 4, verified: { listing: true } });
      expect(engines.podman('b', ['run', '--rm', '-v', `${staging}:/v:ro`, engines.image, 'ls', '-A', '/v'])).toBe('file\n');
    } finally {
      await new Promise((r) => server.close(r));
    }
  });

  it('refuses a source with a newline in a file name (lines are entries), saying why', async () => {
    const src = uniqueName('src');
    engines.podman('a', ['volume', 'create', src]);
    engines.podman('a', ['run', '--rm', '-v', `${src}:/v`, engines.image, 'sh', '-c', `printf x > /v/plain && printf y > "/v/two$(printf '\\nlines')"`]);
    await expect(copyVolume({ from: { engine: engines.a, volume: src }, to: { engine: engines.b, volume: uniqueName('nl') }, helperImage: engines.image, helperLabels: RUN })).rejects.toThrow(
      /file name contains a newline/,
    );
    expect(await helpersLeft(engines)).toEqual([[], []]);
  });

  it('refuses a non-empty destination and a missing source, cleaning up its helpers', async () => {
    const src = uniqueName('src');
    engines.podman('a', ['volume', 'create', src]);
    engines.podman('a', ['run', '--rm', '-v', `${src}:/v`, engines.image, 'sh', '-c', 'echo data > /v/file']);
    const taken = uniqueName('taken');
    engines.podman('b', ['volume', 'create', taken]);
    engines.podman('b', ['run', '--rm', '-v', `${taken}:/v`, engines.image, 'sh', '-c', 'echo old > /v/old']);

    await expect(copyVolume({ from: { engine: engines.a, volume: src }, to: { engine: engines.b, volume: taken }, helperImage: engines.image, helperLabels: RUN })).rejects.toBeInstanceOf(
      DestinationNotEmptyError,
    );
    expect(engines.podman('b', ['run', '--rm', '-v', `${taken}:/v:ro`, engines.image, 'ls', '/v'])).toBe('old\n');

    await expect(
      copyVolume({ from: { engine: engines.a, volume: uniqueName('missing') }, to: { engine: engines.b, volume: uniqueName('x') }, helperImage: engines.image, helperLabels: RUN }),
    ).rejects.toBeInstanceOf(NotFoundError);
    expect(await helpersLeft(engines)).toEqual([[], []]);
  });

  describe('a ~200 MB volume', () => {
    const big = uniqueName('big');

    it('is copied with the RSS growth of this process under 64 MiB', async () => {
      engines.podman('a', ['volume', 'create', big]);
      engines.podman('a', [
        'run',
        '--rm',
        '-v',
        `${big}:/v`,
        engines.image,
        'sh',
        '-c',
        'i=0; while [ $i -lt 10 ]; do dd if=/dev/urandom of=/v/part-$i.bin bs=1048576 count=20 2>/dev/null; i=$((i + 1)); done; mkdir /v/small; i=0; while [ $i -lt 200 ]; do head -c 3000 /dev/urandom > /v/small/$i; i=$((i + 1)); done',
      ]);
      const staging = uniqueName('bigstage');
      global.gc?.();
      const baseline = process.memoryUsage().rss;
      let peak = baseline;
      const sampler = setInterval(() => {
        peak = Math.max(peak, process.memoryUsage().rss);
      }, 5);
      let result;
      try {
        result = await copyVolume({
          from: { engine: engines.a, volume: big },
          to: { engine: engines.b, volume: staging },
          helperImage: engines.image,
          helperLabels: RUN,
          onProgress: () => {
            peak = Math.max(peak, process.memoryUsage().rss);
          },
          progressIntervalMs: 20,
        });
      } finally {
        clearInterval(sampler);
      }
      peak = Math.max(peak, process.memoryUsage().rss);
      const growthMiB = (peak - baseline) / 1024 / 1024;
      expect(result.bytes).toBe(10 * 20 * 1048576 + 200 * 3000);
      expect(result.files).toBe(210);
      expect(growthMiB, `RSS grew by ${growthMiB.toFixed(1)} MiB`).toBeLessThan(64);
      const sum = (e: 'a' | 'b', v: string) =>
        engines.podman(e, ['run', '--rm', '-v', `${v}:/v:ro`, engines.image, 'sh', '-c', 'cd /v && find . -type f -exec sha256sum {} + | sort -k 2 | sha256sum']);
      expect(sum('b', staging)).toBe(sum('a', big));
      await engines.b.removeVolume(staging);
    }, 120_000);

    it('stops when aborted, removing its helpers and leaving the source intact', async () => {
      const ac = new AbortController();
      const staging = uniqueName('aborted');
      const err = await copyVolume({
        from: { engine: engines.a, volume: big },
        to: { engine: engines.b, volume: staging },
        helperImage: engines.image,
        helperLabels: RUN,
        progressIntervalMs: 0,
        onProgress: (p) => {
          if (p.transferredBytes > 20 * 1048576) ac.abort(new Error('cancelled by test'));
        },
        signal: ac.signal,
      }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(Error);
      expect((err as Error).message).toBe('cancelled by test');
      expect(await helpersLeft(engines)).toEqual([[], []]);
      expect(engines.podman('a', ['run', '--rm', '-v', `${big}:/v:ro`, engines.image, 'sh', '-c', 'ls /v | wc -l']).trim()).toBe('11');
    }, 60_000);
  });
});
