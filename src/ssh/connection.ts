/**
 * One SSH connection to a server, reused by every request and stream that goes there: channels
 * forwarded to a unix socket on the host (`direct-streamlocal@openssh.com`), so nothing but sshd
 * and the engine is needed on the server. Keep-alive pings find a dead peer; the number of open
 * channels is bounded (callers beyond it wait); a connection that failed or closed is made again
 * by the next caller; one left without channels closes after a while.
 *
 * The host key is checked against the pinned fingerprint before anything is sent; with nothing
 * pinned (a first validate, or an explicit acceptance) the key presented is recorded instead.
 * Names are resolved here, and the address is checked by the caller's guard before connecting,
 * so a name that later resolves elsewhere cannot reach a refused address.
 */
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import type { Duplex } from 'node:stream';
import type { CipherAlgorithm, Client, ClientChannel, ConnectConfig } from 'ssh2';
import { channelSocket } from './channel-socket.js';
import { loadSsh2, sshFingerprint } from './key-material.js';

export type SshFailure = 'resolve' | 'address-refused' | 'refused' | 'unreachable' | 'timeout' | 'auth' | 'host-key-changed' | 'protocol' | 'closed' | 'channel';

/** A failure of the SSH layer, in words; `permanent` ones are not worth retrying as they are. */
export class SshError extends Error {
  override name = 'SshError';
  /** Lets the engine client tell it from socket errors (see engine.ts). */
  readonly code = 'BERTH_SSH';
  constructor(
    readonly kind: SshFailure,
    message: string,
    readonly permanent: boolean,
  ) {
    super(message);
  }
}

export interface SshConnectionOptions {
  host: string;
  port: number;
  username: string;
  /** A private key ssh2 parses (see keys.ts `forSsh2`). */
  privateKey: string;
  /** The key's fingerprint, named when the server refuses it. */
  keyFingerprint: string;
  /** The pinned host key, or null to accept the one presented (and report it). */
  hostKey: string | null;
  /** Why a resolved address must not be connected to, or null (network-guard.ts). */
  refuseAddress?: (address: string) => string | null;
  /** Name resolution (the system resolver unless given: tests stand in for DNS with it). */
  resolve?: (host: string) => Promise<string[]>;
  readyTimeoutMs?: number;
  keepaliveIntervalMs?: number;
  /** Close the connection after this long without an open channel. */
  idleMs?: number;
  maxChannels?: number;
}

/** Fastest first on these machines (bench/ssh): AES-GCM runs in OpenSSL on both ends. */
const CIPHERS: CipherAlgorithm[] = ['aes128-gcm@openssh.com', 'aes256-gcm@openssh.com', 'chacha20-poly1305@openssh.com', 'aes128-ctr', 'aes256-ctr'];

export class SshConnection {
  /** The host key fingerprint presented at the last handshake. */
  presentedHostKey: string | null = null;
  private client: Promise<Client> | null = null;
  private active = 0;
  private readonly waiting: (() => void)[] = [];
  private idleTimer: NodeJS.Timeout | undefined;
  private closed = false;
  readonly label: string;

  constructor(private readonly opts: SshConnectionOptions) {
    this.label = `${opts.username}@${opts.host.includes(':') ? `[${opts.host}]` : opts.host}:${opts.port}`;
  }

  get openChannels(): number {
    return this.active;
  }

  /** Connects (or reuses the connection) and resolves once the handshake and login are done. */
  async ready(): Promise<void> {
    await this.connection();
  }

  /** A stream to a unix socket on the host; the slot it holds is freed when the stream closes. */
  async openSocket(path: string, signal?: AbortSignal): Promise<Duplex> {
    await this.acquire(signal);
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      this.release();
    };
    try {
      const client = await this.connection();
      // sshd answers "open failed" when its connect to the socket fails for a moment (a busy
      // engine's full accept queue): nothing was sent yet, so opening again is safe.
      const open = () => new Promise<ClientChannel>((resolve, reject) => client.openssh_forwardOutStreamLocal(path, (err, ch) => (err ? reject(err) : resolve(ch))));
      let channel: ClientChannel | undefined;
      for (let attempt = 0; !channel; attempt++) {
        try {
          channel = await open();
        } catch (err) {
          if (attempt >= 7 || signal?.aborted || !/open failed/i.test((err as Error).message)) throw err;
          await new Promise((r) => setTimeout(r, 50 * 2 ** attempt));
        }
      }
      channel.once('close', release);
      return channelSocket(channel);
    } catch (err) {
      release();
      if (err instanceof SshError) throw err;
      throw new SshError('channel', `sshd on ${this.label} did not open a stream to ${path} (${(err as Error).message.replace(/^\(SSH\) /, '')})`, false);
    }
  }

  /** Runs a command on the host (diagnostics only); output is bounded. */
  async exec(command: string, timeoutMs = 10_000): Promise<{ code: number | null; stdout: string }> {
    await this.acquire();
    try {
      const client = await this.connection();
      return await new Promise((resolve, reject) => {
        client.exec(command, (err, ch) => {
          if (err) return reject(err);
          let stdout = '';
          const timer = setTimeout(() => ch.close(), timeoutMs);
          ch.on('data', (d: Buffer) => {
            if (stdout.length < 4096) stdout += d.toString('utf8');
          });
          ch.stderr.resume();
          // The exit status can arrive before the last output: answer only when the channel closes.
          let exitCode: number | null = null;
          ch.on('exit', (code: number | null) => {
            exitCode = code;
          });
          ch.on('close', () => {
            clearTimeout(timer);
            resolve({ code: exitCode, stdout });
          });
        });
      });
    } finally {
      this.release();
    }
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.idleTimer);
    const c = this.client;
    this.client = null;
    c?.then(
      (client) => client.end(),
      () => undefined,
    );
    for (const w of this.waiting.splice(0)) w();
  }

  private async acquire(signal?: AbortSignal): Promise<void> {
    if (this.closed) throw new SshError('closed', `the SSH connection to ${this.label} was closed`, false);
    clearTimeout(this.idleTimer);
    const max = this.opts.maxChannels ?? 16;
    while (this.active >= max) {
      signal?.throwIfAborted();
      await new Promise<void>((resolve) => {
        this.waiting.push(resolve);
        signal?.addEventListener('abort', () => resolve(), { once: true });
      });
      if (this.closed) throw new SshError('closed', `the SSH connection to ${this.label} was closed`, false);
    }
    this.active++;
  }

  private release(): void {
    this.active--;
    // Every waiter checks again (one may have given up on an abort and would swallow a single wake-up).
    for (const w of this.waiting.splice(0)) w();
    if (this.active === 0 && !this.closed) {
      clearTimeout(this.idleTimer);
      this.idleTimer = setTimeout(() => {
        if (this.active > 0) return;
        const c = this.client;
        this.client = null;
        c?.then(
          (client) => client.end(),
          () => undefined,
        );
      }, this.opts.idleMs ?? 60_000);
      this.idleTimer.unref();
    }
  }

  private connection(): Promise<Client> {
    if (this.closed) return Promise.reject(new SshError('closed', `the SSH connection to ${this.label} was closed`, false));
    if (!this.client) {
      const p = this.connect();
      this.client = p;
      // A failed attempt is not kept: the next caller tries again.
      p.then(
        (client) => client.once('close', () => this.client === p && (this.client = null)),
        () => this.client === p && (this.client = null),
      );
    }
    return this.client;
  }

  private async resolve(): Promise<string> {
    const { host } = this.opts;
    let addresses: string[];
    if (isIP(host.replace(/^\[|\]$/g, ''))) addresses = [host.replace(/^\[|\]$/g, '')];
    else {
      try {
        addresses = this.opts.resolve ? await this.opts.resolve(host) : (await lookup(host, { all: true })).map((a) => a.address);
      } catch (err) {
        const code = (err as { code?: string }).code ?? 'error';
        throw new SshError('resolve', `The host name ${host} could not be resolved (${code}): check the spelling, or give the server's IP address.`, false);
      }
    }
    // A name with any refused address is refused whole; otherwise the first address, checked
    // here, is the one connected to (no second lookup).
    const refusal = addresses.map((a) => this.opts.refuseAddress?.(a) ?? null).find((r) => r !== null);
    if (refusal || !addresses.length) throw new SshError('address-refused', `${host} resolves to an address berth does not connect to: ${refusal ?? 'no address'}`, true);
    return addresses[0]!;
  }

  private async connect(): Promise<Client> {
    const address = await this.resolve();
    const { Client } = loadSsh2();
    const o = this.opts;
    let mismatch: string | null = null;
    const client = new Client();
    const config: ConnectConfig = {
      host: address,
      port: o.port,
      username: o.username,
      privateKey: o.privateKey,
      readyTimeout: o.readyTimeoutMs ?? 10_000,
      keepaliveInterval: o.keepaliveIntervalMs ?? 15_000,
      keepaliveCountMax: 3,
      algorithms: { cipher: CIPHERS },
      hostVerifier: (key: Buffer) => {
        const fp = sshFingerprint(key);
        this.presentedHostKey = fp;
        if (o.hostKey !== null && fp !== o.hostKey) {
          mismatch = fp;
          return false;
        }
        return true;
      },
    };
    return await new Promise<Client>((resolve, reject) => {
      let settled = false;
      // ssh2 may report more than one error for one failure (and later ones for a dropped
      // connection, which surface on the channels): only the first decides, none is unhandled.
      client.on('error', (err: Error & { level?: string; code?: string }) => {
        if (settled) return;
        settled = true;
        client.end();
        reject(this.classify(err, mismatch));
      });
      client.once('ready', () => {
        if (settled) {
          client.end();
          return;
        }
        settled = true;
        resolve(client);
      });
      try {
        client.connect(config);
      } catch (err) {
        // ssh2 throws at once on a key it cannot use (keys are checked when stored, so rare).
        settled = true;
        reject(new SshError('auth', `The private key could not be used: ${(err as Error).message}`, true));
      }
    });
  }

  private classify(err: Error & { level?: string; code?: string }, mismatch: string | null): SshError {
    const o = this.opts;
    const at = `${o.host}:${o.port}`;
    if (mismatch) {
      return new SshError(
        'host-key-changed',
        `The SSH host key of ${at} changed: berth pinned ${o.hostKey}, the server now presents ${mismatch}. This happens after a reinstall, or when someone is in between. If you expected it, accept the new key deliberately: POST /api/v1/servers/{uuid}/validate with {"accept_host_key": true}, or PATCH the server with host_key_fingerprint set to the new fingerprint (or null).`,
        true,
      );
    }
    if (err.level === 'client-authentication') {
      return new SshError(
        'auth',
        `SSH login as ${o.username} on ${at} was refused for the key ${o.keyFingerprint}: add its public key to ~${o.username}/.ssh/authorized_keys on the server (GET /api/v1/security/keys/{uuid} shows it), or check the user.`,
        true,
      );
    }
    if (err.level === 'client-timeout')
      return new SshError(
        'timeout',
        `No SSH answer from ${at} within ${Math.round((o.readyTimeoutMs ?? 10_000) / 1000)} s: is the address right, and does a firewall let port ${o.port} through?`,
        false,
      );
    switch (err.code) {
      case 'ECONNREFUSED':
        return new SshError('refused', `Connection to ${at} refused: nothing listens on port ${o.port} (is sshd running, and is the port right?).`, false);
      case 'ETIMEDOUT':
        return new SshError('timeout', `Connection to ${at} timed out: is the address right, and does a firewall let port ${o.port} through?`, false);
      case 'EHOSTUNREACH':
      case 'ENETUNREACH':
      case 'EHOSTDOWN':
        return new SshError('unreachable', `${o.host} is unreachable from the berth host (${err.code}).`, false);
      case 'ECONNRESET':
        return new SshError('closed', `${at} closed the connection during the SSH handshake (sshd may refuse this client's address, or too many connections are open).`, false);
    }
    if (err.level === 'protocol' || /handshake|ident|protocol/i.test(err.message)) {
      return new SshError('protocol', `Something answered on ${at} that does not speak SSH as expected: is this the SSH port?`, true);
    }
    return new SshError('closed', `The SSH connection to ${at} failed (${err.code ?? err.level ?? 'error'}).`, false);
  }
}
