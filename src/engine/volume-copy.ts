/**
 * Copies one named volume from one engine to another as a tar stream, never holding it in
 * memory, and verifies what is stored (see volume-sync.ts, which this is one round of):
 *
 *   engine A: helper (source volume, read-only) ── GET  /containers/{a}/archive?path=/v/.
 *                                                       │  tee → manifest (progress counts)
 *   engine B: helper (destination volume)        ◄─ PUT  /containers/{b}/archive?path=/v
 *
 * The archive relay itself is archive-relay.ts; a migration uses it for its first round and
 * sends later rounds as tars of what changed.
 */
import { VolumeSync, type SyncSide } from './volume-sync.js';

export { DestinationNotEmptyError } from './volume-sync.js';

export interface CopyProgress {
  /** Tar bytes moved so far (headers and padding included). */
  transferredBytes: number;
  /** Regular files and their content bytes seen so far. */
  files: number;
  bytes: number;
}

export interface CopyVolumeOptions {
  from: SyncSide;
  /** The destination (a staging volume chosen by the caller): created when missing, must be empty. */
  to: SyncSide & { labels?: Record<string, string> };
  /** Image of the helper containers (busybox tools; see sync-scripts.ts). */
  helperImage: string;
  onProgress?: (p: CopyProgress) => void;
  /** Minimum interval between progress calls (default 250 ms); the last one always comes. */
  progressIntervalMs?: number;
  signal?: AbortSignal;
  /** Also compare every file's sha256 on both sides (default false: the listings verify sizes and metadata). */
  checksums?: boolean;
  /** Labels put on the helper containers (e.g. the job id), besides berth.volume-copy. */
  helperLabels?: Record<string, string>;
}

export interface CopyVolumeResult {
  /** Content bytes of regular files copied. */
  bytes: number;
  files: number;
  entries: number;
  /** Tar stream bytes moved. */
  transferredBytes: number;
  /** Owners and modes the destination mended after the archive (podman's archives lose owners). */
  ownership: { mode: 'archive' | 'fixup'; entries: number };
  /** What was verified on the stored destination: the listings always, sha256 of every file with `checksums`. */
  verified: { listing: true; checksums: boolean };
}

export async function copyVolume(opts: CopyVolumeOptions): Promise<CopyVolumeResult> {
  const sync = await VolumeSync.open({
    from: opts.from,
    to: opts.to,
    helperImage: opts.helperImage,
    ...(opts.helperLabels ? { helperLabels: opts.helperLabels } : {}),
    ...(opts.signal ? { signal: opts.signal } : {}),
  });
  try {
    const interval = opts.progressIntervalMs ?? 250;
    let last = 0;
    let counts: CopyProgress = { transferredBytes: 0, files: 0, bytes: 0 };
    const round = await sync.round(
      (p) => {
        counts = { ...counts, transferredBytes: p.transferredBytes, ...p.counts };
        const now = Date.now();
        if (opts.onProgress && now - last >= interval) {
          last = now;
          opts.onProgress(counts);
        }
      },
      { count: opts.onProgress !== undefined },
    );
    const v = await sync.verify(opts.checksums ?? false);
    opts.onProgress?.({ transferredBytes: round.transferredBytes, files: v.files, bytes: v.bytes });
    return {
      bytes: v.bytes,
      files: v.files,
      entries: v.entries,
      transferredBytes: round.transferredBytes,
      ownership: { mode: v.mended > 0 ? 'fixup' : 'archive', entries: v.mended },
      verified: { listing: true, checksums: v.checksums },
    };
  } finally {
    await sync.close();
  }
}
