/**
 * The Docker "multiplexed stream" format of logs and attach when the container has no TTY:
 * frames of an 8-byte header (stream type, 3 zero bytes, big-endian uint32 payload length)
 * followed by the payload. With a TTY the stream is raw bytes (all stdout).
 */

export type StdStream = 'stdin' | 'stdout' | 'stderr';

export interface StreamFrame {
  stream: StdStream;
  data: Buffer;
}

const STREAMS: Record<number, StdStream> = { 0: 'stdin', 1: 'stdout', 2: 'stderr' };

/** Demultiplexes a chunked byte source into frames; frames may span chunks. */
export async function* demuxDockerStream(source: AsyncIterable<Buffer | Uint8Array>): AsyncGenerator<StreamFrame> {
  let pending = Buffer.alloc(0);
  for await (const chunk of source) {
    pending = pending.length === 0 ? Buffer.from(chunk) : Buffer.concat([pending, chunk]);
    while (pending.length >= 8) {
      const type = pending[0]!;
      const size = pending.readUInt32BE(4);
      if (pending.length < 8 + size) break;
      const stream = STREAMS[type];
      if (stream === undefined) throw new Error(`not a multiplexed docker stream (frame type ${type})`);
      yield { stream, data: pending.subarray(8, 8 + size) };
      pending = pending.subarray(8 + size);
    }
  }
  if (pending.length > 0) throw new Error(`multiplexed docker stream ended inside a frame (${pending.length} bytes left)`);
}

/** Whether a buffer plausibly starts with a multiplexed frame header (used when the engine does not say). */
export function looksMultiplexed(head: Buffer): boolean {
  return head.length >= 8 && head[0]! <= 2 && head[1] === 0 && head[2] === 0 && head[3] === 0;
}
