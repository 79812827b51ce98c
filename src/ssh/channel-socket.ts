import { Duplex } from 'node:stream';
import type { ClientChannel } from 'ssh2';

/** What the HTTP client may find buffered when it reads: what a TCP socket would hold. */
const READ_BUFFER = 64 * 1024;

/**
 * An SSH channel shaped like the socket an HTTP client expects. ssh2 buffers up to its whole
 * window (2 MiB) in the channel, and undici reads everything buffered at once and, whenever its
 * body consumer pauses, puts the unparsed rest back and reads it all again: with a 2 MiB buffer
 * that copying made a copy of small files from an SSH server to a local engine 5x slower
 * (bench/ssh). Here the channel is paused as soon as this side holds READ_BUFFER bytes, so the
 * rest waits in ssh2 (and its window), as it would in the kernel for a TCP socket.
 */
export function channelSocket(channel: ClientChannel): Duplex {
  let flowing = false;
  const socket = new Duplex({
    readableHighWaterMark: READ_BUFFER,
    read() {
      if (!flowing) {
        flowing = true;
        channel.resume();
      }
    },
    write(chunk: Buffer, _encoding, callback) {
      if (channel.write(chunk)) callback();
      else channel.once('drain', () => callback());
    },
    final(callback) {
      channel.end();
      callback();
    },
    destroy(err, callback) {
      channel.destroy();
      callback(err);
    },
  });
  channel.pause();
  channel.on('data', (data: Buffer) => {
    if (!socket.push(data)) {
      flowing = false;
      channel.pause();
    }
  });
  channel.once('end', () => socket.push(null));
  channel.once('error', (err: Error) => socket.destroy(err));
  // A channel closed without an end (the connection dropped) still ends this side's reading: the
  // HTTP client then sees the response cut short, never a hang. Buffered data is kept for it.
  channel.once('close', () => {
    if (!socket.readableEnded && !socket.destroyed) socket.push(null);
  });
  return socket;
}
