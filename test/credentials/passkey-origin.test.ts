import { passkeyOriginAllowed } from '../../lib/credentials/passkey-origin';

describe('passkeyOriginAllowed', () => {
  it.each([
    ['https://example.com', 'example.com'],
    ['https://auth.example.com', 'example.com'],
    ['https://a.b.example.com:8443', 'example.com'],
    ['http://auth.sso.localhost:8080', 'sso.localhost'],
    ['https://shop.sso.localhost', 'sso.localhost'],
  ])('accepts %s for %s', (origin, rpId) => {
    expect(passkeyOriginAllowed(origin, rpId)).toBe(true);
  });

  it.each([
    ['https://evil.test', 'example.com'],
    ['https://example.com.evil.test', 'example.com'],
    ['https://notexample.com', 'example.com'],
    ['http://auth.example.com', 'example.com'],
    ['https://auth.example.com/', 'example.com'],
    ['https://AUTH.example.com', 'example.com'],
    ['https://user@auth.example.com', 'example.com'],
    ['null', 'example.com'],
    ['android:apk-key-hash:abc', 'example.com'],
    ['http://evil.localhost', 'sso.localhost'],
  ])('refuses %s for %s', (origin, rpId) => {
    expect(passkeyOriginAllowed(origin, rpId)).toBe(false);
  });
});
