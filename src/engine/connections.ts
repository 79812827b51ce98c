/**
 * The transport seam: one Engine API client per server, made from its record, whatever the way
 * in: a unix socket on the berth host, TCP (with TLS), or SSH with the team's key (a channel per
 * HTTP connection, over one reused SSH connection). Everything above — plans, deployments, volume
 * copies — is the same for all three.
 *
 * The isolation rules (core/network-guard.ts) are enforced again here, at connect time, on the
 * address a name resolved to: the core checked the record when it was written, but records made
 * before those rules, or names that now resolve elsewhere, must not get through either.
 */
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import type { LookupFunction } from 'node:net';
import type { Logger } from 'pino';
import { engineTargetOf, type EngineTarget } from '../core/engine-target.js';
import { hostRefusal, parseIp, targetRefusal } from '../core/network-guard.js';
import type { ServerEngine, ValidationResult } from '../core/runtime.js';
import type { Db } from '../store/db.js';
import { readSettings } from '../store/settings.js';
import { SshConnection, SshError } from '../ssh/connection.js';
import { inspectPrivateKey } from '../ssh/key-material.js';
import { describeEngineFailure, diagnoseSocket } from './diagnose.js';
import { EngineClient, type EngineClientOptions } from './engine-client.js';
import { EngineUnreachableError } from './engine-errors.js';

type SshTarget = Extract<EngineTarget, { transport: 'ssh' }>;

interface Cached {
  /** What the client was made from; a different one (new key, endpoint, pin) replaces it. */
  fingerprint: string;
  engine: EngineClient;
  ssh?: SshConnection;
}

/** Options of the SSH connections (shorter in tests). */
export interface SshTuning {
  readyTimeoutMs?: number;
  keepaliveIntervalMs?: number;
  idleMs?: number;
  maxChannels?: number;
}

class RefusedAddressError extends Error {
  readonly code = 'BERTH_ADDRESS_REFUSED';
  readonly permanent = true;
}

/**
 * DNS lookup for TCP endpoints that never hands a refused address to the socket: a name with any
 * refused address is refused whole (it names the host, whatever else it names), and the socket
 * connects to the address checked here.
 */
function guardedLookup(rootTeam: boolean): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (err, addresses: LookupAddress[]) => {
      if (err) return (callback as (e: Error) => void)(err);
      const refused = addresses.map((a) => hostRefusal(a.address, rootTeam)).find((r) => r !== null);
      const allowed = refused ? [] : addresses;
      if (!allowed.length) {
        const reason = refused ?? 'no address';
        return (callback as (e: Error) => void)(new RefusedAddressError(`${hostname} resolves to an address berth does not connect to: ${reason}`));
      }
      if ((options as { all?: boolean }).all) (callback as (e: null, a: LookupAddress[]) => void)(null, allowed);
      else (callback as (e: null, a: string, f: number) => void)(null, allowed[0]!.address, allowed[0]!.family);
    });
  };
}

export class EngineConnections {
  private readonly cache = new Map<number, Cached>();

  constructor(
    private readonly db: Db,
    private readonly logger: Logger,
    private readonly ssh: SshTuning = {},
  ) {}

  private async rootTeam(server: ServerEngine): Promise<boolean> {
    return (await readSettings(this.db)).rootTeamId === server.team_id;
  }

  private async privateKey(server: ServerEngine) {
    if (server.private_key_id === null) throw new SshError('auth', 'The server has no private key: give it private_key_uuid.', true);
    const row = await this.db.selectFrom('private_keys').select(['private_key']).where('id', '=', server.private_key_id).where('team_id', '=', server.team_id).executeTakeFirst();
    if (!row) throw new SshError('auth', 'The server’s private key is gone: give it another private_key_uuid.', true);
    return inspectPrivateKey(row.private_key);
  }

  /** Refuses what this server's team may not reach (null when it may), before any connection. */
  private async refusal(server: ServerEngine, target: EngineTarget): Promise<string | null> {
    const root = await this.rootTeam(server);
    const byRecord = targetRefusal(target, root);
    if (byRecord) return byRecord;
    // An IP literal skips name resolution, so the guard never sees it there.
    if (target.transport !== 'unix' && parseIp(target.host)) return hostRefusal(target.host, root);
    return null;
  }

  private sshConnection(_server: ServerEngine, target: SshTarget, key: { forSsh2: string; fingerprint: string }, hostKey: string | null, rootTeam: boolean): SshConnection {
    return new SshConnection({
      host: target.host,
      port: target.port,
      username: target.user,
      privateKey: key.forSsh2,
      keyFingerprint: key.fingerprint,
      hostKey,
      refuseAddress: (a) => hostRefusal(a, rootTeam),
      ...this.ssh,
    });
  }

  private async clientFor(server: ServerEngine, target: EngineTarget, extra: Partial<EngineClientOptions> = {}): Promise<EngineClient> {
    const tls = server.engine_tls ? (JSON.parse(server.engine_tls) as { ca: string; cert: string; key: string }) : undefined;
    const lookup = target.transport === 'tcp' ? guardedLookup(await this.rootTeam(server)) : undefined;
    return new EngineClient({ endpoint: target.endpoint, ...(tls ? { tls } : {}), ...(lookup ? { lookup } : {}), ...extra });
  }

  /** The server's engine client, reused while its record says the same thing. */
  async engineFor(server: ServerEngine): Promise<EngineClient> {
    const target = engineTargetOf(server);
    if (!target) throw new Error('The server has neither an engine endpoint nor a private key.');
    const refusal = await this.refusal(server, target);
    if (refusal) throw new EngineUnreachableError({ endpoint: target.endpoint, code: 'BERTH_ADDRESS_REFUSED', reason: refusal, permanent: true });
    let key: Awaited<ReturnType<EngineConnections['privateKey']>> | undefined;
    if (target.transport === 'ssh') {
      if (!server.host_key_fingerprint) throw new Error('The SSH host key of this server is not known yet: validate the server first.');
      key = await this.privateKey(server);
    }
    const fingerprint = JSON.stringify([target, server.engine_tls, key?.fingerprint ?? null, server.host_key_fingerprint]);
    const cached = this.cache.get(server.id);
    if (cached?.fingerprint === fingerprint) return cached.engine;
    if (cached) this.drop(server.id, cached);
    let made: Cached;
    if (target.transport === 'ssh') {
      const ssh = this.sshConnection(server, target, key!, server.host_key_fingerprint, await this.rootTeam(server));
      made = { fingerprint, ssh, engine: await this.clientFor(server, target, { dial: (signal) => ssh.openSocket(target.socketPath, signal) }) };
    } else {
      made = { fingerprint, engine: await this.clientFor(server, target) };
    }
    this.cache.set(server.id, made);
    return made.engine;
  }

  private drop(serverId: number, c: Cached): void {
    this.cache.delete(serverId);
    void c.engine.close().catch((err) => this.logger.debug({ err }, 'engine close'));
    c.ssh?.close();
  }

  /**
   * Connects afresh (nothing cached is trusted) and checks that a Docker Engine API answers and
   * lets berth read containers and volumes. Over SSH, a server without a pinned host key (or with
   * `acceptHostKey`) pins the key it presents now; a different key than the pinned one refuses.
   */
  async validate(server: ServerEngine, opts: { acceptHostKey?: boolean } = {}): Promise<ValidationResult> {
    const target = engineTargetOf(server);
    if (!target) return { reachable: false, usable: false, logs: 'The server has neither an engine_endpoint nor a private key, so berth cannot reach it.' };
    const refusal = await this.refusal(server, target);
    if (refusal) return { reachable: false, usable: false, logs: refusal };
    const lines: string[] = [];
    let ssh: SshConnection | undefined;
    let engine: EngineClient | undefined;
    let pinned: string | null | undefined;
    try {
      if (target.transport === 'ssh') {
        let key;
        try {
          key = await this.privateKey(server);
        } catch (err) {
          return { reachable: false, usable: false, logs: (err as Error).message };
        }
        const trusted = opts.acceptHostKey ? null : server.host_key_fingerprint;
        ssh = this.sshConnection(server, target, key, trusted, await this.rootTeam(server));
        try {
          await ssh.ready();
        } catch (err) {
          return { reachable: false, usable: false, logs: describeEngineFailure(err, target) };
        }
        pinned = ssh.presentedHostKey;
        lines.push(`SSH: logged in as ${target.user} on ${target.host}:${target.port} with key ${key.fingerprint}; the host presented ${pinned}${trusted === null ? '' : ', the pinned key'}.`);
        const channel = ssh;
        engine = await this.clientFor(server, target, { dial: (signal) => channel.openSocket(target.socketPath, signal), retry: { retries: 0 } });
      } else {
        engine = await this.clientFor(server, target, { retry: { retries: 0 } });
      }
      try {
        await engine.ping();
        const v = await engine.version();
        // Usable: berth can read what it needs to manage (containers and volumes).
        await engine.listContainers({ labels: { 'berth.managed': 'true' } });
        await engine.listVolumes();
        // Coolify's is_swarm_manager / is_swarm_worker: an active node that answers the swarm API is a manager.
        const sw = await engine.swarmState();
        const swarm = sw.localNodeState !== 'active' ? 'none' : sw.controlAvailable ? 'manager' : 'worker';
        if (pinned && pinned !== server.host_key_fingerprint) {
          lines.push(
            server.host_key_fingerprint ? `Host key ${pinned} accepted, replacing ${server.host_key_fingerprint}.` : `Host key ${pinned} pinned (trust on first use): a different key will be refused.`,
          );
        }
        lines.push(
          `Docker-compatible engine ${String(v.Version).slice(0, 40)} (API ${String(v.ApiVersion).slice(0, 10)}, ${String(v.Os ?? '?').slice(0, 20)}/${String(v.Arch ?? '?').slice(0, 20)}) at ${target.endpoint}.`,
        );
        if (swarm !== 'none') lines.push(`Docker Swarm: this node is a ${swarm} (${sw.nodes} node(s), ${sw.managers} manager(s)).`);
        return { reachable: true, usable: true, swarm, logs: lines.join('\n'), ...(pinned !== undefined ? { hostKeyFingerprint: pinned } : {}) };
      } catch (err) {
        const cause = (err as { cause?: unknown }).cause;
        const channelFailed = ssh && target.transport === 'ssh' && cause instanceof SshError && cause.kind === 'channel';
        lines.push(channelFailed ? await diagnoseSocket(ssh!, target as SshTarget) : describeEngineFailure(err, target));
        // As Coolify: reachable means the SSH login worked; usable needs the engine. The host key
        // is pinned only by a validate that succeeds whole.
        return { reachable: ssh !== undefined, usable: false, logs: lines.join('\n') };
      }
    } finally {
      await engine?.close().catch(() => undefined);
      ssh?.close();
    }
  }

  async close(): Promise<void> {
    for (const [id, c] of [...this.cache]) this.drop(id, c);
  }
}
