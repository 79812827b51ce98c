import dns from 'node:dns';
import { createRequire } from 'node:module';
import type { LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';
import type { Agent } from 'undici';
import { isAllowed, parseAllowList, type AllowList } from '../auth/allowlist.js';
import { classifyHost, parseIp } from '../core/network-guard.js';

/**
 * Where berth may send a team's requests (notification webhooks, SMTP, S3 endpoints). The target
 * is chosen by a tenant and reached from the berth host, so, as Coolify's SafeWebhookUrl: never a metadata service or a
 * link-local address, and no loopback or private address unless the operator lists it in
 * BERTH_OUTBOUND_ALLOWED_TARGETS (an intranet chat server, a MinIO on the LAN). Checked when saved, on the literal,
 * and again when sending, on every address the name resolves to.
 */
export class TargetGuard {
  private readonly allowed: AllowList | null;

  constructor(allowedTargets: string) {
    this.allowed = allowedTargets.trim() ? parseAllowList(allowedTargets) : null;
  }

  /** Why berth will not send to this address, or null. */
  addressRefusal(address: string): string | null {
    const ip = parseIp(address);
    if (!ip) return `${address} is not an address.`;
    const cls = classifyHost(ip.toString());
    if (cls === 'metadata' || cls === 'link-local') return `${address} is a ${cls === 'metadata' ? 'cloud metadata service' : 'link-local address'}; berth never sends there.`;
    if (ip.range() === 'unicast') return null;
    if (this.allowed && isAllowed(this.allowed, ip.toString())) return null;
    return `${address} is a private, loopback or reserved address; the instance operator can allow it with BERTH_OUTBOUND_ALLOWED_TARGETS.`;
  }

  /** Why a host name or literal is refused before any lookup (at save time), or null. */
  hostRefusal(host: string): string | null {
    const h = host.replace(/^\[|\]$/g, '').toLowerCase();
    const cls = classifyHost(h);
    if (cls === 'metadata' || cls === 'link-local') return `${host} is a ${cls === 'metadata' ? 'cloud metadata service' : 'link-local address'}; berth never sends there.`;
    if (cls === 'loopback' && !parseIp(h)) return this.addressRefusal('127.0.0.1') && `${host} is the berth host itself; the instance operator can allow it with BERTH_OUTBOUND_ALLOWED_TARGETS.`;
    return parseIp(h) ? this.addressRefusal(h) : null;
  }

  /** Why a webhook URL is refused (scheme, host), or null. */
  urlRefusal(text: string): string | null {
    let url: URL;
    try {
      url = new URL(text);
    } catch {
      return 'Must be a valid URL.';
    }
    if (url.protocol !== 'https:' && url.protocol !== 'http:') return 'Must use the http or https scheme.';
    if (!url.hostname) return 'Must contain a host.';
    return this.hostRefusal(url.hostname);
  }

  /** Resolves a host and checks every address (DNS answers can change after the save). */
  async resolve(host: string): Promise<string> {
    const h = host.replace(/^\[|\]$/g, '');
    const addresses = ipaddr.isValid(h) ? [{ address: h }] : await dns.promises.lookup(h, { all: true });
    for (const a of addresses) {
      const why = this.addressRefusal(a.address);
      if (why) throw new Error(`refused to send to ${host}: ${why}`);
    }
    if (!addresses.length) throw new Error(`${host} does not resolve`);
    return addresses[0]!.address;
  }

  /**
   * An HTTP dispatcher whose every connection is checked on the address it is made to, so a name
   * that later resolves to a private address is refused too.
   */
  dispatcher(timeoutMs: number): Agent {
    // Loaded on first use: an MCP session over stdio rarely sends anything and starts faster without it.
    const { Agent } = createRequire(import.meta.url)('undici') as typeof import('undici');
    const lookup: LookupFunction = (hostname, opts, cb) => {
      this.resolve(hostname).then(
        (address) => {
          const family = address.includes(':') ? 6 : 4;
          if ((opts as { all?: boolean }).all) (cb as unknown as (e: null, a: { address: string; family: number }[]) => void)(null, [{ address, family }]);
          else cb(null, address, family);
        },
        (err: Error) => cb(err as NodeJS.ErrnoException, '', 4),
      );
    };
    return new Agent({ connect: { lookup, timeout: timeoutMs }, headersTimeout: timeoutMs, bodyTimeout: timeoutMs });
  }
}
