import fc from 'fast-check';
import ipaddr from 'ipaddr.js';
import { describe, expect, it } from 'vitest';
import { AllowListError, isAllowed, normalizeAllowList, parseAllowList } from '../../src/auth/allowlist.js';

type Addr = ipaddr.IPv4 | ipaddr.IPv6;

// ---------------------------------------------------------------------------------------------
// A reference model, written directly against ipaddr.js and bigint arithmetic (not the code
// under test): what a raw setting value means for a client address.
// ---------------------------------------------------------------------------------------------

interface Net {
  kind: 'ipv4' | 'ipv6';
  first: bigint;
  prefix: number;
}

const bitsOf = (kind: 'ipv4' | 'ipv6') => (kind === 'ipv4' ? 32 : 128);

function toBig(a: Addr): bigint {
  return a.toByteArray().reduce((acc, b) => (acc << 8n) | BigInt(b), 0n);
}

function fromBig(n: bigint, kind: 'ipv4' | 'ipv6'): Addr {
  const bytes: number[] = [];
  for (let i = bitsOf(kind) / 8 - 1; i >= 0; i--) bytes.push(Number((n >> BigInt(i * 8)) & 0xffn));
  return ipaddr.fromByteArray(bytes);
}

function netOf(addr: Addr, prefix: number): Net {
  const host = BigInt(bitsOf(addr.kind()) - prefix);
  return { kind: addr.kind(), first: (toBig(addr) >> host) << host, prefix };
}

const lastOf = (n: Net) => n.first + (1n << BigInt(bitsOf(n.kind) - n.prefix)) - 1n;
const netKey = (n: Net) => `${n.kind}|${n.first}|${n.prefix}`;

/** One valid entry as written by a user; an IPv4-mapped IPv6 range of /96 or longer is the IPv4 range it carries. */
function refEntry(text: string): Net {
  let addr: Addr;
  let prefix: number;
  if (text.includes('/')) [addr, prefix] = ipaddr.parseCIDR(text);
  else {
    addr = ipaddr.parse(text);
    prefix = bitsOf(addr.kind());
  }
  if (addr.kind() === 'ipv6' && (addr as ipaddr.IPv6).isIPv4MappedAddress() && prefix >= 96) {
    addr = (addr as ipaddr.IPv6).toIPv4Address();
    prefix -= 96;
  }
  return netOf(addr, prefix);
}

const itemsOf = (raw: string) =>
  raw
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');

/** Empty, or holding the literal 0.0.0.0, allows all; otherwise the client must be in a listed range. */
function refAllowed(raw: string, client: string): boolean {
  const items = itemsOf(raw);
  if (items.length === 0 || items.includes('0.0.0.0')) return true;
  const c = ipaddr.process(client.split('%')[0]!); // an IPv4-mapped client is its IPv4 address
  const cv = toBig(c);
  return items.map(refEntry).some((n) => n.kind === c.kind() && cv >= n.first && cv <= lastOf(n));
}

function covers(wide: Net, narrow: Net): boolean {
  return wide.kind === narrow.kind && wide.prefix <= narrow.prefix && narrow.first >= wide.first && lastOf(narrow) <= lastOf(wide);
}

/** The canonical text of a range: network address, lower-case RFC 5952, no "/32" or "/128". */
function canonicalText(n: Net): string {
  const a = fromBig(n.first, n.kind);
  const text = n.kind === 'ipv4' ? a.toString() : (a as ipaddr.IPv6).toRFC5952String();
  // 0.0.0.0 alone is the "allow all" value, so the single address 0.0.0.0 keeps its "/32".
  return n.prefix === bitsOf(n.kind) && text !== '0.0.0.0' ? text : `${text}/${n.prefix}`;
}

// ---------------------------------------------------------------------------------------------
// Generators. Octets and groups come mostly from small pools so that ranges overlap, nest and
// repeat often enough for normalization to have something to do.
// ---------------------------------------------------------------------------------------------

const octet = fc.oneof({ weight: 3, arbitrary: fc.constantFrom(0, 1, 10, 127, 192, 255) }, { weight: 1, arbitrary: fc.integer({ min: 0, max: 255 }) });
const group = fc.oneof({ weight: 3, arbitrary: fc.constantFrom(0, 1, 0xffff, 0x2001, 0xdb8, 0xfe80) }, { weight: 1, arbitrary: fc.integer({ min: 0, max: 0xffff }) });
const v4Addr = fc.oneof(
  { weight: 6, arbitrary: fc.tuple(octet, octet, octet, octet).map((o) => new ipaddr.IPv4(o)) },
  // Edge addresses, 0.0.0.0 (whose bare spelling means "allow all") above all.
  { weight: 1, arbitrary: fc.constantFrom('0.0.0.0', '255.255.255.255', '0.0.0.1', '127.0.0.1').map((t) => ipaddr.IPv4.parse(t)) },
);
const v6Addr = fc.array(group, { minLength: 8, maxLength: 8 }).map((p) => new ipaddr.IPv6(p));

const v4Prefix = fc.oneof(fc.constant(null), fc.constantFrom(0, 1, 8, 16, 24, 30, 31, 32), fc.integer({ min: 0, max: 32 }));
const v6Prefix = fc.oneof(fc.constant(null), fc.constantFrom(0, 16, 32, 48, 64, 96, 112, 120, 127, 128), fc.integer({ min: 0, max: 128 }));
const mappedPrefix = fc.oneof(fc.constant(null), fc.integer({ min: 96, max: 128 }), fc.integer({ min: 80, max: 95 }));

type V6Style = 'rfc' | 'normalized' | 'padded' | 'upper';
const v6Style = fc.constantFrom<V6Style>('rfc', 'normalized', 'padded', 'upper');

function v6Text(a: ipaddr.IPv6, style: V6Style): string {
  switch (style) {
    case 'rfc':
      return a.toRFC5952String();
    case 'normalized':
      return a.toNormalizedString();
    case 'padded':
      return a.parts.map((p) => p.toString(16).padStart(4, '0')).join(':');
    case 'upper':
      return a.toRFC5952String().toUpperCase();
  }
}

const withPrefix = (text: string, prefix: number | null) => (prefix === null ? text : `${text}/${prefix}`);

/** A valid entry as a user might type it (host bits may be set in a range). */
const entryText = fc.oneof(
  { weight: 4, arbitrary: fc.tuple(v4Addr, v4Prefix).map(([a, p]) => withPrefix(a.toString(), p)) },
  { weight: 3, arbitrary: fc.tuple(v6Addr, v6Prefix, v6Style).map(([a, p, s]) => withPrefix(v6Text(a, s), p)) },
  {
    weight: 1,
    arbitrary: fc.tuple(v4Addr, mappedPrefix, fc.constantFrom('::ffff:', '::FFFF:', '0:0:0:0:0:ffff:')).map(([a, p, pre]) => withPrefix(`${pre}${a}`, p)),
  },
);

const pad = fc.constantFrom('', '', ' ', '  ', '\t');
const padded = (texts: string[], pads: string[]) => texts.map((t, i) => `${pads[i % pads.length]}${t}${pads[(i + 1) % pads.length]}`);

/** A raw setting value: entries, padded with whitespace, sometimes with empty items between them. */
const rawList = fc
  .tuple(fc.array(entryText, { minLength: 1, maxLength: 8 }), fc.array(pad, { minLength: 1, maxLength: 4 }), fc.boolean())
  .map(([texts, pads, empties]) => padded(texts, pads).join(empties ? ', ,' : ','));

/** Client addresses as a socket reports them: IPv4, IPv6, or IPv4-mapped IPv6. */
const clientText = fc.oneof(
  v4Addr.map((a) => a.toString()),
  v6Addr.map((a) => a.toString()),
  v4Addr.map((a) => `::ffff:${a}`),
);

/** Clients at and just beyond the edges of every range in the list, plus their IPv4-mapped forms. */
function edgeClients(raw: string): string[] {
  const out: string[] = [];
  for (const n of itemsOf(raw).map(refEntry)) {
    const max = (1n << BigInt(bitsOf(n.kind))) - 1n;
    for (const v of [n.first, lastOf(n), n.first - 1n, lastOf(n) + 1n, (n.first + lastOf(n)) / 2n]) {
      if (v < 0n || v > max) continue;
      const a = fromBig(v, n.kind);
      out.push(a.toString());
      if (n.kind === 'ipv4') out.push(`::ffff:${a}`);
    }
  }
  return out;
}

/** The same entry written differently: other host bits, other IPv6 spelling, IPv4-mapped form. */
function otherSpelling(text: string, salt: number): string {
  const n = refEntry(text);
  const size = lastOf(n) - n.first + 1n;
  const a = fromBig(n.first + (BigInt(salt) % size), n.kind);
  const bare = n.prefix === bitsOf(n.kind);
  if (n.kind === 'ipv4') {
    if (salt % 2 === 0) return withPrefix(`::ffff:${a}`, n.prefix + 96);
    return `${a}/${n.prefix}`;
  }
  const styles: V6Style[] = ['rfc', 'normalized', 'padded', 'upper'];
  return withPrefix(v6Text(a as ipaddr.IPv6, styles[salt % 4]!), bare && salt % 3 === 0 ? null : n.prefix);
}

// ---------------------------------------------------------------------------------------------

describe('normalizeAllowList: properties', () => {
  it('is idempotent', () => {
    fc.assert(
      fc.property(rawList, (raw) => {
        const once = normalizeAllowList(raw);
        expect(normalizeAllowList(once)).toBe(once);
      }),
      { numRuns: 2000 },
    );
  });

  it('preserves meaning: every client is allowed by the normalized list exactly when by the original', () => {
    let shrunk = 0;
    fc.assert(
      fc.property(rawList, fc.array(clientText, { maxLength: 10 }), (raw, randomClients) => {
        const normalized = normalizeAllowList(raw);
        if (itemsOf(normalized).length < itemsOf(raw).length) shrunk++;
        const list = parseAllowList(normalized);
        const rawParsed = parseAllowList(raw);
        for (const c of [...edgeClients(raw), ...randomClients]) {
          const expected = refAllowed(raw, c);
          expect(isAllowed(list, c), `${c} against "${raw}" → "${normalized}"`).toBe(expected);
          expect(isAllowed(rawParsed, c), `${c} against raw "${raw}"`).toBe(expected);
        }
      }),
      { numRuns: 1000 },
    );
    // The generators must exercise redundancy removal, not only pass-through.
    expect(shrunk).toBeGreaterThan(150);
  });

  it('keeps only canonical, distinct entries, none covered by another', () => {
    fc.assert(
      fc.property(rawList, (raw) => {
        const normalized = normalizeAllowList(raw);
        if (normalized === '0.0.0.0') return; // the literal allow-all value stands alone
        const parts = normalized === '' ? [] : normalized.split(',');
        const nets = parts.map(refEntry);
        parts.forEach((p, i) => expect(p).toBe(canonicalText(nets[i]!)));
        expect(new Set(parts).size).toBe(parts.length);
        for (let i = 0; i < nets.length; i++) {
          for (let j = 0; j < nets.length; j++) {
            if (i !== j) expect(covers(nets[j]!, nets[i]!), `${parts[j]} covers ${parts[i]}`).toBe(false);
          }
        }
      }),
      { numRuns: 2000 },
    );
  });

  it('keeps input entries in first-seen order and drops only entries covered by a kept one', () => {
    fc.assert(
      fc.property(rawList, (raw) => {
        const items = itemsOf(raw);
        fc.pre(!items.includes('0.0.0.0'));
        const inputs = items.map(refEntry);
        const inputKeys = inputs.map(netKey);
        const kept = itemsOf(normalizeAllowList(raw)).map(refEntry);
        const positions = kept.map((n) => inputKeys.indexOf(netKey(n)));
        for (const p of positions) expect(p).toBeGreaterThanOrEqual(0);
        for (let i = 1; i < positions.length; i++) expect(positions[i]!).toBeGreaterThan(positions[i - 1]!);
        for (const n of inputs) expect(kept.some((k) => covers(k, n))).toBe(true);
      }),
      { numRuns: 2000 },
    );
  });

  it('drops duplicates, however they are spelled', () => {
    fc.assert(
      fc.property(rawList, fc.array(fc.nat(), { minLength: 1, maxLength: 8 }), fc.boolean(), (raw, salts, shuffle) => {
        const items = itemsOf(raw);
        const again = items.map((t, i) => otherSpelling(t, salts[i % salts.length]!));
        const tail = shuffle ? [...again].reverse() : again;
        expect(normalizeAllowList([...items, ...tail].join(','))).toBe(normalizeAllowList(raw));
        expect(normalizeAllowList([...items, ...items].join(' , '))).toBe(normalizeAllowList(raw));
      }),
      { numRuns: 1000 },
    );
  });
});

describe('allow all', () => {
  it('empty values normalize to "" and allow every client', () => {
    fc.assert(
      fc.property(fc.constantFrom('', ' ', ',', ' , , ', '\t'), clientText, (raw, c) => {
        expect(normalizeAllowList(raw)).toBe('');
        expect(isAllowed(parseAllowList(normalizeAllowList(raw)), c)).toBe(true);
        expect(isAllowed(parseAllowList(raw), c)).toBe(true);
      }),
    );
  });

  it('0.0.0.0 anywhere in a valid list normalizes to "0.0.0.0" and allows every client', () => {
    fc.assert(
      fc.property(fc.array(entryText, { maxLength: 5 }), fc.nat(), pad, clientText, (texts, at, p, c) => {
        const list = [...texts];
        list.splice(at % (texts.length + 1), 0, `${p}0.0.0.0${p}`);
        const raw = list.join(',');
        expect(normalizeAllowList(raw)).toBe('0.0.0.0');
        expect(isAllowed(parseAllowList(normalizeAllowList(raw)), c)).toBe(true);
        expect(isAllowed(parseAllowList(raw), c)).toBe(true);
      }),
    );
  });

  it('the single address 0.0.0.0/32 is not the allow-all value, before or after normalization', () => {
    for (const raw of ['0.0.0.0/32', '::ffff:0.0.0.0', '10.0.0.0/8, 0.0.0.0/32', '::ffff:0.0.0.0/128, 10.0.0.0/8']) {
      const n = normalizeAllowList(raw);
      expect(n).not.toBe('0.0.0.0');
      expect(n).toContain('0.0.0.0/32');
      expect(normalizeAllowList(n)).toBe(n);
      expect(isAllowed(parseAllowList(n), '0.0.0.0')).toBe(true);
      expect(isAllowed(parseAllowList(n), '192.0.2.1'), raw).toBe(false);
      expect(isAllowed(parseAllowList(n), '2001:db8::1'), raw).toBe(false);
    }
    expect(normalizeAllowList('10.0.0.0/8, 0.0.0.0/32')).toBe('10.0.0.0/8,0.0.0.0/32');
  });
});

// ---------------------------------------------------------------------------------------------

/** Entries that are not a four-part decimal IPv4 or an IPv6 address, with an optional valid prefix. */
const invalidEntry = fc.oneof(
  fc.constantFrom(
    '10.0.0',
    '1.2.3.4/33',
    '::g',
    '010.1.1.1',
    'abc',
    '1.2.3.4/',
    '/8',
    '/',
    '10',
    '0x0a.1.1.1',
    '1.2.3.4.5',
    '1.2.3.256',
    '1.2.3.4/08',
    '1.2.3.4/-1',
    '1.2.3.4/+8',
    '1.2.3.4/8.0',
    '1.2.3.4/24/1',
    '1.2.3.4 /24',
    '1.2.3.4/ 24',
    '1.2.3 .4',
    '::1/129',
    '::1/',
    '1:2:3:4:5:6:7:8:9',
    '1::2::3',
    ':::',
    '[::1]',
    'fe80::1%eth0',
    '::ffff:010.1.1.1',
    '::ffff:1.2.3.256',
    'localhost',
    '*',
    '10.0.0.*',
    '１.2.3.4',
  ),
  fc.tuple(v4Addr, fc.integer({ min: 33, max: 999 })).map(([a, p]) => `${a}/${p}`),
  fc.tuple(v6Addr, fc.integer({ min: 129, max: 999 })).map(([a, p]) => `${a.toRFC5952String()}/${p}`),
  fc.tuple(v4Addr, fc.integer({ min: 0, max: 3 }), fc.integer({ min: 256, max: 999 })).map(([a, i, big]) => {
    const o = a.octets.map(String);
    o[i] = String(big);
    return o.join('.');
  }),
  fc.tuple(v4Addr, fc.integer({ min: 0, max: 3 })).map(([a, i]) => {
    const o = a.octets.map(String);
    o[i] = `0${o[i]}`; // leading zero
    return o.join('.');
  }),
  fc.tuple(v4Addr, fc.integer({ min: 1, max: 3 })).map(([a, keep]) => a.octets.slice(0, keep).join('.')), // too few parts
  fc.stringMatching(/^[a-z]{1,8}$/),
);

describe('invalid entries', () => {
  it('are refused with an AllowListError naming every invalid entry, in order', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.oneof(
            entryText.map((t) => ({ t, ok: true })),
            invalidEntry.map((t) => ({ t, ok: false })),
          ),
          { minLength: 1, maxLength: 8 },
        ),
        invalidEntry,
        fc.nat(),
        pad,
        fc.boolean(),
        (mixed, bad, at, p, allowAll) => {
          const items = [...mixed];
          items.splice(at % (mixed.length + 1), 0, { t: bad, ok: false });
          if (allowAll) items.push({ t: '0.0.0.0', ok: true });
          const raw = items.map((x) => `${p}${x.t}${p}`).join(',');
          const expected = items.filter((x) => !x.ok).map((x) => x.t);
          let thrown: unknown;
          try {
            normalizeAllowList(raw);
          } catch (e) {
            thrown = e;
          }
          expect(thrown, raw).toBeInstanceOf(AllowListError);
          const err = thrown as AllowListError;
          expect(err.invalid).toEqual(expected);
          for (const t of expected) expect(err.message).toContain(`"${t}"`);
        },
      ),
      { numRuns: 1500 },
    );
  });

  it('each listed example is invalid on its own', () => {
    for (const bad of ['10.0.0', '1.2.3.4/33', '::g', '010.1.1.1', 'abc', '1.2.3.4/', '::ffff:010.1.1.1', 'fe80::1%eth0']) {
      expect(() => normalizeAllowList(bad), bad).toThrow(AllowListError);
      expect(() => normalizeAllowList(`10.0.0.0/8, ${bad}, ::1`), bad).toThrow(expect.objectContaining({ invalid: [bad], message: `"${bad}" is not a valid IP address or CIDR range.` }));
    }
  });
});

describe('examples', () => {
  it.each([
    ['10.0.0.0/8, 10.1.2.3, 192.168.1.7, ::1', '10.0.0.0/8,192.168.1.7,::1'],
    ['10.1.2.3, 10.0.0.0/8', '10.0.0.0/8'],
    ['10.1.2.3/8', '10.0.0.0/8'],
    ['192.168.1.7, 192.168.1.7, 192.168.1.7/32', '192.168.1.7'],
    ['192.168.0.0/16, 192.168.1.0/24, 192.168.1.7, 10.0.0.1', '192.168.0.0/16,10.0.0.1'],
    ['0:0:0:0:0:0:0:1, ::1, 0000:0000:0000:0000:0000:0000:0000:0001/128', '::1'],
    ['2001:DB8::1, 2001:db8::/32', '2001:db8::/32'],
    ['2001:db8:0:0:1:0:0:1', '2001:db8::1:0:0:1'],
    ['::ffff:10.1.2.3', '10.1.2.3'],
    ['::ffff:10.0.0.0/104, 10.9.9.9', '10.0.0.0/8'],
    ['::/0, 2001:db8::1, 10.0.0.1', '::/0,10.0.0.1'],
    ['0.0.0.0/0, 10.0.0.1, ::1', '0.0.0.0/0,::1'],
    ['1.2.3.4/0', '0.0.0.0/0'],
    [' 10.0.0.1 ,, 10.0.0.2 ', '10.0.0.1,10.0.0.2'],
    ['10.0.0.1, 0.0.0.0', '0.0.0.0'],
    ['', ''],
  ])('"%s" → "%s"', (raw, normalized) => {
    expect(normalizeAllowList(raw)).toBe(normalized);
  });

  it('IPv4-mapped IPv6 clients match IPv4 entries', () => {
    const list = parseAllowList(normalizeAllowList('10.0.0.0/8, 192.168.1.7'));
    expect(isAllowed(list, '::ffff:10.1.2.3')).toBe(true);
    expect(isAllowed(list, '::FFFF:10.1.2.3')).toBe(true);
    expect(isAllowed(list, '::ffff:192.168.1.7')).toBe(true);
    expect(isAllowed(list, '::ffff:192.168.1.8')).toBe(false);
    expect(isAllowed(list, '::ffff:11.0.0.1')).toBe(false);
    expect(isAllowed(list, '10.255.255.255')).toBe(true);
    expect(isAllowed(list, '11.0.0.0')).toBe(false);
    fc.assert(
      fc.property(rawList, v4Addr, (raw, a) => {
        const l = parseAllowList(normalizeAllowList(raw));
        expect(isAllowed(l, `::ffff:${a}`)).toBe(isAllowed(l, a.toString()));
      }),
    );
  });

  it('IPv4 entries do not admit IPv6 clients, nor IPv6 entries IPv4 clients', () => {
    const v4 = parseAllowList('0.0.0.0/0');
    expect(isAllowed(v4, '::1')).toBe(false);
    expect(isAllowed(v4, '2001:db8::1')).toBe(false);
    expect(isAllowed(v4, '203.0.113.9')).toBe(true);
    const v6 = parseAllowList('::/0');
    expect(isAllowed(v6, '203.0.113.9')).toBe(false);
    expect(isAllowed(v6, '::1')).toBe(true);
  });

  it('a zoned link-local client matches its range; an unparsable client matches nothing', () => {
    const list = parseAllowList(normalizeAllowList('fe80::/10, 10.0.0.0/8'));
    expect(isAllowed(list, 'fe80::1%eth0')).toBe(true);
    expect(isAllowed(list, 'fe80::1')).toBe(true);
    expect(isAllowed(list, 'fec0::1')).toBe(false);
    for (const c of ['', 'garbage', '::g', 'undefined', '10.0.0.1.1', '10.0.0.256']) expect(isAllowed(list, c), c).toBe(false);
  });
});
