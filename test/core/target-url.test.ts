/**
 * The one parser that decides where an outbound URL goes: URLs that parsers read differently
 * (WHATWG URL, curl, git) are refused with a reason; plain ones give scheme, host and port.
 */
import { describe, expect, it } from 'vitest';
import { parseTarget } from '../../src/core/target-url.js';

const ALL = ['http', 'https', 'git'] as const;

describe('parseTarget', () => {
  it('plain URLs give the scheme, host and port every parser reads', () => {
    expect(parseTarget('https://github.com/owner/app.git', ALL, { repository: true })).toMatchObject({ scheme: 'https', host: 'github.com', port: 443, rest: '/owner/app.git' });
    expect(parseTarget('git://127.0.0.1:9418/app.git', ALL, { repository: true })).toMatchObject({ scheme: 'git', host: '127.0.0.1', port: 9418 });
    expect(parseTarget('git://Git.Example.Test/x', ALL)).toMatchObject({ host: 'git.example.test', port: 9418 });
    expect(parseTarget('http://[::1]:8080/hook', ALL)).toMatchObject({ host: '::1', port: 8080 });
    expect(parseTarget('HTTP://H.TEST./x?y=1#z', ALL)).toMatchObject({ scheme: 'http', host: 'h.test.', port: 80, rest: '/x?y=1#z' });
    expect(parseTarget('https://xn--r8jz45g.jp/hook', ALL)).toMatchObject({ host: 'xn--r8jz45g.jp' });
    expect(parseTarget('http://127.0.0.1:3000/telegram/bot123:tg-secret/sendMessage', ['http'])).toMatchObject({ host: '127.0.0.1', port: 3000 });
  });

  it('refuses what parsers disagree on: backslash, whitespace, control characters, credentials, @, percent-encoding, non-ASCII, odd IPv4 forms', () => {
    const cases: [string, RegExp][] = [
      ['http://public.test\\@127.0.0.1:23751/pwn', /backslash/],
      ['http://public.test\\.127.0.0.1/', /backslash/],
      ['http://public.test@127.0.0.1/pwn', /credentials or "@"/],
      ['https://user:secret@git.example.test/app.git', /credentials/],
      ['http://@127.0.0.1/', /"@"/],
      ['http://exa mple.test/', /plain ASCII/],
      ['http://example.test/\t', /plain ASCII/],
      ['http://example.test/\n', /plain ASCII/],
      ['http://例え.jp/', /punycode/],
      ['http://a.test%2f@127.0.0.1/', /"@"/],
      ['http://127.0.0.1%2f.a.test/', /percent-encoded/],
      ['http://a.test%40127.0.0.1/', /percent-encoded/],
      ['http://a.test%5c127.0.0.1/', /percent-encoded/],
      ['http://127.1/', /four decimal numbers/],
      ['http://0x7f000001/', /four decimal numbers/],
      ['http://2130706433/', /four decimal numbers/],
      ['http://0177.0.0.1/', /four decimal numbers/],
      ['git://0x7f.1/app.git', /four decimal numbers/],
      ['http://h.test:0/', /port from 1/],
      ['http://h.test:99999/', /port from 1/],
      ['ftp://h.test/', /http:\/\/ or https:\/\/ or git:\/\//],
      ['file:///etc/passwd', /scheme/],
      ['h.test/x', /valid URL/],
      ['http://[zz::1]/', /IPv6/],
      ['http://h_.test:80:80/', /host/],
    ];
    for (const [url, why] of cases) {
      const r = parseTarget(url, ALL);
      expect(typeof r === 'string' ? r : `accepted as ${JSON.stringify(r)}`, url).toMatch(why);
    }
  });

  it('a repository URL is a plain path: no @ (git reads "@[" anywhere as a host), query or fragment', () => {
    for (const url of ['git://a.test/b@[::1]/x', 'https://a.test/x.git?service=y', 'https://a.test/x.git#frag', 'https://a.test/x%40y.git']) {
      expect(parseTarget(url, ALL, { repository: true }), url).toMatch(/plain repository path/);
    }
    expect(parseTarget('https://a.test/x.git?y', ALL)).toMatchObject({ host: 'a.test' });
  });
});
