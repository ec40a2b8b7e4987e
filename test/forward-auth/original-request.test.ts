import { originalRequest, withoutSegmentParameters } from '../../lib/forward-auth/original-request';
import { headerValue, identityHeaders, DEFAULT_IDENTITY_HEADERS } from '../../lib/forward-auth/identity-headers';
import { DecisionCache } from '../../lib/forward-auth/decision-cache';
import type { AccessDecision } from '../../lib/access';

const caddy = (overrides: Record<string, string | string[]>) => ({
  'x-forwarded-method': 'GET',
  'x-forwarded-proto': 'https',
  'x-forwarded-host': 'docs.example.test',
  'x-forwarded-uri': '/guide?page=2',
  ...overrides,
});

describe('originalRequest', () => {
  it('reads the Caddy/Traefik headers into the original request, default port dropped from the origin', () => {
    expect(originalRequest('forward-auth', caddy({ 'x-forwarded-host': 'Docs.Example.Test:443' }))).toEqual({
      method: 'GET',
      scheme: 'https',
      host: 'docs.example.test:443',
      hostname: 'docs.example.test',
      origin: 'https://docs.example.test',
      path: '/guide',
      uri: '/guide?page=2',
      url: 'https://docs.example.test/guide?page=2',
    });
  });

  it.each([
    ['a list of hosts', { 'x-forwarded-host': 'docs.example.test, evil.example' }],
    ['a repeated header', { 'x-forwarded-host': ['docs.example.test', 'evil.example'] }],
    ['a host with credentials', { 'x-forwarded-host': 'docs.example.test@evil.example' }],
    ['a scheme-relative URI', { 'x-forwarded-uri': '//evil.example/x' }],
    ['a relative URI', { 'x-forwarded-uri': 'guide' }],
    ['a fragment', { 'x-forwarded-uri': '/guide#x' }],
    ['a line break', { 'x-forwarded-uri': '/guide\r\nX: y' }],
    ['an unknown scheme', { 'x-forwarded-proto': 'javascript' }],
    ['a bad method', { 'x-forwarded-method': 'GET /' }],
  ])('refuses %s', (_name, overrides) => {
    expect(originalRequest('forward-auth', caddy(overrides))).toBeUndefined();
  });

  it('reads nginx X-Original-URL and Envoy’s own method and Host', () => {
    const nginx = originalRequest('auth-request', { 'x-original-method': 'POST', 'x-original-url': 'http://docs.example.test:8080/a?b' });
    expect(nginx?.url).toBe('http://docs.example.test:8080/a?b');
    expect(nginx?.method).toBe('POST');
    expect(originalRequest('auth-request', { 'x-original-method': 'GET', 'x-original-url': 'http://user@evil.example/' })).toBeUndefined();
    const envoy = originalRequest(
      'ext-authz',
      { host: 'docs.example.test', 'x-forwarded-proto': 'https' },
      { method: 'delete', pathAfterPrefix: '/x' },
    );
    expect(envoy?.method).toBe('DELETE');
    expect(envoy?.url).toBe('https://docs.example.test/x');
  });
});

describe('withoutSegmentParameters', () => {
  it('drops ; parameters per segment, as servlet containers route', () => {
    expect(withoutSegmentParameters('/admin;jsessionid=1/report')).toBe('/admin/report');
    expect(withoutSegmentParameters('/admin%3Bx/report')).toBe('/admin/report');
    expect(withoutSegmentParameters('/plain')).toBeUndefined();
  });
});

describe('identity headers', () => {
  it('percent-encodes what is not visible ASCII, and % itself, so no value ends a header line', () => {
    expect(headerValue('Zoë 100%')).toBe('Zo%C3%AB 100%25');
    expect(headerValue('a\r\nRemote-User: root')).toBe('a%0D%0ARemote-User: root');
  });

  it('keeps the roles list unambiguous', () => {
    const headers = identityHeaders({ user: 'u', name: undefined, email: undefined, groups: ['a,b', 'c'] }, DEFAULT_IDENTITY_HEADERS);
    expect(headers).toEqual({ 'Remote-User': 'u', 'Remote-Groups': 'a%2Cb,c' });
  });
});

describe('DecisionCache', () => {
  it('holds at most maxEntries, dropping the least recently used', () => {
    const cache = new DecisionCache(2);
    const decision = { outcome: 'refuse', reason: 'malformed-path', rule: undefined } as AccessDecision;
    cache.set('a', decision);
    cache.set('b', decision);
    cache.get('a');
    cache.set('c', decision);
    expect(cache.size).toBe(2);
    expect(cache.get('b')).toBeUndefined();
    expect(cache.get('a')).toBe(decision);
  });
});
