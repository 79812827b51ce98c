import { createCipheriv, createDecipheriv, randomBytes, scrypt } from 'node:crypto';

/**
 * A transfer bundle sealed with a passphrase (docs/decisions/server-transfer.md): the key is
 * scrypt(passphrase, 16 random salt bytes), the bundle's JSON is encrypted with AES-256-GCM (12
 * random IV bytes, 16-byte tag), and the envelope's format and version are the additional
 * authenticated data, so neither can be changed without the tag failing. Everything a reader
 * needs but the passphrase is in the envelope.
 */
export const BUNDLE_FORMAT = 'berth-server-transfer';
export const BUNDLE_VERSION = 1;

/** scrypt's cost: 2^15 × 8 × 128 bytes = 32 MiB and ~0.1 s per seal or open. */
const KDF = { N: 2 ** 15, r: 8, p: 1 } as const;
/** An envelope may ask for more cost, up to this (a larger one is refused before any work). */
const KDF_MAX = { N: 2 ** 17, r: 16, p: 4 } as const;

export interface SealedBundle {
  encrypted: true;
  format: typeof BUNDLE_FORMAT;
  schema_version: number;
  cipher: 'aes-256-gcm';
  kdf: { name: 'scrypt'; N: number; r: number; p: number; salt: string };
  iv: string;
  tag: string;
  payload: string;
}

const aad = (version: number) => Buffer.from(`${BUNDLE_FORMAT}:${version}`);

function deriveKey(passphrase: string, salt: Buffer, k: { N: number; r: number; p: number }): Promise<Buffer> {
  return new Promise((resolve, reject) => scrypt(passphrase, salt, 32, { N: k.N, r: k.r, p: k.p, maxmem: 256 * k.N * k.r + 1024 * 1024 }, (err, key) => (err ? reject(err) : resolve(key))));
}

export async function sealBundle(bundle: unknown, passphrase: string): Promise<SealedBundle> {
  const salt = randomBytes(16);
  const iv = randomBytes(12);
  const key = await deriveKey(passphrase, salt, KDF);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(aad(BUNDLE_VERSION));
  const payload = Buffer.concat([cipher.update(JSON.stringify(bundle), 'utf8'), cipher.final()]);
  return {
    encrypted: true,
    format: BUNDLE_FORMAT,
    schema_version: BUNDLE_VERSION,
    cipher: 'aes-256-gcm',
    kdf: { name: 'scrypt', ...KDF, salt: salt.toString('base64') },
    iv: iv.toString('base64'),
    tag: cipher.getAuthTag().toString('base64'),
    payload: payload.toString('base64'),
  };
}

/** The bundle inside an envelope, or why not (a message for the caller: wrong passphrase, damaged, unknown form). */
export async function openBundle(envelope: Record<string, unknown>, passphrase: string): Promise<unknown> {
  const e = envelope as Partial<SealedBundle>;
  const k = e.kdf;
  if (
    e.format !== BUNDLE_FORMAT ||
    e.cipher !== 'aes-256-gcm' ||
    k?.name !== 'scrypt' ||
    typeof e.payload !== 'string' ||
    typeof e.iv !== 'string' ||
    typeof e.tag !== 'string' ||
    typeof k.salt !== 'string'
  ) {
    throw new Error(`Not an encrypted berth transfer bundle (expected format ${BUNDLE_FORMAT}, cipher aes-256-gcm, kdf scrypt).`);
  }
  if (e.schema_version !== BUNDLE_VERSION) throw new Error(`Unsupported schema_version ${String(e.schema_version)}; this berth reads ${BUNDLE_VERSION}.`);
  const cost = [k.N, k.r, k.p];
  if (!cost.every((n) => Number.isInteger(n) && n > 0) || k.N > KDF_MAX.N || (k.N & (k.N - 1)) !== 0 || k.r > KDF_MAX.r || k.p > KDF_MAX.p) {
    throw new Error(`The envelope's scrypt cost is out of bounds (N a power of two up to ${KDF_MAX.N}, r up to ${KDF_MAX.r}, p up to ${KDF_MAX.p}).`);
  }
  const iv = Buffer.from(e.iv, 'base64');
  const tag = Buffer.from(e.tag, 'base64');
  if (iv.length !== 12 || tag.length !== 16) throw new Error('The envelope is damaged (iv or tag of the wrong length).');
  const key = await deriveKey(passphrase, Buffer.from(k.salt, 'base64'), k);
  const decipher = createDecipheriv('aes-256-gcm', key, iv);
  decipher.setAAD(aad(e.schema_version));
  decipher.setAuthTag(tag);
  let json: string;
  try {
    json = Buffer.concat([decipher.update(Buffer.from(e.payload, 'base64')), decipher.final()]).toString('utf8');
  } catch {
    throw new Error('Wrong passphrase, or the bundle was changed after it was sealed.');
  }
  return JSON.parse(json) as unknown;
}
