import { execFileSync, spawnSync } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { inspectPrivateKey, KeyProblem } from '../../src/ssh/key-material.js';

const hasKeygen = spawnSync('ssh-keygen', ['-?'], { stdio: 'ignore' }).error === undefined;
if (!hasKeygen && process.env.CI) throw new Error('ssh-keygen is needed in CI (openssh-client)');

const dir = mkdtempSync(path.join(os.tmpdir(), 'berth-keys-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A key made by the real ssh-keygen, and what ssh-keygen itself says of its public half. */
function keygen(name: string, args: string[]): { text: string; fingerprint: string; publicLine: string } {
  const file = path.join(dir, name);
  execFileSync('ssh-keygen', ['-q', '-N', '', '-C', `${name}@test`, '-f', file, ...args]);
  const printed = execFileSync('ssh-keygen', ['-lf', `${file}.pub`], { encoding: 'utf8' });
  return { text: readFileSync(file, 'utf8'), fingerprint: printed.split(' ')[1]!, publicLine: readFileSync(`${file}.pub`, 'utf8').trim() };
}

describe.skipIf(!hasKeygen)('private keys people have', () => {
  it.each([
    ['OpenSSH ed25519 (the default of current ssh-keygen)', 'ed', ['-t', 'ed25519']],
    ['OpenSSH ecdsa', 'ec', ['-t', 'ecdsa']],
    ['OpenSSH RSA', 'rsa', ['-t', 'rsa', '-b', '2048']],
    ['PEM PKCS#1 RSA', 'rsapem', ['-t', 'rsa', '-b', '2048', '-m', 'PEM']],
    ['PEM SEC1 ecdsa', 'ecpem', ['-t', 'ecdsa', '-m', 'PEM']],
    ['PEM PKCS#8 RSA', 'rsap8', ['-t', 'rsa', '-b', '2048', '-m', 'PKCS8']],
    ['PEM PKCS#8 ecdsa', 'ecp8', ['-t', 'ecdsa', '-m', 'PKCS8']],
  ])('%s: fingerprint as ssh-keygen -lf prints it, public key as ssh-keygen wrote it', async (_label, name, args) => {
    const k = keygen(name, args);
    const got = await inspectPrivateKey(k.text);
    expect(got.fingerprint).toBe(k.fingerprint);
    // OpenSSH-format keys carry their comment; PEM ones do not (ssh-keygen -y prints none either).
    const [type, blob] = k.publicLine.split(' ');
    expect(got.publicKey.split(' ').slice(0, 2)).toEqual([type, blob]);
    if (!args.includes('-m')) expect(got.publicKey).toBe(k.publicLine);
  });

  it('PKCS#8 ed25519 (as openssl or Node write it) is read, and ssh-keygen agrees with the OpenSSH form handed to ssh2', async () => {
    const pem = generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    const got = await inspectPrivateKey(pem);
    expect(got.type).toBe('ssh-ed25519');
    const file = path.join(dir, 'edp8-openssh');
    writeFileSync(file, got.forSsh2, { mode: 0o600 });
    const derived = execFileSync('ssh-keygen', ['-y', '-f', file], { encoding: 'utf8' }).trim();
    expect(derived.split(' ').slice(0, 2).join(' ')).toBe(got.publicKey);
  });

  it.each([
    [
      'OpenSSH with a passphrase',
      () => {
        const file = path.join(dir, 'enc');
        execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', 'secret-pass', '-f', file]);
        return readFileSync(file, 'utf8');
      },
    ],
    [
      'PKCS#1 RSA with a passphrase',
      () => {
        const file = path.join(dir, 'encpem');
        execFileSync('ssh-keygen', ['-q', '-t', 'rsa', '-b', '2048', '-m', 'PEM', '-N', 'secret-pass', '-f', file]);
        return readFileSync(file, 'utf8');
      },
    ],
    ['encrypted PKCS#8', () => generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem', cipher: 'aes-256-cbc', passphrase: 'secret-pass' }).toString()],
  ])('%s: refused with a message that says to remove the passphrase', async (_label, make) => {
    await expect(inspectPrivateKey(make())).rejects.toThrow(/passphrase.*ssh-keygen -p/s);
  });

  it('a public key, garbage, and DSA are refused with a reason', async () => {
    const k = keygen('pubonly', ['-t', 'ed25519']);
    await expect(inspectPrivateKey(k.publicLine)).rejects.toBeInstanceOf(KeyProblem);
    await expect(inspectPrivateKey('-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\n-----END OPENSSH PRIVATE KEY-----\n')).rejects.toBeInstanceOf(KeyProblem);
    const dsa = spawnSync('ssh-keygen', ['-q', '-t', 'dsa', '-N', '', '-f', path.join(dir, 'dsa')]);
    if (dsa.status === 0) await expect(inspectPrivateKey(readFileSync(path.join(dir, 'dsa'), 'utf8'))).rejects.toThrow(/DSA/);
  });
});
