import { validateCookieDomain } from '../../lib';

describe('validateCookieDomain', () => {
  it.each([
    ['example.test', 'example.test'],
    ['Example.TEST', 'example.test'],
    ['.example.test', 'example.test'],
    ['sso.localhost', 'sso.localhost'],
    ['mycompany.co.uk', 'mycompany.co.uk'],
    ['team.github.io', 'team.github.io'],
  ])('accepts %s as %s', (domain, normalized) => {
    expect(validateCookieDomain(domain)).toBe(normalized);
  });

  it.each([
    ['com', /top-level domain/],
    ['test', /top-level domain/],
    ['localhost', /"localhost" cannot hold cookies for subdomains; use a name such as "sso.localhost"/],
    ['co.uk', /public suffix/],
    ['github.io', /public suffix/],
    ['com.au', /public suffix/],
    ['127.0.0.1', /not an IP address/],
    ['::1', /not an IP address/],
    ['[::1]', /not an IP address/],
    ['example.test.', /must not end with a dot/],
    ['exa mple.test', /host name of letters, digits and hyphens/],
    ['-bad.example.test', /host name of letters, digits and hyphens/],
    ['example..test', /host name of letters, digits and hyphens/],
    ['', /must be the parent domain/],
  ])('refuses %j with a message naming the fix', (domain, message) => {
    expect(() => validateCookieDomain(domain)).toThrow(TypeError);
    expect(() => validateCookieDomain(domain)).toThrow(message);
  });

  it('refuses non-strings', () => {
    expect(() => validateCookieDomain(undefined)).toThrow(/cookieDomain must be the parent domain shared by your apps/);
    expect(() => validateCookieDomain(42)).toThrow(TypeError);
  });
});
