/**
 * VolumeSync between two real engines: rounds after the first carry every kind of change exactly
 * (content of the same size in the same second, modes, owners, deletions, type changes both ways,
 * renames, retargeted links, new nested directories), remove what the target holds but the source
 * does not, and a copy made while a writer runs is exact after the writer stops and the final
 * pass runs. Ground truth is busybox inside containers run with the podman CLI.
 */
import { describe, expect, it } from 'vitest';
import { WORK_DIR } from '../../src/engine/sync-scripts.js';
import { VolumeSync } from '../../src/engine/volume-sync.js';
import { enginesAvailable, uniqueName, useEngines, type TestEngines } from '../helpers/engines.js';

const RUN = { 'berth.test-run': uniqueName('vsync') };

/** Every entry (type, size, permissions, owner, link target) and every file's sha256. */
function truth(engines: TestEngines, engine: 'a' | 'b', volume: string): string {
  return engines.podman(engine, [
    'run',
    '--rm',
    '--network',
    'none',
    '-v',
    `${volume}:/v:ro`,
    engines.image,
    'sh',
    '-c',
    'cd /v && find . -exec stat -c "%n|%F|%s|%a|%u:%g|%N" {} + | sort && echo --- && find . -type f -exec sha256sum {} + | sort -k 2',
  ]);
}

const sh = (engines: TestEngines, engine: 'a' | 'b', volume: string, script: string) =>
  engines.podman(engine, ['run', '--rm', '--network', 'none', '-v', `${volume}:/v`, engines.image, 'sh', '-c', `set -e; cd /v; ${script}`]);

describe.skipIf(!enginesAvailable)('VolumeSync rounds', () => {
  const engines = useEngines();

  /** A source volume on a, filled by `script` (run in it), and a name for its copy on b. */
  function filled(name: string, script: string): { src: string; dst: string } {
    const src = uniqueName(name);
    engines.podman('a', ['volume', 'create', src]);
    sh(engines, 'a', src, script);
    return { src, dst: uniqueName(`${name}-dst`) };
  }

  /**
   * Changes are found by change time in whole seconds from the second a round's snapshot began:
   * waiting past that second makes what exists now no change of the rounds that follow.
   */
  const pastThisSecond = () => new Promise((r) => setTimeout(r, 2_100));

  async function opened(src: string, dst: string): Promise<VolumeSync> {
    return VolumeSync.open({ from: { engine: engines.a, volume: src }, to: { engine: engines.b, volume: dst }, helperImage: engines.image, helperLabels: RUN });
  }

  it('a second round carries every kind of change exactly, and removes what the target holds that the source does not', async () => {
    const { src, dst } = filled(
      'src',
      `
      mkdir -p d was-dir keep/inner
      printf AAAA > same-size; printf two > f2; printf gone > to-delete; printf file > was-file
      printf x > was-dir/child; ln -s same-size link; printf owned > owned; chown 1000:1000 owned
      printf stays > keep/inner/stays`,
    );
    const sync = await opened(src, dst);
    try {
      const first = await sync.round();
      expect(first).toMatchObject({ round: 1, removed: 0 });
      // Changes right after the first snapshot (most in the same second as it).
      sh(
        engines,
        'a',
        src,
        `
        printf BBBB > same-size
        chmod 600 f2; chown 2000:2001 owned
        rm to-delete
        rm -r was-dir; printf now-a-file > was-dir
        rm was-file; mkdir was-file; printf inner > was-file/inner
        ln -sfn f2 link
        mv f2 f2-renamed
        mkdir -p new/deep; printf n > new/deep/file; chmod 700 new`,
      );
      // Something the copy caught that the source no longer has (made, copied, deleted in between).
      sh(engines, 'b', dst, 'printf stray > stray; mkdir -p stray-dir/x');
      const second = await sync.round();
      expect(second.round).toBe(2);
      expect(second.removed).toBeGreaterThanOrEqual(4); // to-delete, was-dir/child, was-dir, was-file, f2, stray, stray-dir…
      expect(second.sentEntries).toBeLessThan(first.entries + 5);
      const v = await sync.verify(true);
      expect(v).toMatchObject({ checksums: true });
    } finally {
      await sync.close();
    }
    expect(truth(engines, 'b', dst)).toBe(truth(engines, 'a', src));
    expect(engines.podman('b', ['ps', '-a', '--filter', `label=berth.test-run=${RUN['berth.test-run']}`, '--format', '{{.ID}}']).trim()).toBe('');
  }, 120_000);

  it('with a writer running during the rounds: exact after the writer stops and the final pass runs', async () => {
    const { src, dst } = filled('busy', 'dd if=/dev/urandom of=base.bin bs=1048576 count=8 2>/dev/null; mkdir logs tmp');
    const writer = uniqueName('writer');
    engines.podman('a', [
      'run',
      '-d',
      '--name',
      writer,
      '--network',
      'none',
      '-v',
      `${src}:/v`,
      engines.image,
      'sh',
      '-c',
      `trap 'exit 0' TERM; cd /v; i=0; while :; do i=$((i + 1)); echo "line $i" >> logs/app.log; head -c $((i % 7000 + 1)) /dev/urandom > state.bin; : > "tmp/t$i"; rm -f "tmp/t$((i - 3))"; [ $((i % 50)) -eq 0 ] && dd if=/dev/urandom of=base.bin bs=4096 count=1 seek=$((i % 2000)) conv=notrunc 2>/dev/null; sleep 0.01; done`,
    ]);
    const sync = await opened(src, dst);
    try {
      for (let k = 0; k < 4; k++) expect((await sync.round(undefined, { sourceInUse: true })).round).toBe(k + 1);
      engines.podman('a', ['stop', '-t', '5', writer]);
      const last = await sync.finalPass({ checksums: true });
      expect(last).toMatchObject({ round: 5, checksums: true });
      expect(last.sentEntries).toBeGreaterThan(0); // the log grew since the fourth round
    } finally {
      await sync.close();
      engines.podman('a', ['rm', '-f', writer]);
    }
    expect(truth(engines, 'b', dst)).toBe(truth(engines, 'a', src));
  }, 120_000);
  it('the final pass carries every kind of change made after the prepared round, and checks only what changed', async () => {
    const { src, dst } = filled(
      'fin',
      `
      mkdir -p tree/a/b keep gone-dir/sub moved-dir/inner
      i=0; while [ $i -lt 200 ]; do printf "$i" > "keep/f $i"; i=$((i + 1)); done
      printf x > tree/a/b/leaf; printf y > gone-dir/sub/z; printf m > moved-dir/inner/file
      printf same > same; printf mode > mode; printf own > own; printf t > type-change; printf l > linked
      ln -s same link`,
    );
    // Else, on a machine fast enough to make both rounds and the preparation in the fill's second,
    // the 200 files are changes of that second still and go again (rightly).
    await pastThisSecond();
    const sync = await opened(src, dst);
    try {
      await sync.round();
      await sync.round();
      expect(await sync.prepareFinal()).toBe(0);
      // After the prepared round: the source changes in every way, then stops (the final pass).
      sh(
        engines,
        'a',
        src,
        `
        printf SAME > same; chmod 600 mode; chown 3000:3001 own
        rm -r gone-dir; mv moved-dir tree/a/moved-here
        rm type-change; mkdir type-change; printf in > type-change/in
        ln -sfn mode link; ln linked hard-link; rm "keep/f 7"
        mkdir -p fresh/deep; printf n > fresh/deep/n`,
      );
      const last = await sync.finalPass();
      // Only the change is sent: not the 200 files that did not move.
      expect(last.sentEntries).toBeLessThan(30);
      expect(last.removed).toBeGreaterThan(0);
      expect(truth(engines, 'b', dst)).toBe(truth(engines, 'a', src));
      const counted = engines
        .podman('a', [
          'run',
          '--rm',
          '--network',
          'none',
          '-v',
          `${src}:/v:ro`,
          engines.image,
          'sh',
          '-c',
          "cd /v && find . | wc -l && find . -type f | wc -l && find . -type f -exec stat -c %s {} + | awk '{ s += $1 } END { print s }'",
        ])
        .trim()
        .split(/\s+/)
        .map(Number);
      // The totals come from the prepared list less what the pass sent or removed (a gone
      // directory takes its subtree), plus what it sent: they must be the source's as it is now.
      expect([last.entries, last.files, last.bytes]).toEqual(counted);
    } finally {
      await sync.close();
    }
  }, 120_000);

  it('a later round sends again what the target lacks though it did not change (an archive that ended early)', async () => {
    const { src, dst } = filled('short', 'mkdir -p d/e f; i=0; while [ $i -lt 40 ]; do printf "$i" > "d/e/$i"; printf "$i" > "f/$i"; i=$((i + 1)); done; ln -s d/e link');
    // Unchanged since before the first snapshot's second: no rule of change picks them again.
    await pastThisSecond();
    const sync = await opened(src, dst);
    try {
      await sync.round();
      // What a first archive cut short (podman ends it with 200 and a closed tar) leaves behind.
      sh(engines, 'b', dst, 'rm -r d/e f/3 f/17 link');
      const second = await sync.round();
      expect(second.transferredBytes).toBeGreaterThan(0);
      await sync.verify(true);
    } finally {
      await sync.close();
    }
    expect(truth(engines, 'b', dst)).toBe(truth(engines, 'a', src));
  }, 120_000);

  it('a directory renamed over another path sends its whole subtree, in a round and in the final pass', async () => {
    // Same names and sizes on both sides of each swap, other content: only the inode of the
    // directory tells the new subtree from the old one.
    const pair = (d: string) =>
      `mkdir -p ${d}/sub ${d}.new/sub; printf old > ${d}/x; printf new > ${d}.new/x; printf o > ${d}/sub/y; printf n > ${d}.new/sub/y; printf gone > ${d}/sub/only-old; printf here > ${d}.new/sub/only-new`;
    const { src, dst } = filled('swap', `${pair('round')}; ${pair('final')}`);
    // Older than the snapshots that follow: no change time picks the children again.
    await pastThisSecond();
    const sync = await opened(src, dst);
    try {
      await sync.round();
      sh(engines, 'a', src, 'rm -r round; mv round.new round');
      await sync.round();
      await sync.verify(true);
      await sync.prepareFinal();
      sh(engines, 'a', src, 'rm -r final; mv final.new final');
      await sync.finalPass({ checksums: true });
    } finally {
      await sync.close();
    }
    expect(truth(engines, 'b', dst)).toBe(truth(engines, 'a', src));
  }, 120_000);

  /** Every regular file's mtime (whole seconds), sorted by path. */
  const mtimes = (engine: 'a' | 'b', volume: string) =>
    engines.podman(engine, ['run', '--rm', '--network', 'none', '-v', `${volume}:/v:ro`, engines.image, 'sh', '-c', 'cd /v && find . -type f -exec stat -c "%n %Y" {} + | sort']);

  it('files rewritten in place go in the final pass as the blocks that differ, exact in content, size and mtime', async () => {
    const mib = (name: string, n: number) => `dd if=/dev/urandom of=${name} bs=1048576 count=${n} 2>/dev/null`;
    const { src, dst } = filled(
      'blocks',
      [mib('a.bin', 2), mib('grow.bin', 1), mib('shrink.bin', 1), mib('whole.bin', 1), mib('same.bin', 1), mib('linked.bin', 1), 'ln linked.bin linked-too.bin'].join('; '),
    );
    const sync = await opened(src, dst);
    // A block rewritten in each: the second round sends them again, which makes them "hot".
    const poke = (name: string, block: number) => `dd if=/dev/urandom of=${name} bs=4096 count=1 seek=${block} conv=notrunc 2>/dev/null`;
    try {
      await sync.round();
      sh(engines, 'a', src, ['a.bin', 'grow.bin', 'shrink.bin', 'whole.bin', 'same.bin', 'linked.bin'].map((f) => poke(f, 3)).join('; '));
      await sync.round();
      await sync.prepareFinal();
      sh(
        engines,
        'a',
        src,
        [
          `${poke('a.bin', 0)}; ${poke('a.bin', 1)}; ${poke('a.bin', 300)}; printf 0123456789 | dd of=a.bin bs=1 seek=5000 conv=notrunc 2>/dev/null`,
          'head -c 10000 /dev/urandom >> grow.bin',
          `truncate -s 700001 shrink.bin; ${poke('shrink.bin', 100)}`,
          mib('whole.bin', 1),
          'chmod 600 same.bin',
          poke('linked.bin', 7),
        ].join('; '),
      );
      const last = await sync.finalPass({ checksums: true });
      // Sent whole: whole.bin (all of it changed) and both names of linked.bin (a file with two
      // links is never patched in place); the rest as a few blocks. All of it whole: ~7.7 MiB.
      expect(last.sentBytes).toBeGreaterThanOrEqual(3 * 1048576);
      expect(last.sentBytes).toBeLessThan(3 * 1048576 + 64 * 1024);
      expect(last.transferredBytes).toBeLessThan(2.5 * 1048576);
    } finally {
      await sync.close();
    }
    expect(truth(engines, 'b', dst)).toBe(truth(engines, 'a', src));
    expect(mtimes('b', dst)).toBe(mtimes('a', src));
  }, 120_000);

  it('a patched file that does not come out as the source has it fails the verification', async () => {
    const { src, dst } = filled('patch-bad', 'dd if=/dev/urandom of=db bs=1048576 count=1 2>/dev/null');
    const sync = await opened(src, dst);
    try {
      await sync.round();
      sh(engines, 'a', src, 'dd if=/dev/urandom of=db bs=4096 count=1 seek=9 conv=notrunc 2>/dev/null');
      await sync.round();
      await sync.prepareFinal();
      // The target's copy is damaged after it went to the source (same size, so only
      // the content check after patching can see it); the source then changes another block.
      sh(engines, 'b', dst, 'printf XXXX | dd of=db bs=1 seek=100000 conv=notrunc 2>/dev/null');
      sh(engines, 'a', src, 'dd if=/dev/urandom of=db bs=4096 count=1 seek=20 conv=notrunc 2>/dev/null');
      await expect(sync.finalPass()).rejects.toThrow(/patched file differs from the source's: \.\/db/);
    } finally {
      await sync.close();
    }
  }, 120_000);

  it('the final pass sends a name the last snapshot lacks under a changed directory, though its change time is old', async () => {
    const { src, dst } = filled('unseen', 'mkdir d; printf old > d/old; printf keep > d/keep');
    // Older than the snapshots that follow: only the directory's change can bring d/old again.
    await pastThisSecond();
    const sync = await opened(src, dst);
    try {
      await sync.round();
      await sync.round();
      await sync.prepareFinal();
      // As if the live snapshot had missed d/old (or XFS had swapped it in with its old times)
      // and the target's prune had then removed it: the snapshot lacks it, the target too.
      const helper = engines.podman('a', ['ps', '-q', '--filter', `label=berth.test-run=${RUN['berth.test-run']}`]).trim();
      engines.podman('a', ['exec', helper, 'sh', '-c', `grep -v '|./d/old$' ${WORK_DIR}/snap > ${WORK_DIR}/snap.x; mv ${WORK_DIR}/snap.x ${WORK_DIR}/snap`]);
      sh(engines, 'b', dst, 'rm d/old');
      sh(engines, 'a', src, 'printf new > d/new');
      const last = await sync.finalPass();
      expect(last.sentEntries).toBeLessThan(5);
      expect(truth(engines, 'b', dst)).toBe(truth(engines, 'a', src));
    } finally {
      await sync.close();
    }
  });

  it('the final pass fails verification when the copy differs where the source did not change', async () => {
    const { src, dst } = filled('tamper', 'mkdir d; printf one > d/one; printf two > two');
    // So d/one is not a change of the last rounds (else it is re-sent, and the damage repaired
    // rather than caught).
    await pastThisSecond();
    const sync = await opened(src, dst);
    try {
      await sync.round();
      await sync.round();
      // The copy is damaged where the source does not change again: the prepared lists differ
      // there, and the final pass (which sends only the change) must not pass it over.
      sh(engines, 'b', dst, 'printf damaged-longer > d/one');
      expect(await sync.prepareFinal()).toBe(1);
      sh(engines, 'a', src, 'printf 2 > two');
      // Named with both sides' lines (type, size, mode, owner), so the difference can be read off the error.
      await expect(sync.finalPass()).rejects.toThrow(/does not match.*d\/one \(source f\|3\|[0-7]+\|[0-9]+:[0-9]+\|1\|\.\/d\/one, here f\|14\|/);
    } finally {
      await sync.close();
    }
  });
});
