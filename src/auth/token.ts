import { hash, randomInt, timingSafeEqual } from 'node:crypto';

/** Length of the secret part. 48 base62 characters ≈ 285 bits from the CSPRNG. */
export const SECRET_LENGTH = 48;
const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

export function mintSecret(): string {
  let s = '';
  // randomInt draws from the CSPRNG without modulo bias.
  for (let i = 0; i < SECRET_LENGTH; i++) s += ALPHABET[randomInt(ALPHABET.length)];
  return s;
}

export function hashSecret(secret: string): string {
  return hash('sha256', secret, 'hex');
}

export function formatToken(id: number, secret: string): string {
  return `${id}|${secret}`;
}

export interface ParsedToken {
  id: number;
  secret: string;
}

// Up to 16 digits: every safe integer fits; the isSafeInteger check below refuses the rest.
const TOKEN_SHAPE = /^([1-9][0-9]{0,15})\|([A-Za-z0-9]{1,256})$/;

/**
 * Splits `<token_id>|<secret>`. Anything else (no bar, a non-numeric or zero id, an empty or
 * oddly-charactered secret, surrounding whitespace) is malformed and yields null.
 */
export function parseToken(value: string): ParsedToken | null {
  const m = TOKEN_SHAPE.exec(value);
  if (!m) return null;
  const id = Number(m[1]);
  if (!Number.isSafeInteger(id)) return null;
  return { id, secret: m[2]! };
}

/** Extracts the token from an Authorization header; undefined when there is no Bearer credential. */
export function bearerFrom(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const m = /^Bearer[ ]+(.+)$/i.exec(header.trim());
  return m ? m[1]!.trim() : undefined;
}

// Stands in for the stored hash of an id that does not exist, so that an unknown id costs the
// same hash and comparison as a known one and response time does not reveal which ids exist.
const DECOY_HASH = hash('sha256', mintSecret(), 'buffer');

/**
 * Constant-time check of a presented secret against a stored hash (hex, or its bytes), or the
 * decoy when there is none.
 */
export function secretMatches(secret: string, storedHash: string | Buffer | undefined): boolean {
  const presented = hash('sha256', secret, 'buffer');
  const stored = storedHash === undefined ? DECOY_HASH : typeof storedHash === 'string' ? Buffer.from(storedHash, 'hex') : storedHash;
  const equal = stored.length === presented.length && timingSafeEqual(presented, stored);
  return equal && storedHash !== undefined;
}

export const EXPIRATIONS = {
  '7d': 7,
  '30d': 30,
  '60d': 60,
  '90d': 90,
  '1y': 365,
  never: null,
} as const;
export type Expiration = keyof typeof EXPIRATIONS;

export function expiresAt(choice: Expiration, from = new Date()): string | null {
  const days = EXPIRATIONS[choice];
  return days === null ? null : new Date(from.getTime() + days * 86_400_000).toISOString();
}
