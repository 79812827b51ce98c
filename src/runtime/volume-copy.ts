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
}

export interface CopyVolumeResult {
  /** Content bytes of regular files copied. */
  bytes: number;
  files: number;
  directories: number;
  /** Tar stream bytes moved. */
  transferredBytes: number;
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
    const diffs = compareManifests(source.manifest, dest, { checksums });
    const destRoot = await to.engine.statPath(dst, MOUNT, { signal });
    if (destRoot.mode !== rootStat.mode) diffs.push(`volume root: mode ${rootStat.mode.toString(8)} → ${destRoot.mode.toString(8)}`);
    if (diffs.length > 0) {
      throw new VerificationError(
        `copy of volume ${from.volume} (${from.engine.endpoint}) to ${to.volume} (${to.engine.endpoint}) did not verify: ${diffs.slice(0, 5).join('; ')}`,
        diffs,
      );
    }
    return {
      bytes: source.manifest.bytes,
      files: source.manifest.files,
      directories: source.manifest.directories,
      transferredBytes: source.transferredBytes,
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
