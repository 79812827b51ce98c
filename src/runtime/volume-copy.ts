/**
 * Copies one named volume from one engine to another as a tar stream, never holding it in
 * memory: source container archive → destination container archive, through two helper
 * containers that are created (never started) only to mount the volumes.
 *
 *   engine A: helper (source volume mounted read-only) ── GET  /containers/{a}/archive?path=/v/.
 *                                                              │  tee → manifest (sha256 per file)
 *   engine B: helper (destination volume, read-write)  ◄─ PUT  /containers/{b}/archive?path=/v
 *
 * Then the destination is read back and its manifest compared with the source's: any
 * difference is a VerificationError. The source volume is mounted read-only and only read.
 * Helpers are removed whatever happens (their volumes are kept).
 */
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { PassThrough } from 'node:stream';
import { ensureImage, type EngineClient } from './engine.js';
import { NotFoundError, VerificationError } from './errors.js';
import { compareManifests, directoryHeader, ManifestSink, manifestOf, type Manifest } from './tar-manifest.js';

/** Where helpers mount the volume: a path no image is expected to have (so nothing is copied up). */
const MOUNT = '/berth-volume';
const HELPER_LABEL = 'berth.volume-copy';

export interface VolumeEndpoint {
  engine: EngineClient;
  volume: string;
}

export interface CopyProgress {
  /** Tar bytes moved so far (headers and padding included). */
  transferredBytes: number;
  /** Regular files and their content bytes seen so far. */
  files: number;
  bytes: number;
}

export interface CopyVolumeOptions {
  from: VolumeEndpoint;
  /** The destination (a staging volume chosen by the caller): created when missing, must be empty. */
  to: VolumeEndpoint & { labels?: Record<string, string> };
  /** Image of the helper containers; they are never started, so any image present on (or pullable by) both engines works. */
  helperImage: string;
  onProgress?: (p: CopyProgress) => void;
  /** Minimum interval between progress calls (default 250 ms); the last one always comes. */
  progressIntervalMs?: number;
  signal?: AbortSignal;
  /** sha256 of every file on both sides (default true); off: types, sizes, modes, links, counts only. */
  checksums?: boolean;
  /** Labels put on the helper containers (e.g. the job id), besides berth.volume-copy. */
  helperLabels?: Record<string, string>;
  /**
   * How file owners (uid/gid) reach the destination:
   * - `archive`: as the source's archive reports them (Docker does);
   * - `fixup`: podman's archive download reports every entry as owned by the helper's user, so
   *   owners are listed on the source and re-applied on the destination by helper containers that
   *   run (the helper image then needs sh, find, stat, sort, sha256sum, chown, chmod: busybox);
   * - `auto` (default): `fixup` when the source engine is podman, else `archive`.
   */
  ownership?: 'auto' | 'archive' | 'fixup';
}

export interface CopyVolumeResult {
  /** Content bytes of regular files copied. */
  bytes: number;
  files: number;
  directories: number;
  /** Tar stream bytes moved. */
  transferredBytes: number;
  /** How owners were carried over (see CopyVolumeOptions.ownership), and how many entries needed it. */
  ownership: { mode: 'archive' | 'fixup'; entries: number };
  verified: true;
}

export class DestinationNotEmptyError extends Error {
  override name = 'DestinationNotEmptyError';
}

async function createHelper(
  engine: EngineClient,
  volume: string,
  readOnly: boolean,
  image: string,
  labels: Record<string, string>,
  signal: AbortSignal | undefined,
): Promise<string> {
  const name = `berth-vcopy-${randomUUID().slice(0, 13)}`;
  const { Id } = await engine.createContainer(
    name,
    {
      image,
      cmd: ['true'],
      volumes: [{ volume, target: MOUNT, readOnly, noCopy: true }],
      networkMode: 'none',
      labels: { [HELPER_LABEL]: readOnly ? 'source' : 'destination', ...labels },
    },
    { signal },
  );
  return Id;
}

export async function copyVolume(opts: CopyVolumeOptions): Promise<CopyVolumeResult> {
  const { from, to, signal } = opts;
  const checksums = opts.checksums ?? true;
  signal?.throwIfAborted();

  // Fail early and clearly: the source must exist; the destination is made when missing.
  await from.engine.inspectVolume(from.volume, { signal });
  try {
    await to.engine.inspectVolume(to.volume, { signal });
  } catch (err) {
    if (!(err instanceof NotFoundError)) throw err;
    await to.engine.createVolume(to.volume, { labels: to.labels ?? {}, signal });
  }
  await Promise.all([ensureImage(from.engine, opts.helperImage, { signal }), ensureImage(to.engine, opts.helperImage, { signal })]);

  const labels = opts.helperLabels ?? {};
  const wanted = opts.ownership ?? 'auto';
  const ownershipMode = wanted === 'auto' ? ((await isPodman(from.engine, signal)) ? 'fixup' : 'archive') : wanted;
  let src: string | undefined;
  let dst: string | undefined;
  try {
    src = await createHelper(from.engine, from.volume, true, opts.helperImage, labels, signal);
    dst = await createHelper(to.engine, to.volume, false, opts.helperImage, labels, signal);

    const existing = await manifestOf(await to.engine.getArchive(dst, `${MOUNT}/.`, { signal }), { hash: false, signal });
    if (existing.entries.size > 0) {
      throw new DestinationNotEmptyError(
        `destination volume ${to.volume} on ${to.engine.endpoint} is not empty (${existing.entries.size} entries)`,
      );
    }

    const rootStat = await from.engine.statPath(src, MOUNT, { signal });
    const source = await transfer(opts, src, dst, rootStat, checksums);

    // Verify: read the destination back and compare it with what left the source.
    const dest = await manifestOf(await to.engine.getArchive(dst, `${MOUNT}/.`, { signal }), { hash: checksums, signal });
    // Owners in the tar headers are only meaningful when the source engine reports them.
    const diffs = compareManifests(source.manifest, dest, { checksums, owners: ownershipMode === 'archive' });
    const destRoot = await to.engine.statPath(dst, MOUNT, { signal });
    if (destRoot.mode !== rootStat.mode) diffs.push(`volume root: mode ${rootStat.mode.toString(8)} → ${destRoot.mode.toString(8)}`);
    if (diffs.length > 0) {
      throw new VerificationError(
        `copy of volume ${from.volume} (${from.engine.endpoint}) to ${to.volume} (${to.engine.endpoint}) did not verify: ${diffs.slice(0, 5).join('; ')}`,
        diffs,
      );
    }
    const ownership: CopyVolumeResult['ownership'] =
      ownershipMode === 'fixup' ? { mode: 'fixup', entries: await fixOwnership(opts, labels) } : { mode: 'archive', entries: 0 };
    return {
      bytes: source.manifest.bytes,
      files: source.manifest.files,
      directories: source.manifest.directories,
      transferredBytes: source.transferredBytes,
      ownership,
      verified: true,
    };
  } finally {
    // Always, and without the caller's (possibly aborted) signal. Never the volumes (v=false).
    await Promise.allSettled([
      src ? from.engine.removeContainer(src, { force: true, removeVolumes: false }) : undefined,
      dst ? to.engine.removeContainer(dst, { force: true, removeVolumes: false }) : undefined,
    ]);
  }
}

async function transfer(
  opts: CopyVolumeOptions,
  src: string,
  dst: string,
  rootStat: { mode: number; mtime: string },
  checksums: boolean,
): Promise<{ manifest: Manifest; transferredBytes: number }> {
  const { from, to, signal } = opts;
  // An inner controller stops both sides when either fails.
  const inner = new AbortController();
  const onOuterAbort = () => inner.abort(signal?.reason);
  signal?.addEventListener('abort', onOuterAbort, { once: true });
  const innerSignal = inner.signal;

  const upload = new PassThrough({ highWaterMark: 1024 * 1024 });
  let files = 0;
  let bytes = 0;
  const sink = new ManifestSink({
    hash: checksums,
    onFile: (size) => {
      files++;
      bytes += size;
    },
  });
  // `path/.` archives of podman leave out the directory itself; a leading `./` entry carries the
  // volume root's mode to the destination (Docker sends its own `./`, which then wins).
  const mtime = new Date(rootStat.mtime);
  upload.write(directoryHeader('./', { mode: rootStat.mode, ...(Number.isNaN(mtime.getTime()) ? {} : { mtime }) }));

  let putError: unknown;
  const put = to.engine.putArchive(dst, MOUNT, upload, { signal: innerSignal });
  put.catch((err: unknown) => {
    putError ??= err;
    inner.abort(err);
  });

  let transferredBytes = 0;
  const interval = opts.progressIntervalMs ?? 250;
  let lastReport = 0;
  const report = (force: boolean) => {
    if (!opts.onProgress) return;
    const now = Date.now();
    if (!force && now - lastReport < interval) return;
    lastReport = now;
    opts.onProgress({ transferredBytes, files, bytes });
  };

  try {
    const archive = await from.engine.getArchive(src, `${MOUNT}/.`, { signal: innerSignal });
    for await (const chunk of archive as AsyncIterable<Buffer>) {
      transferredBytes += chunk.length;
      const okUpload = upload.write(chunk);
      const okSink = sink.write(chunk);
      if (!okUpload || !okSink) {
        await Promise.all([
          okUpload ? undefined : once(upload, 'drain', { signal: innerSignal }),
          okSink ? undefined : sink.drained(innerSignal),
        ]);
      }
      report(false);
    }
    upload.end();
    sink.end();
    await put;
    const manifest = await sink.done;
    report(true);
    return { manifest, transferredBytes };
  } catch (err) {
    inner.abort(err);
    upload.destroy();
    sink.abort(err instanceof Error ? err : new Error(String(err)));
    await put.catch(() => undefined);
    // Prefer the root cause: the caller's abort, or the upload's failure, over "aborted" echoes.
    if (signal?.aborted) throw signal.reason;
    throw putError ?? err;
  } finally {
    signal?.removeEventListener('abort', onOuterAbort);
  }
}

async function isPodman(engine: EngineClient, signal?: AbortSignal): Promise<boolean> {
  const v = await engine.version({ signal });
  return (v.Components ?? []).some((c) => /podman/i.test(c.Name));
}

/**
 * Lists, sorted, `uid:gid:mode:./path` of the volume root and of every entry not owned by
 * root:root, into /tmp/berth-owners of the helper's own filesystem, and prints
 * `<lines> <sha256 of the list>`.
 */
const LIST_OWNERS = `cd ${MOUNT} && { stat -c '%u:%g:%a:%n' . && find . -mindepth 1 \\( ! -user 0 -o ! -group 0 \\) -exec stat -c '%u:%g:%a:%n' {} + ; } | sort > /tmp/berth-owners`;
const REPORT = `echo "$(wc -l < /tmp/berth-owners) $(sha256sum < /tmp/berth-owners | cut -d ' ' -f 1)"`;
/** Applies /tmp/berth-owners (as uploaded from the source) to the volume: chown, then the mode again (chown clears setuid/setgid). */
const APPLY_OWNERS = `cd ${MOUNT} && while IFS= read -r line; do
  u=\${line%%:*}; r=\${line#*:}; g=\${r%%:*}; r=\${r#*:}; m=\${r%%:*}; p=\${r#*:}
  chown -h "$u:$g" "$p" || exit 3
  if [ ! -L "$p" ]; then chmod "$m" "$p" || exit 4; fi
done < /tmp/berth-owners.src`;

async function runHelper(
  engine: EngineClient,
  volume: string,
  readOnly: boolean,
  script: string,
  image: string,
  labels: Record<string, string>,
  signal: AbortSignal | undefined,
  cleanup: { engine: EngineClient; id: string }[],
  before?: (id: string) => Promise<void>,
): Promise<{ id: string; output: string }> {
  const name = `berth-vcopy-${randomUUID().slice(0, 13)}`;
  const { Id } = await engine.createContainer(
    name,
    {
      image,
      cmd: ['sh', '-c', script],
      volumes: [{ volume, target: MOUNT, readOnly, noCopy: true }],
      networkMode: 'none',
      labels: { [HELPER_LABEL]: 'ownership', ...labels },
    },
    { signal },
  );
  cleanup.push({ engine, id: Id });
  if (before) await before(Id);
  await engine.startContainer(Id, { signal });
  const { StatusCode } = await engine.waitContainer(Id, { signal });
  const logs = await engine.containerLogs(Id, { signal, tty: false, maxBytes: 64 * 1024 });
  const output = logs.entries.map((e) => `${e.stream === 'stderr' ? '! ' : ''}${e.line}`).join('\n');
  if (StatusCode !== 0) {
    throw new Error(`ownership helper on ${engine.endpoint} (volume ${volume}) exited with ${StatusCode}: ${output.slice(0, 500)}`);
  }
  return { id: Id, output: logs.entries.filter((e) => e.stream === 'stdout').map((e) => e.line).join('\n').trim() };
}

/**
 * Carries owners over from source to destination when the archive did not (podman). The list
 * moves between the engines as an archive stream too, never through memory whole; both sides'
 * lists are compared by sha256. Returns how many entries it covered.
 */
async function fixOwnership(opts: CopyVolumeOptions, labels: Record<string, string>): Promise<number> {
  const { from, to, signal } = opts;
  const helpers: { engine: EngineClient; id: string }[] = [];
  try {
    const listed = await runHelper(from.engine, from.volume, true, `${LIST_OWNERS} && ${REPORT}`, opts.helperImage, labels, signal, helpers);
    const [count, sourceSum] = listed.output.split(' ');
    const lines = Number(count);
    if (!Number.isFinite(lines) || !sourceSum) throw new Error(`ownership helper on ${from.engine.endpoint} printed ${JSON.stringify(listed.output)}`);
    const script = `mv /tmp/berth-owners /tmp/berth-owners.src && ${APPLY_OWNERS} && ${LIST_OWNERS} && ${REPORT}`;
    const applied = await runHelper(to.engine, to.volume, false, script, opts.helperImage, labels, signal, helpers, async (id) => {
      await to.engine.putArchive(id, '/tmp', await from.engine.getArchive(listed.id, '/tmp/berth-owners', { signal }), { signal });
    });
    if (applied.output !== listed.output) {
      throw new VerificationError(
        `owners of volume ${to.volume} (${to.engine.endpoint}) do not match ${from.volume} (${from.engine.endpoint}) after the copy`,
        [`source owners list: ${listed.output}`, `destination owners list: ${applied.output}`],
      );
    }
    return lines;
  } finally {
    await Promise.allSettled(helpers.map((h) => h.engine.removeContainer(h.id, { force: true, removeVolumes: false })));
  }
}
