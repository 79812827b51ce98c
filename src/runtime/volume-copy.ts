/**
 * Copies one named volume from one engine to another as a tar stream, never holding it in
 * memory: source container archive → destination container archive, through two helper
 * containers that are created (never started) only to mount the volumes.
 *
 *   engine A: helper (source volume mounted read-only) ── GET  /containers/{a}/archive?path=/v/.
 *                                                              │  tee → manifest (progress; sha256 per file when checksums)
 *   engine B: helper (destination volume, read-write)  ◄─ PUT  /containers/{b}/archive?path=/v
 *
 * Verification checks what is stored, never merely what was sent: while the stream runs, a
 * helper lists the source (volume-listing.ts); afterwards a helper on B re-applies owners when
 * the archive lost them, lists the destination, and both lists must be identical (every entry's
 * type, permissions and owner; every file's size and link count). With `checksums`, the
 * destination is also read back and every file's sha256 compared with the source stream's.
 * Any difference is a VerificationError. The source volume is mounted read-only and only read.
 * Helpers are removed whatever happens (their volumes are kept).
 */
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { PassThrough } from 'node:stream';
import { ensureImage, type EngineClient } from './engine.js';
import { NotFoundError, VerificationError } from './errors.js';
import { compareManifests, directoryHeader, ManifestSink, manifestOf, type Manifest } from './tar-manifest.js';
import { HELPER_LABEL, listSource, MOUNT, verifyDestination, type ListedSource } from './volume-listing.js';

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
  /**
   * Also read the destination back and compare every file's sha256 with the source stream's
   * (default false: the listings alone verify file count, sizes and metadata as stored, see above).
   * Costs a second pass over the data through the destination engine.
   */
  checksums?: boolean;
  /** Labels put on the helper containers (e.g. the job id), besides berth.volume-copy. */
  helperLabels?: Record<string, string>;
  /**
   * How file owners (uid/gid) reach the destination:
   * - `archive`: as the source's archive reports them (Docker does);
   * - `fixup`: podman's archive download reports every entry as owned by the helper's user, so
   *   the destination's listing helper re-applies the owners listed on the source;
   * - `auto` (default): `fixup` when the source engine is podman, else `archive`.
   * Either way the listings compare owners. The helper image needs busybox (see volume-listing.ts).
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
  /** What was verified on the stored destination: the listings always, sha256 of every file with `checksums`. */
  verified: { listing: true; checksums: boolean };
}

/** Archive bytes gathered before they are passed on (see transfer). */
const GATHER_BYTES = 256 * 1024;

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
  const checksums = opts.checksums ?? false;
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
  const helpers: { engine: EngineClient; id: string }[] = [];
  let listing: Promise<ListedSource> | undefined;
  // The source listing runs alongside the stream; when the copy fails it is not waited for.
  const listingAbort = new AbortController();
  const onAbort = () => listingAbort.abort(signal?.reason);
  signal?.addEventListener('abort', onAbort, { once: true });
  try {
    const made = (engine: EngineClient) => (id: string) => (helpers.push({ engine, id }), id);
    const [src, dst] = await Promise.all([
      createHelper(from.engine, from.volume, true, opts.helperImage, labels, signal).then(made(from.engine)),
      createHelper(to.engine, to.volume, false, opts.helperImage, labels, signal).then(made(to.engine)),
    ]);

    const existing = await manifestOf(await to.engine.getArchive(dst, `${MOUNT}/.`, { signal }), { hash: false, signal });
    if (existing.entries.size > 0) {
      throw new DestinationNotEmptyError(
        `destination volume ${to.volume} on ${to.engine.endpoint} is not empty (${existing.entries.size} entries)`,
      );
    }

    const common = { image: opts.helperImage, labels, signal, cleanup: helpers };
    // The source only gets read, so it is listed while the stream runs (off the critical path).
    listing = listSource(from, { ...common, signal: listingAbort.signal });
    listing.catch(() => undefined);
    const rootStat = await from.engine.statPath(src, MOUNT, { signal });
    const source = await transfer(opts, src, dst, rootStat, checksums);

    if (checksums) {
      // Read the destination back and compare every file's sha256 with what left the source.
      // Owners are compared by the listings (podman's archives do not carry them).
      const dest = await manifestOf(await to.engine.getArchive(dst, `${MOUNT}/.`, { signal }), { hash: true, signal });
      const diffs = compareManifests(source.manifest, dest, { checksums: true, owners: false });
      if (diffs.length > 0) {
        throw new VerificationError(
          `copy of volume ${from.volume} (${from.engine.endpoint}) to ${to.volume} (${to.engine.endpoint}) did not verify: ${diffs.slice(0, 5).join('; ')}`,
          diffs,
        );
      }
    }
    const listed = await listing;
    await verifyDestination(from, to, listed, ownershipMode === 'fixup', common);
    return {
      bytes: source.manifest.bytes,
      files: source.manifest.files,
      directories: source.manifest.directories,
      transferredBytes: source.transferredBytes,
      ownership: { mode: ownershipMode, entries: ownershipMode === 'fixup' ? listed.ownerEntries : 0 },
      verified: { listing: true, checksums },
    };
  } finally {
    // Always, and without the caller's (possibly aborted) signal. Never the volumes (v=false).
    // A listing still running is stopped; it may be starting its helper: let it settle first.
    listingAbort.abort();
    signal?.removeEventListener('abort', onAbort);
    await listing?.catch(() => undefined);
    await Promise.allSettled(helpers.map((h) => h.engine.removeContainer(h.id, { force: true, removeVolumes: false })));
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
    // Small chunks are gathered before they go on: an SSH channel delivers an archive of small
    // files as one small packet each, and an engine reading a chunked upload of thousands of tiny
    // chunks slowed a copy of small files from SSH to a local socket 4-6x (bench/ssh).
    let pending: Buffer[] = [];
    let pendingBytes = 0;
    const forward = async (chunk: Buffer) => {
      const okUpload = upload.write(chunk);
      const okSink = sink.write(chunk);
      if (!okUpload || !okSink) {
        await Promise.all([
          okUpload ? undefined : once(upload, 'drain', { signal: innerSignal }),
          okSink ? undefined : sink.drained(innerSignal),
        ]);
      }
    };
    for await (const chunk of archive as AsyncIterable<Buffer>) {
      transferredBytes += chunk.length;
      pending.push(chunk);
      pendingBytes += chunk.length;
      if (pendingBytes >= GATHER_BYTES) {
        const batch = pending.length === 1 ? pending[0]! : Buffer.concat(pending, pendingBytes);
        pending = [];
        pendingBytes = 0;
        await forward(batch);
      }
      report(false);
    }
    if (pendingBytes > 0) await forward(Buffer.concat(pending, pendingBytes));
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
