import dns from 'node:dns';
import { createRequire } from 'node:module';
import type { LookupFunction } from 'node:net';
import { isAllowed, parseAllowList, type AllowList } from '../auth/allowlist.js';
import { classifyHost, parseIp } from '../core/network-guard.js';
import { parseTarget, type Target, type TargetScheme } from './target-url.js';

/** Name resolution: every address of a name (the system resolver unless given; tests stand in for DNS). */
export type Resolver = (host: string) => Promise<string[]>;

export interface TargetGuardOptions {
  resolve?: Resolver;
}

/** What the one guarded client answered (bodies are read whole, up to a limit). */
export interface GuardedResponse {
  status: number;
  text: string;
}

const systemResolve: Resolver = async (host) => (await dns.promises.lookup(host, { all: true, verbatim: true })).map((a) => a.address);

/** Bodies of answers read at most this far (a webhook's or S3's answer is small). */
const MAX_ANSWER = 256 * 1024;

/**
 * Where berth may send a team's requests (notification webhooks, SMTP, S3 endpoints, git
 * repositories). The target is chosen by a tenant and reached from the berth host, so, as
 * Coolify's SafeWebhookUrl: never a metadata service or a link-local address, and no loopback,
 * private or reserved address, nor an address of the berth host's own interfaces, unless the
 * operator lists it in BERTH_OUTBOUND_ALLOWED_TARGETS (an intranet chat server, a MinIO on the
 * LAN). Checked when saved, on the URL as the one parser (target-url.ts) reads it, and again when
 * sending: the name is resolved once, every address checked, and the connection made to the
 * checked address (no second lookup, no redirect).
 */
export class TargetGuard {
  private readonly allowed: AllowList | null;
  private readonly lookupAll: Resolver;

  constructor(allowedTargets: string, opts: TargetGuardOptions = {}) {
    this.allowed = allowedTargets.trim() ? parseAllowList(allowedTargets) : null;
    this.lookupAll = opts.resolve ?? systemResolve;
  }

  /** Why berth will not send to this address, or null. */
  addressRefusal(address: string): string | null {
    const ip = parseIp(address);
    if (!ip) return `${address} is not an address.`;
    const cls = classifyHost(ip.toString());
    if (cls === 'metadata' || cls === 'link-local') return `${address} is a ${cls === 'metadata' ? 'cloud metadata service' : 'link-local address'}; berth never sends there.`;
    if (this.allowed && isAllowed(this.allowed, ip.toString())) return null;
    if (cls === 'host') return `${address} is an address of the berth host itself; the instance operator can allow it with BERTH_OUTBOUND_ALLOWED_TARGETS.`;
    if (ip.range() === 'unicast') return null;
    return `${address} is a private, loopback or reserved address; the instance operator can allow it with BERTH_OUTBOUND_ALLOWED_TARGETS.`;
  }

  /** Why a host name or literal is refused before any lookup (at save time), or null. */
  hostRefusal(host: string): string | null {
    const h = host.replace(/^\[|\]$/g, '').toLowerCase();
    // A name is letters, digits, dots and hyphens: nothing a resolver or client could read as more.
    if (!parseIp(h) && !/^[a-z0-9_-]+(\.[a-z0-9_-]+)*\.?$/.test(h)) return 'Must be a host name (letters, digits, dots and hyphens; punycode for others) or an IP address.';
    const cls = classifyHost(h);
    if (cls === 'metadata' || cls === 'link-local') return `${host} is a ${cls === 'metadata' ? 'cloud metadata service' : 'link-local address'}; berth never sends there.`;
    if (cls === 'loopback' && !parseIp(h)) return this.addressRefusal('127.0.0.1') && `${host} is the berth host itself; the instance operator can allow it with BERTH_OUTBOUND_ALLOWED_TARGETS.`;
    return parseIp(h) ? this.addressRefusal(h) : null;
  }

  /** The target of a URL as the one parser reads it, or why it is refused (parse, then host). */
  check(text: string, schemes: readonly TargetScheme[] = ['http', 'https'], opts: { repository?: boolean } = {}): Target | string {
    const t = parseTarget(text, schemes, opts);
    if (typeof t === 'string') return t;
    return this.hostRefusal(t.host) ?? t;
  }

  /** Why a webhook URL is refused (form, scheme, host), or null. */
  urlRefusal(text: string, schemes: readonly TargetScheme[] = ['http', 'https']): string | null {
    const t = this.check(text, schemes);
    return typeof t === 'string' ? t : null;
  }

  /** The checked target of a URL, or an Error saying why not (for the code that connects). */
  target(text: string, schemes: readonly TargetScheme[] = ['http', 'https'], opts: { repository?: boolean } = {}): Target {
    const t = this.check(text, schemes, opts);
    if (typeof t === 'string') throw new Error(`refused to connect: ${t}`);
    return t;
  }

  /**
   * Resolves a host once and checks every address it has (DNS answers change after the save):
   * the address to connect to, which the caller pins; nothing connects to the name again.
   */
  async resolve(host: string): Promise<string> {
    const h = host.replace(/^\[|\]$/g, '');
    const addresses = parseIp(h) ? [h] : await this.lookupAll(h);
    for (const a of addresses) {
      const why = this.addressRefusal(a);
      if (why) throw new Error(`refused to send to ${host}: ${why}`);
    }
    if (!addresses.length) throw new Error(`${host} does not resolve`);
    return addresses[0]!;
  }

  /**
   * The one guarded HTTP client for tenant-chosen URLs: the URL read by the one parser, the host
   * resolved once and checked, the connection made to that address (TLS still checks the name),
   * redirects never followed (a 3xx is the answer), bounded time and answer size.
   */
  async fetch(url: string, init: { method: 'GET' | 'POST'; headers?: Record<string, string>; body?: string; timeoutMs: number; maxAnswer?: number }): Promise<GuardedResponse> {
    const max = init.maxAnswer ?? MAX_ANSWER;
    const target = this.target(url);
    const address = await this.resolve(target.host);
    // Loaded on first use: an MCP session over stdio rarely sends anything and starts faster without it.
    const { Agent, request } = createRequire(import.meta.url)('undici') as typeof import('undici');
    const family = address.includes(':') ? 6 : 4;
    const pinned: LookupFunction = (hostname, opts, cb) => {
      if (hostname.replace(/^\[|\]$/g, '').toLowerCase() !== target.host) return cb(new Error(`refused to connect to ${hostname}: not the checked host`) as NodeJS.ErrnoException, '', 4);
      if ((opts as { all?: boolean }).all) (cb as unknown as (e: null, a: { address: string; family: number }[]) => void)(null, [{ address, family }]);
      else cb(null, address, family);
    };
    const agent = new Agent({ connect: { lookup: pinned, timeout: init.timeoutMs }, headersTimeout: init.timeoutMs, bodyTimeout: init.timeoutMs, connections: 1, pipelining: 0 });
    try {
      const r = await request(target.url, { method: init.method, headers: init.headers ?? {}, body: init.body ?? null, dispatcher: agent });
      let text = '';
      for await (const chunk of r.body) {
        if (text.length < max) text += (chunk as Buffer).toString('utf8');
      }
      return { status: r.statusCode, text: text.slice(0, max) };
    } finally {
      await agent.close().catch(() => undefined);
    }
  }
}
