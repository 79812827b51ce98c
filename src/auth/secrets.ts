import { hash, randomBytes, timingSafeEqual } from 'node:crypto';

/** A fresh 256-bit secret, URL- and cookie-safe. */
export const randomSecret = (): string => randomBytes(32).toString('base64url');

/** What the store keeps of a secret (hex SHA-256): enough to recognise it, never to use it. */
export const secretHash = (secret: string): string => hash('sha256', secret, 'hex');

/** Constant-time equality of two strings of any length (hashed first, so lengths do not leak). */
export function sameSecret(a: string, b: string): boolean {
  return timingSafeEqual(hash('sha256', a, 'buffer'), hash('sha256', b, 'buffer'));
}
