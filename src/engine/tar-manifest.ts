/**
 * A manifest of a tar stream (path → type, size, mode, owner, link target, sha256), built while
 * the stream passes through, so a volume's content can be compared on both sides of a copy
 * without ever holding the data. Parsing is node-tar's (pax and GNU long names included).
 */
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { Header, Parser, type ReadEntry } from 'tar';

export interface ManifestEntry {
  path: string;
  /** node-tar's type name: File, Directory, SymbolicLink, Link, FIFO, CharacterDevice, … */
  type: string;
  size: number;
  /** Permission bits incl. setuid/setgid/sticky. */
  mode: number;
  uid: number;
  gid: number;
  /** Whole seconds since the epoch. */
  mtime: number;
  linkpath?: string;
  /** sha256 (hex) of a regular file's content, when hashing. */
  sha256?: string;
}

export interface Manifest {
  entries: Map<string, ManifestEntry>;
  /** Regular files (hard links not counted). */
  files: number;
  directories: number;
  /** Sum of regular files' sizes. */
  bytes: number;
}

/** `./a/b/`, `/a/b`, `a/b` → `a/b`; the root itself → ``. */
export function normalizeTarPath(p: string): string {
  let s = p.replace(/\\/g, '/');
  while (s.startsWith('./')) s = s.slice(2);
  s = s.replace(/^\/+/, '').replace(/\/+$/, '');
  if (s === '.') s = '';
  return s;
}

const FILE_TYPES = new Set(['File', 'OldFile', 'ContiguousFile']);

/**
 * A writable sink (write/end/drain, as Node's pipe and a manual pump expect) that parses a tar
 * stream and resolves `done` with its manifest. The root entry (`./`) is left out.
 */
export class ManifestSink {
  readonly done: Promise<Manifest>;
  private readonly parser: Parser;
  private sawEntry = false;
  private onlyZeros = true;

  constructor(opts: { hash?: boolean; onFile?: (size: number) => void } = {}) {
    const entries = new Map<string, ManifestEntry>();
    const hash = opts.hash ?? true;
    const manifest: Manifest = { entries, files: 0, directories: 0, bytes: 0 };
    this.parser = new Parser({
      strict: true,
      onReadEntry: (entry: ReadEntry) => {
        this.sawEntry = true;
        const path = normalizeTarPath(entry.path);
        const isFile = FILE_TYPES.has(entry.type);
        const e: ManifestEntry = {
          path,
          type: isFile ? 'File' : entry.type,
          size: isFile ? entry.size : 0,
          mode: (entry.mode ?? 0) & 0o7777,
          uid: entry.uid ?? 0,
          gid: entry.gid ?? 0,
          mtime: entry.mtime ? Math.floor(entry.mtime.getTime() / 1000) : 0,
        };
        if (entry.linkpath) e.linkpath = entry.linkpath;
        if (path !== '') {
          entries.set(path, e);
          if (isFile) {
            manifest.files++;
            manifest.bytes += entry.size;
            opts.onFile?.(entry.size);
          } else if (entry.type === 'Directory') {
            manifest.directories++;
          }
        }
        if (isFile && hash) {
          const h = createHash('sha256');
          entry.on('data', (c: Buffer) => h.update(c));
          entry.on('end', () => {
            e.sha256 = h.digest('hex');
          });
        } else {
          entry.resume();
        }
      },
    });
    const parser = this.parser;
    this.done = new Promise<Manifest>((resolve, reject) => {
      parser.on('error', (err: Error & { code?: string }) => {
        // node-tar calls a tar with no entry at all "Unrecognized archive format"; an engine
        // sends exactly that (only zero blocks, or nothing) for an empty directory.
        if (err.code === 'TAR_BAD_ARCHIVE' && !this.sawEntry && this.onlyZeros) return;
        reject(err);
      });
      parser.on('end', () => resolve(manifest));
    });
    this.done.catch(() => undefined);
  }

  /** false: wait for 'drain' (see `drained`). */
  write(chunk: Buffer): boolean {
    if (this.onlyZeros && !this.sawEntry && chunk.some((b) => b !== 0)) this.onlyZeros = false;
    return this.parser.write(chunk);
  }

  drained(signal?: AbortSignal): Promise<unknown> {
    // A parser that failed never drains: its failure ends the wait instead.
    return Promise.race([once(this.parser, 'drain', signal ? { signal } : {}), this.done]);
  }

  end(): void {
    this.parser.end();
  }

  /** Stop parsing (after a failure elsewhere); `done` then rejects or resolves with what was seen. */
  abort(err: Error): void {
    this.parser.abort(err);
  }
}

/** Reads a whole tar stream into a manifest. */
export async function manifestOf(stream: AsyncIterable<Buffer>, opts: { hash?: boolean; signal?: AbortSignal } = {}): Promise<Manifest> {
  const sink = new ManifestSink(opts);
  try {
    for await (const chunk of stream) {
      if (!sink.write(chunk)) await sink.drained(opts.signal);
    }
    sink.end();
  } catch (err) {
    sink.abort(err as Error);
    throw err;
  }
  return sink.done;
}

/** A single tar header block (512 bytes) for a directory entry. */
export function directoryHeader(path: string, attrs: { mode: number; uid?: number; gid?: number; mtime?: Date }): Buffer {
  const h = new Header({
    path: path.endsWith('/') ? path : `${path}/`,
    type: 'Directory',
    mode: attrs.mode & 0o7777,
    uid: attrs.uid ?? 0,
    gid: attrs.gid ?? 0,
    size: 0,
    mtime: attrs.mtime ?? new Date(),
  });
  const block = Buffer.alloc(512);
  h.encode(block, 0);
  return block;
}

export interface CompareOptions {
  /** Compare sha256 of regular files (both manifests must have been hashed). */
  checksums?: boolean;
  /** Compare uid/gid (default true). */
  owners?: boolean;
  /** Compare regular files' mtime in whole seconds (default true). */
  mtimes?: boolean;
  /** Stop listing differences after this many (default 20). */
  limit?: number;
}

/** Differences between two manifests, as readable lines; empty when they match. */
export function compareManifests(source: Manifest, dest: Manifest, opts: CompareOptions = {}): string[] {
  const diffs: string[] = [];
  const limit = opts.limit ?? 20;
  const add = (s: string) => {
    if (diffs.length < limit) diffs.push(s);
  };
  for (const [path, s] of source.entries) {
    const d = dest.entries.get(path);
    if (!d) {
      add(`missing on destination: ${path}`);
      continue;
    }
    if (s.type !== d.type) add(`${path}: type ${s.type} → ${d.type}`);
    if (s.size !== d.size) add(`${path}: size ${s.size} → ${d.size}`);
    if (s.mode !== d.mode) add(`${path}: mode ${s.mode.toString(8)} → ${d.mode.toString(8)}`);
    if ((s.linkpath ?? '') !== (d.linkpath ?? '')) add(`${path}: link ${s.linkpath} → ${d.linkpath}`);
    if ((opts.owners ?? true) && (s.uid !== d.uid || s.gid !== d.gid)) add(`${path}: owner ${s.uid}:${s.gid} → ${d.uid}:${d.gid}`);
    if ((opts.mtimes ?? true) && s.type === 'File' && s.mtime !== d.mtime) add(`${path}: mtime ${s.mtime} → ${d.mtime}`);
    if (opts.checksums && s.type === 'File' && s.sha256 !== d.sha256) add(`${path}: sha256 ${s.sha256} → ${d.sha256}`);
  }
  for (const path of dest.entries.keys()) if (!source.entries.has(path)) add(`unexpected on destination: ${path}`);
  if (source.files !== dest.files) add(`file count ${source.files} → ${dest.files}`);
  if (source.bytes !== dest.bytes) add(`total bytes ${source.bytes} → ${dest.bytes}`);
  return diffs;
}
