import {
  buildAppRegistry,
  deriveOpenid,
  deriveUnionid,
  generateAppSecret,
  hashAppSecret,
  verifyAppSecret,
} from '../../lib/qr/app-registry';

const secret = generateAppSecret();
const app = { appid: 'shop', secretHash: hashAppSecret(secret), name: 'Shop', redirectUris: ['https://shop.example.test/callback/qr'] };

describe('hashAppSecret and verifyAppSecret', () => {
  it('accepts the registered secret and refuses any other', () => {
    const registered = buildAppRegistry([app]).get('shop')!;
    expect(verifyAppSecret(registered, secret)).toBe(true);
    expect(verifyAppSecret(registered, `${secret}x`)).toBe(false);
    expect(verifyAppSecret(registered, '')).toBe(false);
  });

  it('refuses to hash a low-entropy secret', () => {
    expect(() => hashAppSecret('short-secret')).toThrow(/at least 32 characters/);
  });

  it('never stores the secret itself', () => {
    expect(app.secretHash).not.toContain(secret);
    expect(app.secretHash).toMatch(/^sha256:[A-Za-z0-9_-]{43}$/);
  });
});

describe('buildAppRegistry', () => {
  it('refuses a secret given where its hash belongs', () => {
    expect(() => buildAppRegistry([{ ...app, secretHash: secret }])).toThrow(/secretHash must be made by hashAppSecret/);
  });

  it('refuses redirect URIs that are not absolute https URLs', () => {
    expect(() => buildAppRegistry([{ ...app, redirectUris: ['/callback'] }])).toThrow(/absolute URL/);
    expect(() => buildAppRegistry([{ ...app, redirectUris: ['http://shop.example.test/cb'] }])).toThrow(/https/);
    expect(() => buildAppRegistry([{ ...app, redirectUris: ['http://127.0.0.1:3000/cb'] }])).not.toThrow();
    expect(() => buildAppRegistry([{ ...app, redirectUris: ['http://auth.sso.localhost:3000/cb'] }])).not.toThrow();
    expect(() => buildAppRegistry([{ ...app, redirectUris: ['http://localhost.evil.example/cb'] }])).toThrow(/https/);
    expect(() => buildAppRegistry([{ ...app, redirectUris: ['http://evillocalhost/cb'] }])).toThrow(/https/);
  });

  it("keeps the app's own sign-in page, which must be an absolute https URL like the redirect URIs", () => {
    expect(buildAppRegistry([{ ...app, loginPageUrl: 'https://auth.example.test/login' }]).get('shop')!.loginPageUrl).toBe(
      'https://auth.example.test/login',
    );
    expect(buildAppRegistry([app]).get('shop')!.loginPageUrl).toBeUndefined();
    expect(() => buildAppRegistry([{ ...app, loginPageUrl: '/login' }])).toThrow(/loginPageUrl "\/login" is not an absolute URL/);
    expect(() => buildAppRegistry([{ ...app, loginPageUrl: 'http://auth.example.test/login' }])).toThrow(/loginPageUrl .* must use https/);
    expect(() => buildAppRegistry([{ ...app, loginPageUrl: 'javascript:alert(1)' }])).toThrow(/loginPageUrl/);
  });

  it('refuses a duplicate appid, an empty list and a missing name', () => {
    expect(() => buildAppRegistry([app, app])).toThrow(/registered twice/);
    expect(() => buildAppRegistry([])).toThrow(/non-empty array/);
    expect(() => buildAppRegistry([{ ...app, name: ' ' }])).toThrow(/display name/);
  });
});

describe('deriveOpenid', () => {
  const key = Buffer.alloc(32, 7);
  it('is stable for one user and app, and differs between apps and users', () => {
    expect(deriveOpenid(key, 'shop', 'u1')).toBe(deriveOpenid(key, 'shop', 'u1'));
    expect(deriveOpenid(key, 'shop', 'u1')).not.toBe(deriveOpenid(key, 'admin', 'u1'));
    expect(deriveOpenid(key, 'shop', 'u1')).not.toBe(deriveOpenid(key, 'shop', 'u2'));
    expect(deriveOpenid(key, 'shop', 'u1')).toHaveLength(28);
  });

  it('gives one unionid across apps that does not reveal the user id', () => {
    expect(deriveUnionid(key, 'u1')).toBe(deriveUnionid(key, 'u1'));
    expect(deriveUnionid(key, 'u1')).not.toContain('u1');
  });
});
