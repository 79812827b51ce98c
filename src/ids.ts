import { randomInt } from 'node:crypto';

const ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';

/** A public identifier: 24 lowercase alphanumerics from the CSPRNG, the shape Coolify uses. */
export function newUuid(): string {
  let s = '';
  for (let i = 0; i < 24; i++) s += ALPHABET[randomInt(ALPHABET.length)];
  return s;
}
