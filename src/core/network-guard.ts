import os from 'node:os';
import ipaddr from 'ipaddr.js';
import type { EngineTarget } from './engine-target.js';

/**
 * Which addresses berth may connect to for a team. Two holes are closed here, once, for the
 * core (at create/update, without connecting) and for the runtime (at connect time, on the
 * address a name resolved to, so a DNS answer that changes later cannot sneak past):
 *
 * - cloud metadata services and link-local addresses are never an engine or SSH host (SSRF:
 *   instance credentials live there);
 * - the berth host itself (its unix sockets, loopback, every address of its own interfaces, and
 *   names resolving to any of them) belongs to the instance's root team, for engine ports and SSH
 *   alike: another team reaching it would be root on the host that keeps every team's secrets, or
 *   could map the host's local services by the answers.
 *
 * Every refusal a non-root team meets reads the same (TEAM_REFUSAL), so the answers say nothing
 * about which of the host's ports listen.
 */

/** The one answer a team other than the root team gets for any target berth will not reach. */
export const TEAM_REFUSAL =
  "berth does not connect to this target for your team: the berth host itself (its engine sockets, loopback, the addresses of its own interfaces and names that resolve to them) is for the instance's root team only, and cloud metadata services and link-local addresses are for no team. Reach your server by SSH or tcp:// at its own address.";

/** Names of metadata services on the big clouds (GCP, AWS, Azure, Oracle, Alibaba, OpenStack). */
const METADATA_NAMES = new Set([
  'metadata',
  'metadata.google.internal',
  'metadata.goog',
  'instance-data',
  'instance-data.ec2.internal',
  'metadata.azure.com',
  'metadata.oraclecloud.com',
  'metadata.platformequinix.com',
]);
/** Metadata addresses outside link-local: AWS's IPv6 one, Alibaba's, Oracle's legacy one. */
const METADATA_ADDRESSES = ['fd00:ec2::254', '100.100.100.200', '192.0.0.192'].map((a) => ipaddr.parse(a).toNormalizedString());

export type AddressClass = 'metadata' | 'link-local' | 'loopback' | 'unspecified' | 'host' | 'other';

/** The normalized addresses of the berth host's own interfaces, read now (they change: DHCP, VPNs, containers). */
export function ownAddresses(): Set<string> {
  const out = new Set<string>();
  for (const list of Object.values(os.networkInterfaces())) {
    for (const a of list ?? []) {
      const ip = parseIp(a.address.replace(/%.*$/, ''));
      if (ip) out.add(ip.toNormalizedString());
    }
  }
  return out;
}

/** An IP literal in any form engines and resolvers accept (IPv4-mapped IPv6, decimal or hex IPv4), or null. */
export function parseIp(host: string): ipaddr.IPv4 | ipaddr.IPv6 | null {
  const h = host.replace(/^\[|\]$/g, '');
  if (!ipaddr.isValid(h)) return null;
  return ipaddr.process(h);
}

export function classifyHost(host: string): AddressClass {
  const name = host.toLowerCase().replace(/\.$/, '');
  if (METADATA_NAMES.has(name)) return 'metadata';
  if (name === 'localhost' || name.endsWith('.localhost')) return 'loopback';
  const ip = parseIp(name);
  if (!ip) return 'other';
  if (METADATA_ADDRESSES.includes(ip.toNormalizedString())) return 'metadata';
  switch (ip.range()) {
    case 'linkLocal':
      return ip.kind() === 'ipv4' && ip.toString() === '169.254.169.254' ? 'metadata' : 'link-local';
    case 'loopback':
      return 'loopback';
    case 'unspecified':
      return 'unspecified';
    default:
      return ownAddresses().has(ip.toNormalizedString()) ? 'host' : 'other';
  }
}

/** Why a team may not reach this host (a literal, a name, or an address a name resolved to), or null when it may. */
export function hostRefusal(host: string, rootTeam: boolean): string | null {
  const cls = classifyHost(host);
  if (cls === 'other') return null;
  if (!rootTeam) return TEAM_REFUSAL;
  if (cls === 'metadata') return `${host} is a cloud metadata service; berth never connects there.`;
  if (cls === 'link-local') return `${host} is a link-local address; berth never connects there.`;
  return null;
}

/** Why a team may not use this engine target, or null when it may (checked without connecting). */
export function targetRefusal(target: EngineTarget, rootTeam: boolean): string | null {
  if (target.transport === 'unix') return rootTeam ? null : TEAM_REFUSAL;
  return hostRefusal(target.host, rootTeam);
}
