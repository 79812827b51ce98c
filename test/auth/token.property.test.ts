import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { bearerFrom, formatToken, hashSecret, mintSecret, parseToken, secretMatches, SECRET_LENGTH } from '../../src/auth/token.js';

const ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
/** The longest secret parseToken accepts (a bound on work per request; minted secrets are far shorter). */
const MAX_SECRET = 256;

const alnumChar = fc.constantFrom(...ALNUM);
const secretArb = fc.string({ unit: alnumChar, minLength: 1, maxLength: MAX_SECRET });
const idArb = fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER });
/** Characters a secret may not hold: punctuation, whitespace, the bar, non-ASCII letters and digits. */
const badSecretChar = fc.constantFrom('|', ' ', '\t', '\n', '-', '_', '.', '+', '/', '=', '%', '\u00e9', '\u0663', '\uff11', '\u0000', '\u00a0');

describe('formatToken / parseToken', () => {
  it('round-trips every safe positive id and alphanumeric secret', () => {
    fc.assert(
      fc.property(idArb, secretArb, (id, secret) => {
        expect(parseToken(formatToken(id, secret))).toEqual({ id, secret });
      }),
      { numRuns: 2000 },
    );
  });

  it('round-trips the extremes', () => {
    const longest = 'a'.repeat(MAX_SECRET);
    expect(parseToken(formatToken(Number.MAX_SAFE_INTEGER, longest))).toEqual({ id: Number.MAX_SAFE_INTEGER, secret: longest });
    expect(parseToken(formatToken(1, 'Z'))).toEqual({ id: 1, secret: 'Z' });
    expect(parseToken(formatToken(1_000_000_000_000_000, 'x'))).toEqual({ id: 1_000_000_000_000_000, secret: 'x' });
    const minted = mintSecret();
    expect(parseToken(formatToken(42, minted))).toEqual({ id: 42, secret: minted });
  });

  it('formats as "<id>|<secret>"', () => {
    fc.assert(
      fc.property(idArb, secretArb, (id, secret) => {
        expect(formatToken(id, secret)).toBe(`${id}|${secret}`);
      }),
    );
  });

  /** Near misses of a valid token, each one malformed. */
  const nearMiss = fc.tuple(idArb, secretArb).chain(([id, secret]) => {
    const ids = String(id);
    return fc.oneof(
      fc.constant(`${ids}${secret}`), // missing bar
      fc.constant(`${ids}|${secret}|`), // two bars
      secretArb.map((s2) => `${ids}|${secret}|${s2}`),
      secretArb.map((s2) => `${ids}||${s2}`),
      fc.constant(`|${secret}`), // no id
      fc.constant(`${ids}|`), // empty secret
      fc.constantFrom(' ', '\t', '\n', '\r\n', '\u00a0').chain((ws) => fc.constantFrom(`${ws}${ids}|${secret}`, `${ids}|${secret}${ws}`, `${ids} |${secret}`, `${ids}| ${secret}`)),
      fc.constant(`0|${secret}`), // id 0
      fc.integer({ min: 1, max: 3 }).map((n) => `${'0'.repeat(n)}${ids}|${secret}`), // leading zeros
      fc.constant(`-${ids}|${secret}`), // negative
      fc.constant(`+${ids}|${secret}`),
      fc.constantFrom(`${ids}.0|${secret}`, `${ids}e0|${secret}`, `0x${id.toString(16)}|${secret}`, `${ids}n|${secret}`),
      // a forbidden character somewhere in the secret
      fc.tuple(badSecretChar, fc.nat({ max: secret.length })).map(([c, at]) => `${ids}|${secret.slice(0, at)}${c}${secret.slice(at)}`),
      // a forbidden (non-ASCII) digit in the id
      fc.constantFrom('\u0663', '\uff11', '\u00b9').map((d) => `${ids}${d}|${secret}`),
      // ids beyond the safe integers, however many digits
      fc.bigInt({ min: BigInt(Number.MAX_SAFE_INTEGER) + 1n, max: 10n ** 40n }).map((big) => `${big}|${secret}`),
      // a secret longer than the accepted bound
      fc.string({ unit: alnumChar, minLength: MAX_SECRET + 1, maxLength: MAX_SECRET + 50 }).map((s) => `${ids}|${s}`),
    );
  });

  it('refuses every near miss of the shape <id>|<secret>', () => {
    fc.assert(
      fc.property(nearMiss, (value) => {
        expect(parseToken(value)).toBeNull();
      }),
      { numRuns: 3000 },
    );
  });

  it('accepts exactly the strings of the shape <digits without leading zero>|<alphanumeric>', () => {
    // Arbitrary strings over a small alphabet that contains every relevant character class.
    const unit = fc.constantFrom('0', '1', '9', 'a', 'Z', '|', ' ', '-', '\u0663');
    fc.assert(
      fc.property(fc.string({ unit, maxLength: 12 }), (value) => {
        const m = /^([1-9][0-9]*)\|([A-Za-z0-9]+)$/.exec(value);
        const expected = m ? { id: Number(m[1]), secret: m[2] } : null;
        expect(parseToken(value)).toEqual(expected);
      }),
      { numRuns: 5000 },
    );
  });

  it('refuses concrete malformed values', () => {
    for (const v of [
      '',
      '|',
      '1',
      'abc',
      '1|',
      '|abc',
      '0|abc',
      '01|abc',
      '-1|abc',
      '1.5|abc',
      '1|abc|def',
      '1||abc',
      ' 1|abc',
      '1|abc ',
      '1|ab c',
      '1|ab-c',
      '1|abc\n',
      '9007199254740992|abc',
      '99999999999999999999|abc',
      `1|${'a'.repeat(MAX_SECRET + 1)}`,
    ]) {
      expect(parseToken(v), JSON.stringify(v)).toBeNull();
    }
  });
});

describe('mintSecret', () => {
  it(`gives ${SECRET_LENGTH} characters from [A-Za-z0-9]`, () => {
    expect(SECRET_LENGTH).toBeGreaterThanOrEqual(40);
    for (let i = 0; i < 500; i++) {
      const s = mintSecret();
      expect(s).toHaveLength(SECRET_LENGTH);
      expect(s).toMatch(/^[A-Za-z0-9]+$/);
    }
  });

  it('never repeats across many draws and uses the whole alphabet', () => {
    const seen = new Set<string>();
    const chars = new Set<string>();
    const draws = 5000;
    for (let i = 0; i < draws; i++) {
      const s = mintSecret();
      seen.add(s);
      for (const c of s) chars.add(c);
    }
    expect(seen.size).toBe(draws);
    // 240,000 uniform draws from 62 symbols: every symbol shows up.
    expect([...chars].sort().join('')).toBe([...ALNUM].sort().join(''));
  });

  it('draws each character roughly uniformly', () => {
    const counts = new Map<string, number>();
    const n = 4000;
    for (let i = 0; i < n; i++) for (const c of mintSecret()) counts.set(c, (counts.get(c) ?? 0) + 1);
    const expected = (n * SECRET_LENGTH) / ALNUM.length; // ≈ 3097 per symbol, sd ≈ 55
    for (const c of ALNUM) {
      const k = counts.get(c) ?? 0;
      expect(Math.abs(k - expected), `count of ${c}`).toBeLessThan(expected * 0.15);
    }
  });
});

describe('hashSecret / secretMatches', () => {
  it('hashes to 64 hex characters, SHA-256 of the secret', () => {
    expect(hashSecret('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    fc.assert(
      fc.property(secretArb, (s) => {
        expect(hashSecret(s)).toMatch(/^[0-9a-f]{64}$/);
      }),
    );
  });

  it('matches only the right secret', () => {
    fc.assert(
      fc.property(secretArb, secretArb, (right, other) => {
        const stored = hashSecret(right);
        expect(secretMatches(right, stored)).toBe(true);
        expect(secretMatches(other, stored)).toBe(other === right);
      }),
      { numRuns: 1000 },
    );
  });

  it('refuses a secret differing in one character, or by case', () => {
    fc.assert(
      fc.property(secretArb, fc.nat(), alnumChar, (right, at, c) => {
        const i = at % right.length;
        fc.pre(right[i] !== c);
        const wrong = right.slice(0, i) + c + right.slice(i + 1);
        expect(secretMatches(wrong, hashSecret(right))).toBe(false);
      }),
    );
    expect(secretMatches('ABC', hashSecret('abc'))).toBe(false);
    expect(secretMatches('abc', hashSecret('abc '))).toBe(false);
    expect(secretMatches('', hashSecret('a'))).toBe(false);
  });

  it('is false when there is no stored hash, whatever the secret', () => {
    fc.assert(
      fc.property(fc.oneof(secretArb, fc.string()), (s) => {
        expect(secretMatches(s, undefined)).toBe(false);
      }),
    );
    // Not even the empty secret or a fresh minted one matches the decoy.
    expect(secretMatches('', undefined)).toBe(false);
    expect(secretMatches(mintSecret(), undefined)).toBe(false);
  });

  it('is false against a stored value that is not a SHA-256 hex digest', () => {
    const s = 'abc';
    for (const stored of ['', 'zz', hashSecret(s).slice(0, 62), `${hashSecret(s)}00`, hashSecret(s).toUpperCase().replace(/[0-9]/g, 'G')]) {
      expect(secretMatches(s, stored), stored).toBe(false);
    }
    expect(secretMatches(s, hashSecret(s))).toBe(true);
  });
});

describe('bearerFrom', () => {
  // What an HTTP header value can carry: visible ASCII, space and tab.
  const headerChar = fc.oneof(
    fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)),
    fc.constant('\t'),
  );
  const credential = fc.string({ unit: headerChar, minLength: 1, maxLength: 80 }).filter((s) => s.trim() === s && s.length > 0);

  it('takes the credential after "Bearer " whatever the scheme case and spacing', () => {
    const scheme = fc.constantFrom('Bearer', 'bearer', 'BEARER', 'bEaReR');
    fc.assert(
      fc.property(scheme, fc.integer({ min: 1, max: 4 }), credential, fc.constantFrom('', ' ', '  '), (sch, spaces, cred, pad) => {
        expect(bearerFrom(`${pad}${sch}${' '.repeat(spaces)}${cred}${pad}`)).toBe(cred);
      }),
    );
  });

  it('takes a real token unchanged, so it parses', () => {
    fc.assert(
      fc.property(idArb, secretArb, (id, secret) => {
        const token = formatToken(id, secret);
        expect(bearerFrom(`Bearer ${token}`)).toBe(token);
        expect(parseToken(bearerFrom(`Bearer ${token}`)!)).toEqual({ id, secret });
      }),
    );
  });

  it('is undefined without a Bearer credential', () => {
    for (const h of [undefined, '', ' ', 'Bearer', 'Bearer ', 'Bearer    ', 'Bearer1|abc', 'Basic dXNlcjpwYXNz', 'Token 1|abc', '1|abc', 'Bearer\t1|abc', 'xBearer 1|abc']) {
      expect(bearerFrom(h), JSON.stringify(h)).toBeUndefined();
    }
  });

  it('keeps inner spaces, so a credential with one is malformed rather than truncated', () => {
    expect(bearerFrom('Bearer 1|abc def')).toBe('1|abc def');
    expect(parseToken(bearerFrom('Bearer 1|abc def')!)).toBeNull();
  });
});
