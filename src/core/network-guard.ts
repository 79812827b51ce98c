import ipaddr from 'ipaddr.js';
import type { EngineTarget } from './engine-target.js';

/**
 * Which addresses berth may connect to for a team. Two holes are closed here, once, for the
 * core (at create/update, without connecting) and for the runtime (at connect time, on the
 * address a name resolved to, so a DNS answer that changes later cannot sneak past):
 *
 * - cloud metadata services and link-local addresses are never an engine or SSH host (SSRF:
 *   instance credentials live there);
 * - the berth host itself (its unix sockets, its loopback engine ports) belongs to the instance's
 *   root team: another team reaching it would be root on the host that keeps every team's secrets.
 *   SSH to a loopback address stays open to every team: sshd authenticates it.
 */

/** Names of metadata services on the big clouds (GCP, AWS, Azure, Oracle, Alibaba, OpenStack). */
const METADATA_NAMES = new Set(['metadata', 'metadata.google.internal', 'metadata.goog', 'instance-data', 'instance-data.ec2.internal', 'metadata.azure.com', 'metadata.oraclecloud.com', 'metadata.platformequinix.com']);
/** Metadata addresses outside link-local: AWS's IPv6 one, Alibaba's, Oracle's legacy one. */
const METADATA_ADDRESSES = ['fd00:ec2::254', '100.100.100.200', '192.0.0.192'].map((a) => ipaddr.parse(a).toNormalizedString());

export type AddressClass = 'metadata' | 'link-local' | 'loopback' | 'unspecified' | 'other';

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
      return 'other';
  }
}

/** Why a team may not reach this host with this transport, or null when it may. */
export function hostRefusal(host: string, transport: EngineTarget['transport'], rootTeam: boolean): string | null {
  switch (classifyHost(host)) {
    case 'metadata':
      return `${host} is a cloud metadata service; berth never connects there.`;
    case 'link-local':
      return `${host} is a link-local address; berth never connects there.`;
    case 'loopback':
    case 'unspecified':
      // An engine port on the berth host answers anyone who connects; sshd asks for a key.
      return transport === 'tcp' && !rootTeam ? `${host} is the berth host itself; only the instance's root team may use its engine. Reach your server by SSH or by its own address.` : null;
    default:
      return null;
  }
}

/** Why a team may not use this engine target, or null when it may (checked without connecting). */
export function targetRefusal(target: EngineTarget, rootTeam: boolean): string | null {
  if (target.transport === 'unix') {
    return rootTeam ? null : "A local engine socket (unix://) is the berth host's own engine; only the instance's root team may use it. Reach your server over SSH (private_key_uuid) or tcp://.";
  }
  return hostRefusal(target.host, target.transport, rootTeam);
}
