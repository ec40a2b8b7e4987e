import { validateCookieDomain } from '../../lib/session';

describe('validateCookieDomain', () => {
  it.each([
    ['example.test', 'example.test'],
    ['Example.TEST', 'example.test'],
    ['.example.test', 'example.test'],
    ['sso.localhost', 'sso.localhost'],
    ['mycompany.co.uk', 'mycompany.co.uk'],
    ['team.github.io', 'team.github.io'],
    ['mycompany.co.at', 'mycompany.co.at'],
    ['shop.myshopify.com', 'shop.myshopify.com'],
    ['example.com', 'example.com'],
    ['sso.test', 'sso.test'],
    ['corp.internal', 'corp.internal'],
    ['example.local', 'example.local'],
    ['apps.example.localhost', 'apps.example.localhost'],
    // An exception rule of the list (!city.kawasaki.jp): a registrable name under the wildcard *.kawasaki.jp.
    ['city.kawasaki.jp', 'city.kawasaki.jp'],
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
    // ICANN suffixes a short hand-written list missed, and private (hosting) suffixes of the Public Suffix List.
    ['co.at', /"co.at" is a public suffix shared by unrelated sites/],
    ['or.at', /public suffix/],
    ['com.de', /public suffix/],
    ['kawasaki.jp', /public suffix/],
    ['anything.kawasaki.jp', /public suffix/],
    ['myshopify.com', /public suffix/],
    ['s3.amazonaws.com', /public suffix/],
    ['x.compute.amazonaws.com', /public suffix/],
    ['blogspot.com', /public suffix/],
    ['herokuapp.com', /public suffix/],
    ['azurewebsites.net', /public suffix/],
    ['.CO.AT', /public suffix/],
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
