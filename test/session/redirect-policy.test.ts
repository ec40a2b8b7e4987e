import { createRedirectPolicy, isSafeRedirect, type RedirectPolicyOptions } from '../../lib';

const options: RedirectPolicyOptions = {
  parentDomain: 'example.test',
  defaultUrl: 'https://www.example.test/',
  allowedOrigins: ['https://partner.example.net', 'https://shop.example.test:8443'],
};
const policy = createRedirectPolicy(options);

describe('createRedirectPolicy', () => {
  describe('accepts targets on the parent domain', () => {
    it.each([
      ['https://example.test/', 'https://example.test/'],
      ['https://shop.example.test/cart?item=1#top', 'https://shop.example.test/cart?item=1#top'],
      ['https://a.b.example.test/deep/path', 'https://a.b.example.test/deep/path'],
      ['HTTPS://Shop.Example.TEST/Cart', 'https://shop.example.test/Cart'],
      ['https://shop.example.test:443/x', 'https://shop.example.test/x'],
      ['https://partner.example.net/welcome', 'https://partner.example.net/welcome'],
      ['https://shop.example.test:8443/x', 'https://shop.example.test:8443/x'],
      ['/orders?id=7', 'https://www.example.test/orders?id=7'],
      ['/search?q=hello%20world', 'https://www.example.test/search?q=hello%20world'],
      ['/', 'https://www.example.test/'],
      ['/discount?pct=100%', 'https://www.example.test/discount?pct=100%'],
    ])('%s', (target, expected) => {
      expect(policy.isSafe(target)).toBe(true);
      expect(policy.sanitize(target)).toBe(expected);
    });
  });

  describe('refuses everything else and falls back to defaultUrl', () => {
    it.each([
      ['protocol-relative', '//evil.com'],
      ['protocol-relative to a lookalike', '//example.test.evil.com/'],
      ['slash-backslash', '/\\evil.com'],
      ['double backslash', '\\\\evil.com'],
      ['backslash in an absolute URL', 'https://shop.example.test\\@evil.com'],
      ['userinfo hiding the host', 'https://example.test@evil.com'],
      ['userinfo with password', 'https://user:pass@shop.example.test/'],
      ['empty userinfo', 'https://@shop.example.test/'],
      ['parent domain as a prefix', 'https://example.test.evil.com'],
      ['hyphenated lookalike', 'https://evil-example.test'],
      ['suffix without a dot', 'https://notexample.test/'],
      ['trailing-dot host', 'https://shop.example.test./'],
      ['other site', 'https://evil.com/'],
      ['javascript:', 'javascript:alert(1)'],
      ['JavaScript: with case and spaces', ' JavaScript:alert(1)'],
      ['data:', 'data:text/html,<script>alert(1)</script>'],
      ['vbscript:', 'vbscript:msgbox(1)'],
      ['encoded double slash', '/%2F%2Fevil.com'],
      ['encoded slash then slash', '/%2f/evil.com'],
      ['encoded backslash', '/%5Cevil.com'],
      ['double-encoded backslash', '/%255Cevil.com'],
      ['encoded newline', '/ok%0d%0aSet-Cookie:x=1'],
      ['tab inside', '/or\tders'],
      ['newline inside', 'https://shop.example.test/\nx'],
      ['NUL', '/orders\u0000'],
      ['leading space', ' https://shop.example.test/'],
      ['scheme without slashes', 'https:evil.com'],
      ['scheme with one slash', 'https:/evil.com'],
      ['plain http when not allowed', 'http://shop.example.test/'],
      ['ftp', 'ftp://shop.example.test/'],
      ['IPv4 literal', 'https://127.0.0.1/'],
      ['IPv4 literal in decimal', 'https://2130706433/'],
      ['IPv6 literal', 'https://[::1]/'],
      ['non-default port', 'https://shop.example.test:8080/'],
      ['allowed origin on another port', 'https://partner.example.net:444/'],
      ['relative without slash', 'orders'],
      ['query only', '?next=https://evil.com'],
      ['unicode line separator', '/a\u2028b'],
      ['zero-width space', 'https://shop.example.test\u200b/'],
      ['overlong', `/${'a'.repeat(2048)}`],
      ['empty string', ''],
      ['triple-encoded', '/%25252F%25252Fevil.com'],
    ])('%s: %j', (_name, target) => {
      expect(policy.isSafe(target)).toBe(false);
      expect(policy.sanitize(target)).toBe('https://www.example.test/');
    });

    it.each([[undefined], [null], [42], [['https://shop.example.test/']], [{ toString: () => 'https://shop.example.test/' }]])(
      'refuses the non-string %p',
      (target) => {
        expect(policy.isSafe(target)).toBe(false);
        expect(policy.sanitize(target)).toBe('https://www.example.test/');
      },
    );
  });

  it('accepts http targets and listed ports only when told to', () => {
    const warn = jest.spyOn(console, 'warn').mockImplementation(() => undefined);
    const development = createRedirectPolicy({
      parentDomain: 'sso.localhost',
      defaultUrl: 'http://shop.sso.localhost:3000/',
      allowInsecureLocalDevelopment: true,
      allowedPorts: [3000],
    });
    warn.mockRestore();
    expect(development.isSafe('http://admin.sso.localhost:3000/x')).toBe(true);
    expect(development.isSafe('http://admin.sso.localhost:3001/x')).toBe(false);
  });

  it('accepts a target of exactly 2048 characters and refuses 2049', () => {
    const path = `/${'a'.repeat(2047)}`;
    expect(policy.isSafe(path)).toBe(true);
    expect(policy.isSafe(`${path}a`)).toBe(false);
  });

  describe('validates its options', () => {
    it.each([
      [{ ...options, parentDomain: 'com' }, /parentDomain "com" is a top-level domain/],
      [{ ...options, parentDomain: '127.0.0.1' }, /not an IP address/],
      [{ ...options, defaultUrl: 'https://evil.com/' }, /defaultUrl "https:\/\/evil.com\/" is not itself a safe target/],
      [{ ...options, defaultUrl: '/relative' }, /defaultUrl must be an absolute URL/],
      [{ ...options, allowedOrigins: ['*.example.net'] }, /allowedOrigins must list full origins/],
      [{ ...options, allowedOrigins: ['https://*.example.net'] }, /allowedOrigins must list full origins/],
      [{ ...options, allowedOrigins: ['https://partner.example.net/path'] }, /allowedOrigins must list full origins/],
      [{ ...options, allowedOrigins: ['http://partner.example.net'] }, /allowedOrigins must use https/],
      [{ ...options, allowedOrigins: ['https://10.0.0.1'] }, /not IP addresses/],
      [{ ...options, allowedPorts: [0] }, /allowedPorts must hold port numbers/],
      [{ ...options, allowedOrigin: [] }, /unknown option "allowedOrigin" \(did you mean "allowedOrigins"\?\)/],
      [{ ...options, allowHttp: true }, /option "allowHttp" was renamed to allowInsecureLocalDevelopment/],
      [{ ...options, defaultUrl: 42 }, /defaultUrl must be an absolute URL on the parent domain/],
    ])('%#: %j', (bad, message) => {
      expect(() => createRedirectPolicy(bad as RedirectPolicyOptions)).toThrow(TypeError);
      expect(() => createRedirectPolicy(bad as RedirectPolicyOptions)).toThrow(message);
    });
  });
});

describe('createRedirectPolicy in production', () => {
  it('refuses allowInsecureLocalDevelopment when NODE_ENV=production', () => {
    const previous = process.env.NODE_ENV;
    process.env.NODE_ENV = 'production';
    try {
      expect(() =>
        createRedirectPolicy({
          parentDomain: 'sso.localhost',
          defaultUrl: 'http://shop.sso.localhost/',
          allowInsecureLocalDevelopment: true,
        }),
      ).toThrow(/allowInsecureLocalDevelopment is refused when NODE_ENV=production/);
    } finally {
      process.env.NODE_ENV = previous;
    }
  });
});

describe('isSafeRedirect', () => {
  it('answers like the policy built from the same options', () => {
    expect(isSafeRedirect('https://shop.example.test/a', options)).toBe(true);
    expect(isSafeRedirect('https://example.test@evil.com', options)).toBe(false);
    expect(isSafeRedirect('//evil.com', options)).toBe(false);
  });
});
