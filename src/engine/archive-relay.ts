/**
 * The archive relay: the source volume's archive from one engine piped into a helper on another,
 * the bulk of every volume copy (see volume-sync.ts).
 */
import { once } from 'node:events';
import { PassThrough } from 'node:stream';
import type { EngineClient } from './engine-client.js';
import { MOUNT } from './sync-scripts.js';
import { directoryHeader, ManifestSink } from './tar-manifest.js';

export interface ArchiveTransfer {
  from: EngineClient;
  to: EngineClient;
  /** Helper container ids with the volumes at MOUNT. */
  src: string;
  dst: string;
  /** The source volume root's mode and mtime (podman's `path/.` archives leave the root out). */
  rootStat: { mode: number; mtime: string };
  signal?: AbortSignal | undefined;
  /** Every chunk passed on: archive bytes so far, and (with `count`) the regular files and their bytes seen. */
  onChunk?: (transferredBytes: number, counts?: { files: number; bytes: number }) => void;
  /** Parse the archive as it passes to count files and bytes (costs CPU; migrations do not need it). */
  count?: boolean;
}

/**
 * Relays the source volume's archive into the destination helper: GET from one engine piped to a
 * PUT on the other, with backpressure both ways, never buffering more than a few MiB. Resolves
 * the archive bytes moved. Either side failing stops both.
 */
export async function transferArchive(t: ArchiveTransfer): Promise<number> {
  const { from, to, signal } = t;
  // An inner controller stops both sides when either fails.
  const inner = new AbortController();
  const onOuterAbort = () => inner.abort(signal?.reason);
  signal?.addEventListener('abort', onOuterAbort, { once: true });
  const innerSignal = inner.signal;

  const upload = new PassThrough({ highWaterMark: 1024 * 1024 });
  const counts = { files: 0, bytes: 0 };
  const sink = t.count
    ? new ManifestSink({
        hash: false,
        onFile: (size) => {
          counts.files++;
          counts.bytes += size;
        },
      })
    : undefined;
  // `path/.` archives of podman leave out the directory itself; a leading `./` entry carries the
  // volume root's mode to the destination (Docker sends its own `./`, which then wins).
  const mtime = new Date(t.rootStat.mtime);
  upload.write(directoryHeader('./', { mode: t.rootStat.mode, ...(Number.isNaN(mtime.getTime()) ? {} : { mtime }) }));

  let putError: unknown;
  const put = to.putArchive(t.dst, MOUNT, upload, { signal: innerSignal });
  put.catch((err: unknown) => {
    putError ??= err;
    inner.abort(err);
  });

  let transferredBytes = 0;
  try {
    const archive = await from.getArchive(t.src, `${MOUNT}/.`, { signal: innerSignal });
    for await (const chunk of archive as AsyncIterable<Buffer>) {
      transferredBytes += chunk.length;
      const okUpload = upload.write(chunk);
      const okSink = sink ? sink.write(chunk) : true;
      if (!okUpload || !okSink) {
        await Promise.all([okUpload ? undefined : once(upload, 'drain', { signal: innerSignal }), okSink ? undefined : sink!.drained(innerSignal)]);
      }
      t.onChunk?.(transferredBytes, sink ? counts : undefined);
    }
    upload.end();
    sink?.end();
    await put;
    await sink?.done;
    t.onChunk?.(transferredBytes, sink ? counts : undefined);
    return transferredBytes;
  } catch (err) {
    inner.abort(err);
    upload.destroy();
    sink?.abort(err instanceof Error ? err : new Error(String(err)));
    await put.catch(() => undefined);
    // Prefer the root cause: the caller's abort, or the upload's failure, over "aborted" echoes.
    if (signal?.aborted) throw signal.reason;
    throw putError ?? err;
  } finally {
    signal?.removeEventListener('abort', onOuterAbort);
  }
}
