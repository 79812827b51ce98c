/**
 * A real OpenSSH server on loopback for tests, started by scripts/sshd.sh with its own config,
 * host key and authorized keys (see the script). Keys for berth are made with the real
 * ssh-keygen.
 *
 *   describe.skipIf(!sshdAvailable)('…', () => {
 *     const sshd = useSshd();             // beforeAll: up, afterAll: down
 *     it('…', () => { sshd.authorize('root', key.publicLine) … });
 *   });
 *
 * When sshd is missing, loading this module tries `scripts/sshd.sh install` once. In CI (`CI`
 * set) an sshd that still cannot be had throws, so the run fails; elsewhere the tests skip.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { appendFileSync, chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { freePort } from './process.js';

export const SSHD_SCRIPT = path.resolve(import.meta.dirname, '../../scripts/sshd.sh');
/** An ordinary account on this machine without access to any engine socket (made by sshd.sh install). */
export const SSH_TEST_USER = 'berth-ssh-test';

function has(): boolean {
  return spawnSync('sh', ['-c', `test -x /usr/sbin/sshd && command -v ssh-keygen && id ${SSH_TEST_USER}`], { stdio: 'ignore' }).status === 0;
}

function detect(): { available: boolean; reason: string } {
  if (process.platform !== 'linux') return { available: false, reason: 'sshd tests need Linux' };
  if (!has()) {
    const r = spawnSync('bash', [SSHD_SCRIPT, 'install'], { encoding: 'utf8', timeout: 300_000 });
    if (!has()) return { available: false, reason: `sshd not installable: ${(r.stderr || r.error?.message || '').trim().slice(-300)}` };
  }
  return { available: true, reason: '' };
}

const detected = detect();
if (!detected.available && process.env.CI) throw new Error(`SSH tests need sshd in CI (${detected.reason})`);
export const sshdAvailable = detected.available;

export interface TestKey {
  /** The private key file's text, as ssh-keygen wrote it (OpenSSH format unless asked). */
  text: string;
  /** The authorized_keys line. */
  publicLine: string;
  /** `SHA256:…` as ssh-keygen -lf prints it. */
  fingerprint: string;
}

const keyDir = mkdtempSync(path.join(os.tmpdir(), 'berth-sshkeys-'));
let keySeq = 0;

/** A fresh key pair made by ssh-keygen (ed25519 unless told otherwise). */
export function makeKey(args: string[] = ['-t', 'ed25519']): TestKey {
  const file = path.join(keyDir, `k${++keySeq}`);
  execFileSync('ssh-keygen', ['-q', '-N', '', '-C', `berth-test-${keySeq}`, '-f', file, ...args]);
  const printed = execFileSync('ssh-keygen', ['-lf', `${file}.pub`], { encoding: 'utf8' });
  return { text: readFileSync(file, 'utf8'), publicLine: readFileSync(`${file}.pub`, 'utf8').trim(), fingerprint: printed.split(' ')[1]! };
}

export interface TestSshd {
  dir: string;
  port: number;
  /** The host key's fingerprint now (changes after rekey). */
  hostKey(): string;
  /** Adds a key to the user's authorized keys. */
  authorize(user: string, publicLine: string): void;
  /** Replaces the user's authorized keys (none: empty). */
  setAuthorized(user: string, lines: string[]): void;
  /** A new host key, sshd restarted (what a reinstalled server looks like). */
  rekey(): void;
  /** How many SSH connections are open (per-connection sshd processes). */
  connections(): number;
  /** Kills every open SSH connection (the per-connection sshd processes); the listener stays. */
  dropConnections(): number;
}

function children(dir: string): string[] {
  const listener = readFileSync(path.join(dir, 'sshd.pid.launcher'), 'utf8').trim();
  // Pids are reused: a listener that has gone would name another process's children.
  if (!readFileSync(`/proc/${listener}/cmdline`, 'utf8').includes(`${dir}/sshd_config`)) throw new Error(`sshd of ${dir} is not running`);
  return spawnSync('pgrep', ['-P', listener], { encoding: 'utf8' }).stdout.split('\n').filter(Boolean);
}

export function useSshd(): TestSshd {
  const t = {} as TestSshd;
  beforeAll(async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'berth-sshd-'));
    // sshd reads a user's authorized keys as that user: the test account must be able to.
    chmodSync(dir, 0o755);
    const port = await freePort();
    execFileSync('bash', [SSHD_SCRIPT, 'up', dir, String(port)], { stdio: ['ignore', 'ignore', 'pipe'], timeout: 60_000 });
    const keysOf = (user: string) => path.join(dir, 'authorized_keys', user);
    Object.assign(t, {
      dir,
      port,
      hostKey: () => execFileSync('bash', [SSHD_SCRIPT, 'hostkey', dir], { encoding: 'utf8' }).trim(),
      authorize: (user: string, line: string) => appendFileSync(keysOf(user), `${line}\n`, { mode: 0o644 }),
      setAuthorized: (user: string, lines: string[]) => writeFileSync(keysOf(user), lines.map((l) => `${l}\n`).join(''), { mode: 0o644 }),
      rekey: () => execFileSync('bash', [SSHD_SCRIPT, 'rekey', dir], { stdio: ['ignore', 'ignore', 'pipe'], timeout: 60_000 }),
      connections: () => children(dir).length,
      dropConnections: () => {
        const pids = children(dir);
        for (const pid of pids) spawnSync('kill', ['-KILL', pid]);
        return pids.length;
      },
    } satisfies TestSshd);
  }, 90_000);
  afterAll(() => {
    if (t.dir) spawnSync('bash', [SSHD_SCRIPT, 'down', t.dir], { stdio: 'ignore', timeout: 60_000 });
  });
  return t;
}

process.on('exit', () => rmSync(keyDir, { recursive: true, force: true }));
