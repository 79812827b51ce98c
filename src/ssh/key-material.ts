/**
 * Private keys people have: OpenSSH format (what every current ssh-keygen writes: ed25519, ecdsa,
 * RSA) and PEM (PKCS#1 RSA, SEC1 EC, PKCS#8). ssh2's parser reads all of them except PKCS#8, which
 * Node's crypto reads and re-exports in a form ssh2 takes. The key is kept as given; `forSsh2`
 * is what a connection hands to ssh2.
 */
import { createHash, createPrivateKey, randomBytes, type KeyObject } from 'node:crypto';
import { createRequire } from 'node:module';

export interface InspectedKey {
  /** ssh-ed25519, ecdsa-sha2-nistp256, ssh-rsa, … */
  type: string;
  /** One authorized_keys line: `<type> <base64 blob>[ <comment>]`. */
  publicKey: string;
  /** `SHA256:…` exactly as `ssh-keygen -lf` prints it. */
  fingerprint: string;
  /** The key in a format ssh2 parses (the given text unless it was PKCS#8). */
  forSsh2: string;
}

/** Why a key cannot be used, in words a person can act on. */
export class KeyProblem extends Error {
  override name = 'KeyProblem';
}

const ENCRYPTED = 'The private key is protected by a passphrase; berth needs it without one (as Coolify does). Remove it with `ssh-keygen -p -N "" -f <keyfile>` and upload the key again.';

type Ssh2 = typeof import('ssh2');
let ssh2: Ssh2 | undefined;
/**
 * ssh2 loads on first use: `berth mcp` starts for every desktop session and rarely needs it. A
 * plain require (the bundle runs as a script, where a dynamic import() of a package has no loader).
 */
export function loadSsh2(): Ssh2 {
  return (ssh2 ??= createRequire(import.meta.url)('ssh2') as Ssh2);
}

/** SHA-256 fingerprint of an SSH public key blob, as OpenSSH prints it. */
export function sshFingerprint(blob: Uint8Array): string {
  return `SHA256:${createHash('sha256').update(blob).digest('base64').replace(/=+$/, '')}`;
}

export async function inspectPrivateKey(text: string): Promise<InspectedKey> {
  const { utils } = loadSsh2();
  let forSsh2 = text;
  let parsed = utils.parseKey(text);
  if (parsed instanceof Error) {
    if (/encrypted|passphrase/i.test(parsed.message) || /Proc-Type:\s*4,ENCRYPTED|BEGIN ENCRYPTED PRIVATE KEY/.test(text)) throw new KeyProblem(ENCRYPTED);
    forSsh2 = fromPkcs8(text);
    parsed = utils.parseKey(forSsh2);
    if (parsed instanceof Error) throw new KeyProblem(`Invalid private key: ${parsed.message}.`);
  }
  const key = Array.isArray(parsed) ? parsed[0] : parsed;
  if (!key?.isPrivateKey()) throw new KeyProblem('Invalid private key: this is a public key; upload the private half.');
  if (key.type === 'ssh-dss') throw new KeyProblem('DSA keys are refused by current OpenSSH servers; make an ed25519 key with `ssh-keygen -t ed25519`.');
  const blob = key.getPublicSSH();
  const comment = key.comment?.trim();
  return {
    type: key.type,
    publicKey: `${key.type} ${Buffer.from(blob).toString('base64')}${comment ? ` ${comment}` : ''}`,
    fingerprint: sshFingerprint(blob),
    forSsh2,
  };
}

/** A PKCS#8 key (`BEGIN PRIVATE KEY`) re-exported as PKCS#1, SEC1 or OpenSSH for ssh2. */
function fromPkcs8(text: string): string {
  let k: KeyObject;
  try {
    k = createPrivateKey(text);
  } catch (err) {
    if ((err as { code?: string }).code === 'ERR_MISSING_PASSPHRASE') throw new KeyProblem(ENCRYPTED);
    throw new KeyProblem('Invalid private key: expected an OpenSSH or PEM (PKCS#1, PKCS#8) private key.');
  }
  switch (k.asymmetricKeyType) {
    case 'rsa':
      return k.export({ type: 'pkcs1', format: 'pem' }).toString();
    case 'ec':
      return k.export({ type: 'sec1', format: 'pem' }).toString();
    case 'ed25519':
      return ed25519OpenSsh(k);
    default:
      throw new KeyProblem(`Unsupported key type ${k.asymmetricKeyType ?? 'unknown'}: use ed25519, ecdsa or RSA.`);
  }
}

/**
 * OpenSSH has no PEM form for ed25519 that ssh2 reads, so a PKCS#8 ed25519 key is written in
 * OpenSSH's own container (PROTOCOL.key: unencrypted, one key). Only the framing is ours; the
 * key bytes come from Node's parser, and the result is parsed again by ssh2 before use.
 */
function ed25519OpenSsh(k: KeyObject): string {
  const jwk = k.export({ format: 'jwk' });
  const seed = Buffer.from(jwk.d!, 'base64url');
  const pub = Buffer.from(jwk.x!, 'base64url');
  const u32 = (n: number) => {
    const b = Buffer.alloc(4);
    b.writeUInt32BE(n);
    return b;
  };
  const str = (b: Buffer | string) => {
    const buf = typeof b === 'string' ? Buffer.from(b) : b;
    return Buffer.concat([u32(buf.length), buf]);
  };
  const publicBlob = Buffer.concat([str('ssh-ed25519'), str(pub)]);
  const check = randomBytes(4);
  let secret = Buffer.concat([check, check, str('ssh-ed25519'), str(pub), str(Buffer.concat([seed, pub])), str('')]);
  const pad = (8 - (secret.length % 8)) % 8;
  secret = Buffer.concat([secret, Buffer.from(Array.from({ length: pad }, (_, i) => i + 1))]);
  const body = Buffer.concat([Buffer.from('openssh-key-v1\0'), str('none'), str('none'), str(''), u32(1), str(publicBlob), str(secret)]);
  const b64 = body.toString('base64').replace(/.{1,70}/g, '$&\n');
  return `-----BEGIN OPENSSH PRIVATE KEY-----\n${b64}-----END OPENSSH PRIVATE KEY-----\n`;
}
