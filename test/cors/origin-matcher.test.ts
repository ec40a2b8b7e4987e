import fc from 'fast-check';
import { compileOrigins } from '../../lib/cors/origin-matcher';

describe('compileOrigins: exact origins', () => {
  const matcher = compileOrigins(['https://shop.example.test', 'http://localhost:3000']);

  it('matches the listed origins exactly', () => {
    expect(matcher.matches('https://shop.example.test')).toBe(true);
    expect(matcher.matches('http://localhost:3000')).toBe(true);
  });

  it.each([
    'https://shop.example.test:443',
    'http://shop.example.test',
    'https://shop.example.test.evil.com',
    'https://admin.example.test',
    'http://localhost:3001',
    'null',
    '',
  ])('does not match %j', (origin) => {
    expect(matcher.matches(origin)).toBe(false);
  });

  it('does not match a request without Origin', () => {
    expect(matcher.matches(undefined)).toBe(false);
  });
});

describe('compileOrigins: parent-domain patterns', () => {
  const matcher = compileOrigins(['https://*.example.test']);

  it.each(['https://shop.example.test', 'https://admin.example.test', 'https://a.b.example.test', 'https://x-1.example.test'])(
    'matches %s',
    (origin) => {
      expect(matcher.matches(origin)).toBe(true);
    },
  );

  it.each([
    ['the parent itself', 'https://example.test'],
    ['a look-alike domain', 'https://evil-example.test'],
    ['the parent as a prefix of another domain', 'https://example.test.evil.com'],
    ['userinfo smuggling', 'https://x.example.test@evil.com'],
    ['another scheme', 'http://shop.example.test'],
    ['an unwritten port', 'https://shop.example.test:8443'],
    ['the null origin', 'null'],
    ['an empty label', 'https://.example.test'],
    ['a label with a leading hyphen', 'https://-x.example.test'],
    ['a trailing dot', 'https://shop.example.test.'],
    ['a path', 'https://shop.example.test/'],
    ['a newline after the origin', 'https://shop.example.test\n'],
    ['a suffix after a newline', 'https://shop.example.test\nhttps://evil.com'],
    ['a prefix before the scheme', 'xhttps://shop.example.test'],
    ['an allowed origin inside another URL', 'https://evil.com/https://shop.example.test'],
  ])('does not match %s', (_name, origin) => {
    expect(matcher.matches(origin)).toBe(false);
  });

  it('matches an explicit port only when the pattern wrote it', () => {
    const withPort = compileOrigins(['https://*.example.test:8443']);
    expect(withPort.matches('https://shop.example.test:8443')).toBe(true);
    expect(withPort.matches('https://shop.example.test')).toBe(false);
    expect(withPort.matches('https://shop.example.test:9443')).toBe(false);
  });

  it('matches only origins the URL parser reads as https on a subdomain of example.test (property)', () => {
    const unit = fc.constantFrom(...'ab0-.@:/\\?#%_ \nEX'.split(''), 'example.test', 'evil.com');
    fc.assert(
      fc.property(fc.string({ unit, maxLength: 12 }), fc.oneof(fc.constant(''), fc.string({ unit, maxLength: 6 })), (before, after) => {
        const origin = `https://${before}.example.test${after}`;
        if (!matcher.matches(origin)) return;
        // An independent oracle: the WHATWG URL parser must agree that this is exactly such an origin.
        const url = new URL(origin);
        expect(url.origin).toBe(origin);
        expect(url.hostname.endsWith('.example.test')).toBe(true);
        expect(url.port).toBe('');
      }),
      { numRuns: 2000 },
    );
  });
});

describe('compileOrigins: "*"', () => {
  it('matches any origin that is present', () => {
    const any = compileOrigins('*');
    expect(any.any).toBe(true);
    expect(any.matches('https://anything.example')).toBe(true);
    expect(any.matches(undefined)).toBe(false);
  });

  it('refuses other entries beside "*"', () => {
    expect(() => compileOrigins(['*', 'https://shop.example.test'])).toThrow(/do not list others/);
  });
});

describe('compileOrigins: validation', () => {
  it.each([
    ['*.example.com', /got "\*\.example\.com"/],
    ['https://app.example.com/', /did you mean "https:\/\/app\.example\.com"/],
    ['https://app.example.com/path', /did you mean "https:\/\/app\.example\.com"/],
    ['https://app.example.com:443', /did you mean "https:\/\/app\.example\.com"/],
    ['HTTPS://App.Example.com', /did you mean "https:\/\/app\.example\.com"/],
    ['https://user@app.example.com', /no user or password/],
    ['app.example.com', /write the scheme/],
    ['ftp://app.example.com', /write the scheme/],
    ['null', /cannot be trusted/],
    ['https://*.com', /at least two labels/],
    ['https://a.*.example.com', /whole leftmost label/],
    ['https://*example.com', /whole leftmost label/],
    ['https://*.example.com/', /whole leftmost label/],
    ['https://*.Example.com', /lower case/],
  ])('rejects %j with a TypeError quoting it', (entry, message) => {
    expect(() => compileOrigins([entry])).toThrow(TypeError);
    expect(() => compileOrigins([entry])).toThrow(message);
    expect(() => compileOrigins([entry])).toThrow(/origins must list full origins like "https:\/\/app\.example\.com"/);
  });

  it('requires at least one origin', () => {
    expect(() => compileOrigins([])).toThrow(/origins is required/);
    expect(() => compileOrigins(undefined as never)).toThrow(/origins is required/);
  });
});
