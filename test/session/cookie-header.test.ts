import fc from 'fast-check';
import { parse } from 'cookie';
import { AMBIGUOUS_COOKIE, readCookie, readRawCookie } from '../../lib/session/cookie-header';

const NAME = '__Secure-sso.sid';

describe('readCookie', () => {
  it.each([
    ['__Secure-sso.sid=abc', 'abc'],
    ['a=1; __Secure-sso.sid=abc; b=2', 'abc'],
    ['a=1;__Secure-sso.sid=abc', 'abc'],
    ['a=1; \t__Secure-sso.sid \t= abc \t; b=2', 'abc'],
    ['x__Secure-sso.sid=evil; __Secure-sso.sid=abc', 'abc'],
    ['other=__Secure-sso.sid=evil; __Secure-sso.sid=abc', 'abc'],
    ['__Secure-sso.sid=s%3Aabc.def', 's:abc.def'],
    ['__Secure-sso.sid="s%3Aabc.def"', 's:abc.def'],
    ['__Secure-sso.sid=100%', '100%'],
    ['__Secure-sso.sid=', ''],
    ['novalue; __Secure-sso.sid=abc', 'abc'],
  ])('reads %j as %j', (header, value) => {
    expect(readCookie(header, NAME)).toBe(value);
  });

  it.each([
    [undefined],
    [''],
    ['other=1'],
    ['x__Secure-sso.sid=abc'],
    ['__Secure-sso.sid.old=abc'],
    ['other=__Secure-sso.sid=abc'],
    ['__Secure-sso.sid'],
    ['__secure-sso.sid=abc'],
  ])('finds nothing in %j', (header) => {
    expect(readCookie(header, NAME)).toBeUndefined();
  });

  it.each([
    ['__Secure-sso.sid=first; __Secure-sso.sid=second'],
    ['a=1; __Secure-sso.sid=s%3Avictim.sig; b=2; __Secure-sso.sid=s%3Aattacker.sig'],
    ['__Secure-sso.sid=; __Secure-sso.sid=abc'],
  ])('calls %j ambiguous', (header) => {
    expect(readCookie(header, NAME)).toBe(AMBIGUOUS_COOKIE);
  });

  it.each([['__Secure-sso.sid=same; __Secure-sso.sid=same'], ['__Secure-sso.sid=s%3Aa.b; __Secure-sso.sid=s:a.b']])(
    'accepts the same value twice in %j',
    (header) => {
      expect(readCookie(header, NAME)).not.toBe(AMBIGUOUS_COOKIE);
    },
  );

  it('reads the raw value without decoding it, for the engine to decode only values it has not verified', () => {
    expect(readRawCookie('a=1; __Secure-sso.sid="s%3Aabc.def"', NAME)).toBe('s%3Aabc.def');
    expect(readRawCookie('__Secure-sso.sid=s%3Aa.b; __Secure-sso.sid=s:a.b', NAME)).toBe('s%3Aa.b');
    expect(readRawCookie('__Secure-sso.sid=s%3Aa.b; __Secure-sso.sid=s%3Aa.c', NAME)).toBe(AMBIGUOUS_COOKIE);
    expect(readRawCookie('theme=dark', NAME)).toBeUndefined();
  });

  // The reference: the `cookie` package's parse (RFC 6265 pairs), with quoted values unquoted as cookie@0.x did.
  const unquote = (value: string): string =>
    value.length >= 2 && value.startsWith('"') && value.endsWith('"') ? value.slice(1, -1) : value;
  const reference = (header: string): string | undefined | typeof AMBIGUOUS_COOKIE => {
    const values = header
      .split(';')
      .filter((pair) => pair.includes('=') && pair.slice(0, pair.indexOf('=')).replace(/^[ \t]+|[ \t]+$/g, '') === NAME)
      .map((pair) => parse(pair, { decode: (raw) => raw })[NAME] as string)
      .map((value) => {
        const raw = unquote(value);
        try {
          return raw.includes('%') ? decodeURIComponent(raw) : raw;
        } catch {
          return raw;
        }
      });
    if (values.length === 0) return undefined;
    return values.every((value) => value === values[0]) ? values[0] : AMBIGUOUS_COOKIE;
  };
  const piece = fc.constantFrom(NAME, `x${NAME}`, 'a', '=', ';', ' ', '\t', '"', '%', '%3A', '%25', '%E0%A4%A', 's:', 'v', '.', 'sso.sid');

  it('agrees with the cookie package on any header', () => {
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 24 }), (pieces) => {
        const header = pieces.join('');
        expect(readCookie(header, NAME)).toBe(reference(header));
      }),
      { numRuns: 3000 },
    );
  });
});
