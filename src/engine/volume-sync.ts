/**
 * Keeps a copy of a volume on another engine in step with the source, in rounds, while the
 * source may still be in use: the way a migration moves data with a pause that does not grow
 * with the volume.
 *
 *   engine A: helper S (source volume, read-only, idling)      engine B: helper T (staging volume)
 *   round 1  S snapshots; GET S archive of the whole volume ──► PUT into T (streamed, never held)
 *   round k  S snapshots and picks what changed since the last snapshot began (sync-scripts.ts);
 *            T removes what the source no longer has; S tars the changes ──► PUT into T
 *   prepare  (still running) both list what they store; T mends owners and modes an archive did
 *            not carry, keeps the paths where the lists differ, and sends those back to S with
 *            its copies of the big files the last round sent again (rewritten in place)
 *   final    (source stopped) S picks only what changed since the last snapshot began, with its
 *            list lines (of a file T sent back a copy of, only the blocks that differ from it)
 *            ──► T applies it and checks those lines, each patched file's md5, and that every
 *            earlier difference was among them: time proportional to the change, not the volume
 *   verify   (a copy of a volume not in use) both lists whole must be identical (and, on request,
 *            every file's sha256)
 *
 * Both helpers run an idle loop so every step is an exec (tens of ms) rather than a new
 * container. They carry the caller's labels, and are removed by close() (never the volumes).
 * The source volume is mounted read-only and only read.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { PassThrough, type Readable } from 'node:stream';
import { collectExec, ensureImage, type EngineClient } from './engine-client.js';
import { NotFoundError, VerificationError } from './engine-errors.js';
import {
  ARMED_MARK,
  BACK_DIR,
  checksums,
  flushVolume,
  IDLE,
  isEmpty,
  MOUNT,
  OUT_DIR,
  sourceBatch,
  sourceChooseAgain,
  sourceAddMissing,
  sourceChooseAll,
  sourceFinal,
  sourceLists,
  sourceMeasure,
  sourcePrepare,
  sourceRound,
  targetFinal,
  targetPrepare,
  targetPrune,
  targetVerify,
  WORK_DIR,
} from './sync-scripts.js';
import { transferArchive } from './archive-relay.js';

export const HELPER_LABEL = 'berth.volume-copy';

/**
 * BERTH_SYNC_TRACE=1: the final pass writes on stderr when each step begins and ends (JS side)
 * and the scripts' own stage marks (`: T:name` lines), all as the host's uptime (containers share
 * /proc/uptime), so where the pause goes can be read off one run. Off: the marks stay no-ops.
 */
const TRACE = process.env.BERTH_SYNC_TRACE === '1';
const uptime = (): string => readFileSync('/proc/uptime', 'utf8').split(' ')[0] ?? '';
const trace = (what: string): void => {
  if (TRACE) process.stderr.write(`T ${uptime()} ${what}\n`);
};
const traced = (script: string): string => (TRACE ? script.replace(/^: T:(\S+)$/gm, 'read u _ < /proc/uptime; echo "T $u $1" >&2') : script);

export interface SyncSide {
  engine: EngineClient;
  volume: string;
}

export interface SyncOptions {
  from: SyncSide;
  /** The destination (a staging volume the caller chose): created when missing, must be empty. */
  to: SyncSide & { labels?: Record<string, string> };
  /** Image of the helpers: needs busybox (sh, find, stat, awk, sort, tar, cmp, dd, md5sum, sha256sum, truncate, touch, sync). */
  helperImage: string;
  helperLabels?: Record<string, string>;
  signal?: AbortSignal;
}

export interface RoundResult {
  /** 1 for the full copy, then 2, 3, … */
  round: number;
  /** Entries and regular-file bytes the source holds at this round's snapshot. */
  entries: number;
  totalBytes: number;
  /** What this round sent: entries, their file bytes, and archive bytes on the wire. */
  sentEntries: number;
  sentBytes: number;
  transferredBytes: number;
  /** Entries removed from the target because the source no longer had them (or changed type). */
  removed: number;
  /** A batch failed while the source was in use; the next round sends again what this one chose. */
  incomplete?: boolean;
}

export interface SyncProgress {
  round: number;
  /** Archive bytes moved in this round so far. */
  transferredBytes: number;
  /** In the first round: regular files and their bytes seen so far. */
  counts?: { files: number; bytes: number };
  /** Once, as a round starts: about how many archive bytes it will send. */
  expectedBytes?: number;
}

export interface VerifyResult {
  entries: number;
  files: number;
  bytes: number;
  /** Entries whose owner or mode the target had to mend (podman's archives lose owners). */
  mended: number;
  checksums: boolean;
}

export class DestinationNotEmptyError extends Error {
  override name = 'DestinationNotEmptyError';
}

/** `<entries> <files> <bytes> <sha256>` of a verification list. */
function listSummary(engine: EngineClient, text: string): { entries: number; files: number; bytes: number; sha256: string } {
  const parts = text.trim().split(/\s+/);
  const [entries, files, bytes] = parts.slice(0, 3).map(Number) as [number, number, number];
  const sha256 = parts[3] ?? '';
  if (parts.length !== 4 || ![entries, files, bytes].every(Number.isSafeInteger) || !/^[0-9a-f]{64}$/.test(sha256)) {
    throw new Error(`volume helper on ${engine.endpoint} printed ${JSON.stringify(text.slice(0, 300))}`);
  }
  // Every list holds at least the volume root (`.`): an empty one means the listing did not run.
  if (entries < 1) throw new Error(`volume helper on ${engine.endpoint} listed nothing`);
  return { entries, files, bytes, sha256 };
}

const summaryOf = (engine: EngineClient, text: string, count: number): number[] => {
  const parts = text.trim().split(/\s+/);
  const nums = parts.slice(0, count).map(Number);
  if (parts.length < count || nums.some((n) => !Number.isSafeInteger(n))) throw new Error(`volume helper on ${engine.endpoint} printed ${JSON.stringify(text.slice(0, 300))}`);
  return nums;
};

type Started = Awaited<ReturnType<EngineClient['exec']>>;
type StartedWithInput = Awaited<ReturnType<EngineClient['execWithInput']>>;

/** A helper script's output, or an error with it when the script failed. */
function exitedZero<T extends { exitCode: number; stdout: string; stderr: string }>(side: SyncSide, r: T): T {
  if (r.exitCode !== 0) throw new Error(`volume helper on ${side.engine.endpoint} (volume ${side.volume}) exited with ${r.exitCode}: ${`${r.stdout}\n${r.stderr}`.trim().slice(0, 500)}`);
  return r;
}

/**
 * Resolves once an armed final-pass exec has written ARMED_MARK (its shell runs); its output
 * goes on after the mark for whoever reads it next. Bounded: a helper that never gets there fails.
 */
async function untilArmed(side: SyncSide, x: Started): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`volume helper on ${side.engine.endpoint} (volume ${side.volume}): the final pass's exec did not start within ${ARM_BOUND_MS / 1000} s`)), ARM_BOUND_MS);
  });
  try {
    // An abort ends both execs' streams (engine-client), and so this wait.
    for (;;) {
      const next = await Promise.race([x.output.next(), bound]);
      if (next.done) throw new Error(`volume helper on ${side.engine.endpoint} (volume ${side.volume}): the final pass's exec ended before it was armed`);
      if (next.value.stream === 'stderr' && next.value.data.toString('utf8').includes(ARMED_MARK)) return;
    }
  } finally {
    clearTimeout(timer);
  }
}
const ARM_BOUND_MS = 120_000;

/**
 * Lets a started exec go: closes its input when it has one (a final pass never started ends on end
 * of file) and reads its output to its end in the background (it ends when its helper goes).
 */
const drain = (x: Started | StartedWithInput): void => {
  if ('input' in x) x.input.destroy();
  void (async () => {
    for await (const _ of x.output);
  })().catch(() => undefined);
};

export class VolumeSync {
  private src = '';
  /** The final pass's two execs, started before the source stops and waiting (armFinal). */
  private armed: { pass: number; source: StartedWithInput; target: Started } | undefined;
  private dst = '';
  private rounds = 0;
  /** Whether prepareFinal ran after the latest round (the final pass needs it). */
  private prepared = false;
  /** The target writing the full copy out, started after the first round (flushVolume). */
  private flushing: Promise<unknown> | undefined;
  private readonly o: SyncOptions;

  private constructor(o: SyncOptions) {
    this.o = o;
  }

  /** Starts both helpers (creating the destination volume when missing). Close it whatever happens. */
  static async open(o: SyncOptions): Promise<VolumeSync> {
    const s = new VolumeSync(o);
    try {
      await s.start();
    } catch (err) {
      await s.close();
      throw err;
    }
    return s;
  }

  private async start(): Promise<void> {
    const { from, to, signal } = this.o;
    signal?.throwIfAborted();
    await from.engine.inspectVolume(from.volume, { signal });
    try {
      await to.engine.inspectVolume(to.volume, { signal });
    } catch (err) {
      if (!(err instanceof NotFoundError)) throw err;
      await to.engine.createVolume(to.volume, { labels: to.labels ?? {}, signal });
    }
    await Promise.all([ensureImage(from.engine, this.o.helperImage, { signal }), ensureImage(to.engine, this.o.helperImage, { signal })]);
    const helper = async (side: SyncSide, readOnly: boolean) => {
      const { Id } = await side.engine.createContainer(
        `berth-vcopy-${randomUUID().slice(0, 13)}`,
        {
          image: this.o.helperImage,
          cmd: IDLE,
          volumes: [{ volume: side.volume, target: MOUNT, readOnly, noCopy: true }],
          networkMode: 'none',
          labels: { [HELPER_LABEL]: readOnly ? 'source' : 'destination', ...this.o.helperLabels },
        },
        { signal },
      );
      return Id;
    };
    [this.src, this.dst] = await Promise.all([helper(from, true), helper(to, false)]);
    await Promise.all([from.engine.startContainer(this.src, { signal }), to.engine.startContainer(this.dst, { signal })]);
    await this.run(to, this.dst, `mkdir -p ${WORK_DIR}`);
  }

  /** Starts a script in a helper; its output must be consumed (collect, pipeExec) or drained. */
  private async startExec(side: SyncSide, id: string, script: string): Promise<Started> {
    trace(`exec on ${side === this.o.from ? 'source' : 'target'}: create + start`);
    const started = await side.engine.exec(id, ['sh', '-c', traced(script)], { signal: this.o.signal });
    trace(`exec on ${side === this.o.from ? 'source' : 'target'}: started (answer headers)`);
    return started;
  }

  /** Starts the source's final pass with its stdin open: one line on it starts the pass (AWAIT_INPUT). */
  private async startExecWithInput(script: string): Promise<StartedWithInput> {
    trace('exec on source: create + start (input open)');
    const started = await this.o.from.engine.execWithInput(this.src, ['sh', '-c', traced(script)], { signal: this.o.signal });
    trace('exec on source: started (upgraded)');
    return started;
  }

  /** Runs a script in a helper; its stdout, or an error with its output. */
  private async run(side: SyncSide, id: string, script: string): Promise<{ stdout: string; stderr: string }> {
    return exitedZero(side, await side.engine.execScript(id, script, { signal: this.o.signal }));
  }

  /** Copies the source's W/out directory (snapshot, lists) into the target's W. */
  private async shipOut(): Promise<void> {
    const { from, to, signal } = this.o;
    await to.engine.putArchive(this.dst, WORK_DIR, await from.engine.getArchive(this.src, OUT_DIR, { signal }), { signal });
  }

  /** Copies a file or directory of the target's W into the source's W (what the source must know of the copy). */
  private async shipBack(path: string): Promise<void> {
    const { from, to, signal } = this.o;
    await from.engine.putArchive(this.src, WORK_DIR, await to.engine.getArchive(this.dst, path, { signal }), { signal });
  }

  /**
   * One round. The first sends the whole volume (the target must be empty); later ones send what
   * changed since the previous round's snapshot and remove what is gone. `sourceInUse`: entries
   * may vanish while the round runs (they are left to the next round). `count`: the first round
   * reports files and bytes as they pass (parsing the archive).
   */
  async round(onProgress?: (p: SyncProgress) => void, opts: { sourceInUse?: boolean; count?: boolean } = {}): Promise<RoundResult> {
    const { from, to, signal } = this.o;
    if (this.armed) throw new Error('a round after armFinal: the final pass is armed');
    const round = ++this.rounds;
    this.prepared = false;
    if (round === 1) {
      const empty = (await this.run(to, this.dst, isEmpty)).stdout.trim();
      if (empty !== 'empty') throw new DestinationNotEmptyError(`destination volume ${to.volume} on ${to.engine.endpoint} is not empty`);
    }
    const [entries = 0, totalBytes = 0, changed = 0, changedBytes = 0, batches = 0, expectAll = 0, expectChanged = 0] = summaryOf(
      from.engine,
      (await this.run(from, this.src, sourceRound(round === 1, opts.sourceInUse ?? false))).stdout,
      7,
    );
    onProgress?.({ round, transferredBytes: 0, expectedBytes: round === 1 ? expectAll : expectChanged });
    const progress = (transferredBytes: number, counts?: { files: number; bytes: number }) => onProgress?.({ round, transferredBytes, ...(counts ? { counts } : {}) });
    if (round === 1) {
      const rootStat = await from.engine.statPath(this.src, MOUNT, { signal });
      let moved = 0;
      try {
        moved = await transferArchive({
          from: from.engine,
          to: to.engine,
          src: this.src,
          dst: this.dst,
          rootStat,
          signal,
          count: opts.count ?? false,
          onChunk: (n, counts) => progress((moved = n), counts && { ...counts }),
        });
      } catch (err) {
        // A file rewritten while the engine archived it (see below): with the source in use the
        // next round sends everything again (its snapshot start goes back to the beginning of
        // time) and removes what this one left half-written.
        if (!opts.sourceInUse || signal?.aborted) throw err;
        await this.run(from, this.src, sourceChooseAll);
        return { round, entries, totalBytes, sentEntries: 0, sentBytes: 0, transferredBytes: moved, removed: 0, incomplete: true };
      }
      // The full copy starts going to disk while the next rounds run (prepareFinal waits for it).
      this.flushing ??= this.run(to, this.dst, flushVolume).catch(() => undefined);
      return { round, entries, totalBytes, sentEntries: entries, sentBytes: totalBytes, transferredBytes: moved, removed: 0 };
    }
    await this.shipOut();
    const [removed = 0, missing = 0] = summaryOf(to.engine, (await this.run(to, this.dst, targetPrune)).stdout, 2);
    let allBatches = batches;
    if (missing > 0) {
      // The target lacks entries that did not change (an earlier archive ended early): sent too.
      await this.shipBack(`${WORK_DIR}/missing`);
      allBatches = summaryOf(from.engine, (await this.run(from, this.src, sourceAddMissing)).stdout, 1)[0] ?? batches;
    }
    let transferredBytes = 0;
    try {
      for (let n = 0; n < allBatches; n++) {
        transferredBytes += await this.pipeExec(sourceBatch(n), MOUNT, (moved) => progress(transferredBytes + moved), opts.sourceInUse ?? false);
      }
    } catch (err) {
      // A file rewritten while tar read it makes a short archive that the target refuses. With the
      // source in use that is no failure: the next round (or the final pass, with the source
      // stopped) chooses again from this round's starting point.
      if (!opts.sourceInUse || signal?.aborted) throw err;
      await this.run(from, this.src, sourceChooseAgain);
      return { round, entries, totalBytes, sentEntries: changed, sentBytes: changedBytes, transferredBytes, removed, incomplete: true };
    }
    return { round, entries, totalBytes, sentEntries: changed, sentBytes: changedBytes, transferredBytes, removed };
  }

  /**
   * Runs a script on the source whose stdout is a tar, and extracts it into `path` on the target
   * as it comes. Resolves the bytes moved. `vanishing`: tar's complaints about entries removed
   * while it ran are not failures (the source is in use; the next round sees them gone).
   */
  private async pipeExec(script: string | Started, path: string, onBytes: (n: number) => void, vanishing: boolean): Promise<number> {
    const { from, to, signal } = this.o;
    const { output, exitCode } = typeof script === 'string' ? await this.startExec(from, this.src, script) : script;
    const tar = new PassThrough({ highWaterMark: 1024 * 1024 });
    let stderr = '';
    let moved = 0;
    // Room to write again, or the stream is gone (the target refused the archive).
    const writable = () =>
      new Promise<void>((resolve) => {
        const done = () => {
          tar.off('drain', done);
          tar.off('close', done);
          resolve();
        };
        tar.on('drain', done);
        tar.on('close', done);
      });
    const pump = (async () => {
      try {
        for await (const f of output) {
          if (f.stream === 'stdout') {
            if (moved === 0) trace('source exec: first stdout byte');
            moved += f.data.length;
            if (!tar.write(f.data)) await writable();
            if (tar.destroyed) break;
            onBytes(moved);
          } else if (f.stream === 'stderr') {
            const text = f.data.toString('utf8');
            if (TRACE) process.stderr.write(text.replace(/^(?!T ).*\n?/gm, ''));
            if (stderr.length < 2000) stderr += text.replace(/^T .*\n?/gm, '');
          }
        }
        trace(`source exec: stdout ended (${moved} bytes)`);
        tar.end();
      } catch (err) {
        tar.destroy(err as Error);
        throw err;
      }
    })();
    try {
      await Promise.all([to.engine.putArchive(this.dst, path, tar as Readable, { signal }), pump]);
    } catch (err) {
      // The target refused the archive: stop reading the source's exec too.
      tar.destroy();
      await output.return(undefined).catch(() => undefined);
      throw err;
    }
    trace('target archive: PUT answered');
    const code = await exitCode();
    trace('source exec: exit code read');
    const vanished =
      vanishing &&
      stderr
        .trim()
        .split('\n')
        .every((l) => /No such file or directory/.test(l));
    if (code !== 0 && !vanished) throw new Error(`volume helper on ${from.engine.endpoint} (volume ${from.volume}) exited with ${code}: ${stderr.trim().slice(0, 500)}`);
    return moved;
  }

  /** About how many archive bytes a full copy of the source sends (a walk of sizes; it may be in use). */
  async measure(): Promise<number> {
    return summaryOf(this.o.from.engine, (await this.run(this.o.from, this.src, sourceMeasure)).stdout, 1)[0] ?? 0;
  }

  /**
   * After the last round while the source runs: the target mends owners and modes and notes
   * where both sides differ now, so the final pass checks only what changed after that round's
   * snapshot began (sync-scripts.ts). Resolves how many paths differ now.
   */
  async prepareFinal(): Promise<number> {
    const { from, to } = this.o;
    listSummary(from.engine, (await this.run(from, this.src, sourcePrepare)).stdout);
    await this.shipOut();
    const differing = summaryOf(to.engine, (await this.run(to, this.dst, targetPrepare)).stdout, 1)[0] ?? 0;
    // The source needs those paths too (the final pass says which of them it still has), and the
    // target's copies of the files rewritten in place (it sends those as block patches).
    await this.shipBack(BACK_DIR);
    // The copy's dirty pages written out now, while the source runs, not during the pause.
    await this.flushing;
    await Promise.all([this.run(from, this.src, flushVolume), this.run(to, this.dst, flushVolume)]);
    this.prepared = true;
    return differing;
  }

  /**
   * Right before the source stops (after prepareFinal): starts the final pass's exec on both
   * sides, each waiting — the source for a line on its stdin from finalPass (AWAIT_INPUT), the
   * target for the end of the archive the source sends (AWAIT) — so the pause holds no exec
   * start-up, and no engine call starts the pass (a kill or exec right after the application's
   * stop waited 0.3–0.7 s for the engine to finish that stop).
   */
  async armFinal(): Promise<void> {
    const { from, to } = this.o;
    if (!this.prepared) await this.prepareFinal();
    if (this.armed) return;
    const pass = this.rounds + 1;
    const [source, target] = await Promise.allSettled([this.startExecWithInput(sourceFinal(pass)), this.startExec(to, this.dst, targetFinal(pass))]);
    if (source.status === 'rejected' || target.status === 'rejected') {
      for (const x of [source, target]) if (x.status === 'fulfilled') drain(x.value);
      throw source.status === 'rejected' ? source.reason : (target as PromiseRejectedResult).reason;
    }
    try {
      await Promise.all([untilArmed(from, source.value), untilArmed(to, target.value)]);
    } catch (err) {
      drain(source.value);
      drain(target.value);
      throw err;
    }
    trace('final pass: armed (both shells run)');
    this.armed = { pass, source: source.value, target: target.value };
  }

  /**
   * The last pass, with the source stopped (after prepareFinal): one exec on the source picks
   * what changed since the last round's snapshot began and packs it with its verification lines,
   * one upload carries that, one exec on the target applies it and checks it; each in time
   * proportional to the change, not the volume (but for one lstat walk of the source). A
   * VerificationError unless both sides agree. With `checksums`, every file's sha256 is compared
   * too (that reads the whole volume on both sides: the pause then grows with it).
   */
  async finalPass(opts: { checksums?: boolean; onProgress?: (p: SyncProgress) => void; onUploaded?: () => void } = {}): Promise<RoundResult & VerifyResult> {
    const { from, to } = this.o;
    const withChecksums = opts.checksums ?? false;
    if (!this.armed) await this.armFinal();
    const { source, target } = this.armed as NonNullable<typeof this.armed>;
    this.armed = undefined;
    const round = ++this.rounds;
    trace('final pass: go');
    let transferredBytes = 0;
    try {
      await new Promise<void>((resolve, reject) =>
        source.input.write('go\n', (err) =>
          err ? reject(new Error(`volume helper on ${from.engine.endpoint} (volume ${from.volume}) did not take the final pass's start: ${err.message}`)) : resolve(),
        ),
      );
      trace('final pass: start written');
      transferredBytes = await this.pipeExec(source, WORK_DIR, (n) => opts.onProgress?.({ round, transferredBytes: n }), false);
    } catch (err) {
      drain(source);
      drain(target);
      throw err;
    }
    source.input.destroy();
    opts.onUploaded?.();
    const r = await collectExec(target);
    trace('exec on target: exit code read');
    exitedZero(to, r);
    if (TRACE) process.stderr.write(r.stderr.replace(/^(?!T ).*\n?/gm, ''));
    r.stderr = r.stderr.replace(/^T .*\n?/gm, '');
    const [sentEntries = 0, sentBytes = 0, removed = 0, mended = 0, entries = 0, files = 0, bytes = 0, problems = 0] = summaryOf(to.engine, r.stdout, 8);
    if (problems > 0) {
      const lines = r.stderr.split('\n').filter(Boolean);
      throw new VerificationError(`volume ${to.volume} (${to.engine.endpoint}) does not match ${from.volume} (${from.engine.endpoint}) after the last pass: ${lines.slice(0, 5).join('; ')}`, lines);
    }
    if (withChecksums) await this.compareChecksums();
    return { round, entries, totalBytes: bytes, sentEntries, sentBytes, transferredBytes, removed, files, bytes, mended, checksums: withChecksums };
  }

  private compare(source: ReturnType<typeof listSummary>, target: ReturnType<typeof listSummary>, stderr: string): void {
    const { from, to } = this.o;
    if (target.sha256 === source.sha256 && target.entries === source.entries) return;
    const counts = `${source.entries} entries, ${source.files} files, ${source.bytes} bytes → ${target.entries} entries, ${target.files} files, ${target.bytes} bytes`;
    const lines = stderr.split('\n').filter(Boolean);
    throw new VerificationError(`volume ${to.volume} (${to.engine.endpoint}) does not match ${from.volume} (${from.engine.endpoint}): ${counts}; ${lines.slice(0, 5).join('; ')}`, [counts, ...lines]);
  }

  private async compareChecksums(): Promise<void> {
    const { from, to } = this.o;
    const [a, b] = await Promise.all([this.run(from, this.src, checksums), this.run(to, this.dst, checksums)]);
    if (a.stdout.trim() !== b.stdout.trim()) {
      throw new VerificationError(`file contents of ${to.volume} (${to.engine.endpoint}) differ from ${from.volume} (${from.engine.endpoint}): sha256 lists ${a.stdout.trim()} → ${b.stdout.trim()}`, [
        'sha256 lists differ',
      ]);
    }
  }

  /**
   * Compares what both volumes store (after one more round, when the source may have changed):
   * a VerificationError naming the differences unless they are identical. With `withChecksums`,
   * every file's sha256 is compared too (computed inside both engines).
   */
  async verify(withChecksums = false): Promise<VerifyResult> {
    const { from, to } = this.o;
    const source = listSummary(from.engine, (await this.run(from, this.src, sourceLists)).stdout);
    await this.shipOut();
    const r = await this.run(to, this.dst, targetVerify);
    const [mendedText = '', ...rest] = r.stdout.trim().split(/\s+/);
    const target = listSummary(to.engine, rest.join(' '));
    this.compare(source, target, r.stderr);
    if (withChecksums) await this.compareChecksums();
    return { entries: source.entries, files: source.files, bytes: source.bytes, mended: Number(mendedText) || 0, checksums: withChecksums };
  }

  /** Removes both helpers (never the volumes), whatever state they are in. */
  async close(): Promise<void> {
    const { from, to } = this.o;
    const armed = this.armed;
    this.armed = undefined;
    await Promise.allSettled([
      this.src ? from.engine.removeContainer(this.src, { force: true, removeVolumes: false }) : undefined,
      this.dst ? to.engine.removeContainer(this.dst, { force: true, removeVolumes: false }) : undefined,
    ]);
    // Execs armed for a final pass that never ran end with their helpers.
    if (armed) for (const x of [armed.source, armed.target]) drain(x);
  }
}
