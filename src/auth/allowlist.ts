import ipaddr from 'ipaddr.js';

/**
 * The API's source-address allow-list: a comma-separated setting of IPv4/IPv6 addresses and CIDR
 * ranges. Empty, or containing 0.0.0.0, allows every address. Address math is ipaddr.js's.
 */
type Addr = ipaddr.IPv4 | ipaddr.IPv6;

interface Entry {
  addr: Addr;
  prefix: number;
}

export type AllowList = { allowAll: true } | { allowAll: false; entries: Entry[] };

export class AllowListError extends Error {
  constructor(readonly invalid: string[]) {
    super(invalid.map((e) => `"${e}" is not a valid IP address or CIDR range.`).join(' '));
  }
}

/** Strict parse: four-part decimal IPv4 or IPv6 only (no "10", "0x0a", "010.1.1.1" shorthands). */
function parseAddress(text: string): Addr | null {
  if (ipaddr.IPv4.isValidFourPartDecimal(text)) {
    // Leading zeros are ambiguous (octal in some parsers), so they are refused.
    if (text.split('.').some((p) => p.length > 1 && p.startsWith('0'))) return null;
    return ipaddr.IPv4.parse(text);
  }
  if (!text.includes(':') || !ipaddr.IPv6.isValid(text)) return null;
  // The same rule for a dotted tail (::ffff:010.1.1.1), which ipaddr.js would read as decimal.
  const tail = text.slice(text.lastIndexOf(':') + 1);
  if (tail.includes('.') && tail.split('.').some((p) => p.length > 1 && p.startsWith('0'))) return null;
  const v6 = ipaddr.IPv6.parse(text);
  // Zone ids (fe80::1%eth0) name an interface, not an address a client connects from.
  if (v6.zoneId) return null;
  return v6;
}

function parseEntry(text: string): Entry | null {
  const slash = text.indexOf('/');
  const addrText = slash === -1 ? text : text.slice(0, slash);
  let addr = parseAddress(addrText);
  if (!addr) return null;
  const max = addr.kind() === 'ipv4' ? 32 : 128;
  let prefix = max;
  if (slash !== -1) {
    const p = text.slice(slash + 1);
    if (!/^(0|[1-9][0-9]{0,2})$/.test(p) || Number(p) > max) return null;
    prefix = Number(p);
  }
  // An IPv4-mapped IPv6 entry means the IPv4 address (or range) it carries.
  if (addr.kind() === 'ipv6' && (addr as ipaddr.IPv6).isIPv4MappedAddress() && prefix >= 96) {
    addr = (addr as ipaddr.IPv6).toIPv4Address();
    prefix -= 96;
  }
  return { addr: networkOf(addr, prefix), prefix };
}

function networkOf(addr: Addr, prefix: number): Addr {
  const cidr = `${addr.toString()}/${prefix}`;
  return addr.kind() === 'ipv4' ? ipaddr.IPv4.networkAddressFromCIDR(cidr) : ipaddr.IPv6.networkAddressFromCIDR(cidr);
}

function covers(wide: Entry, narrow: Entry): boolean {
  return wide.addr.kind() === narrow.addr.kind() && wide.prefix <= narrow.prefix && narrow.addr.match(wide.addr as never, wide.prefix);
}

function format(e: Entry): string {
  const max = e.addr.kind() === 'ipv4' ? 32 : 128;
  const a = e.addr.kind() === 'ipv4' ? e.addr.toString() : (e.addr as ipaddr.IPv6).toRFC5952String();
  // The single address 0.0.0.0 keeps its "/32": written bare it would mean "allow all".
  return e.prefix === max && a !== ALLOW_ALL ? a : `${a}/${e.prefix}`;
}

const ALLOW_ALL = '0.0.0.0';

/**
 * Validates and normalizes a setting value: canonical forms, duplicates dropped, entries already
 * covered by a wider entry removed as redundant, first-seen order kept. Throws AllowListError
 * naming every invalid entry, so nothing is saved half-checked.
 */
export function normalizeAllowList(value: string): string {
  const texts = value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (texts.includes(ALLOW_ALL)) {
    const invalid = texts.filter((t) => t !== ALLOW_ALL && !parseEntry(t));
    if (invalid.length) throw new AllowListError(invalid);
    return ALLOW_ALL;
  }
  const entries: Entry[] = [];
  const invalid: string[] = [];
  for (const t of texts) {
    const e = parseEntry(t);
    if (e) entries.push(e);
    else invalid.push(t);
  }
  if (invalid.length) throw new AllowListError(invalid);
  const kept = entries.filter((e, i) => !entries.some((w, j) => j !== i && covers(w, e) && (w.prefix < e.prefix || j < i)));
  return kept.map(format).join(',');
}

let cachedText: string | undefined;
let cachedList: AllowList = { allowAll: true };

/** Parses a stored (already normalized) value; memoized, since it is read on every request. */
export function parseAllowList(value: string): AllowList {
  if (value === cachedText) return cachedList;
  const texts = value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const list: AllowList = texts.length === 0 || texts.includes(ALLOW_ALL) ? { allowAll: true } : { allowAll: false, entries: texts.map(parseEntry).filter((e): e is Entry => e !== null) };
  cachedText = value;
  cachedList = list;
  return list;
}

/** Whether a client address may call the API. IPv4-mapped IPv6 clients match IPv4 entries. */
export function isAllowed(list: AllowList, clientIp: string): boolean {
  if (list.allowAll) return true;
  let addr: Addr;
  try {
    addr = ipaddr.process(clientIp.split('%')[0]!);
  } catch {
    return false;
  }
  const client: Entry = { addr, prefix: addr.kind() === 'ipv4' ? 32 : 128 };
  return list.entries.some((e) => covers(e, client));
}
