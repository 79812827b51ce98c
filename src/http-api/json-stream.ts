import { Readable } from 'node:stream';
import { jsonParts } from '../core/view-memo.js';

/** A list longer than this is streamed; a shorter one is sent as one body with its length. */
export const STREAM_FROM = 200;
const OPEN = Buffer.from('[');
const COMMA = Buffer.from(',');

/** JSON texts, each after its separator (the first after `first`), as one buffer. */
function joined(texts: readonly Buffer[], first: Buffer): Buffer {
  const parts: Buffer[] = [];
  for (const text of texts) parts.push(parts.length ? COMMA : first, text);
  return Buffer.concat(parts);
}

/** Items stringified per chunk: large enough that the chunks' overhead is nothing, small enough to stay out of the old generation. */
const PER_CHUNK = 100;

/**
 * A JSON array sent as it is written, chunk by chunk (the same bytes as JSON.stringify(items)):
 * a list of 2,000 applications is never one 3 MB string copied into one 3 MB buffer, and the
 * first bytes leave while the rest is stringified (bench/lists).
 */
export function jsonArrayStream(items: readonly unknown[]): Readable {
  function* chunks(): Generator<string | Buffer> {
    if (!items.length) {
      yield '[]';
      return;
    }
    for (let i = 0; i < items.length; i += PER_CHUNK) {
      const slice = items.slice(i, i + PER_CHUNK);
      // Views a memo shares keep their bytes (an unchanged row is neither stringified nor encoded again).
      const texts = jsonParts(slice);
      if (texts) yield joined(texts, i === 0 ? OPEN : COMMA);
      else yield `${i === 0 ? '[' : ','}${JSON.stringify(slice).slice(1, -1)}`;
    }
    yield ']';
  }
  return Readable.from(chunks(), { objectMode: false });
}
