import { Readable } from 'node:stream';
import { Header } from 'tar';

/**
 * A tar archive of file storages, to extract at the container's root: each file with its
 * content (0644) and each directory (0755), owned by root. Missing parent directories are made
 * by the engine's extraction; existing ones are left as they are (no entry names them).
 */
export function fileStoragesTar(files: readonly { path: string; content: string; isDirectory: boolean }[]): Readable {
  const blocks: Buffer[] = [];
  const mtime = new Date();
  for (const f of files) {
    const rel = f.path.replace(/^\/+/, '').replace(/\/+$/, '');
    const data = f.isDirectory ? Buffer.alloc(0) : Buffer.from(f.content, 'utf8');
    const header = Buffer.alloc(512);
    new Header({ path: f.isDirectory ? `${rel}/` : rel, mode: f.isDirectory ? 0o755 : 0o644, uid: 0, gid: 0, size: data.length, mtime, type: f.isDirectory ? 'Directory' : 'File' }).encode(header, 0);
    blocks.push(header, data, Buffer.alloc((512 - (data.length % 512)) % 512));
  }
  blocks.push(Buffer.alloc(1024));
  return Readable.from([Buffer.concat(blocks)]);
}
