import type { Request } from 'express';
import { demoKeyPrefix, origin, readDemoConfig, secretFor, sessionOptions } from '../../example-app/common/config';
import { MemoryStore } from '../../lib/store';

const SECRET = 'demo-config-test-secret-0123456789abcdef';

describe('readDemoConfig', () => {
  it('defaults to sso.localhost behind a front door on 8080, plain http, the local Redis, QR login on', () => {
    expect(readDemoConfig({ DEMO_SECRET: SECRET })).toEqual({
      domain: 'sso.localhost',
      secure: false,
      publicPort: 8080,
      redisUrl: 'redis://127.0.0.1:6379',
      secret: SECRET,
      frontDoorHost: '127.0.0.1',
      qrLogin: true,
      partnerDomain: 'partner.localhost',
      openidProvider: true,
    });
  });

  it('reads every variable docker-compose.yml and npm run demo set', () => {
    const config = readDemoConfig({
      DEMO_DOMAIN: 'Demo.Example.Test',
      DEMO_PUBLIC_PORT: '443',
      REDIS_URL: 'redis://redis:6379',
      DEMO_SECURE: '1',
      DEMO_SECRET: SECRET,
      DEMO_FRONT_DOOR_HOST: 'proxy',
      DEMO_PARTNER_DOMAIN: 'Partner.Example.Net',
    });
    expect(config).toMatchObject({ domain: 'demo.example.test', publicPort: 443, redisUrl: 'redis://redis:6379', secure: true });
    expect(config).toMatchObject({ partnerDomain: 'partner.example.net', openidProvider: true });
    expect(origin(config, 'partner')).toBe('https://partner.example.net');
    expect(config.frontDoorHost).toBe('proxy');
    expect(origin(config, 'shop')).toBe('https://shop.demo.example.test');
  });

  it('turns QR login off on plain http under a name that is not a loopback name', () => {
    expect(readDemoConfig({ DEMO_DOMAIN: 'sso.test', DEMO_SECRET: SECRET }).qrLogin).toBe(false);
    expect(readDemoConfig({ DEMO_DOMAIN: 'sso.test', DEMO_SECURE: '1', DEMO_SECRET: SECRET }).qrLogin).toBe(true);
  });

  it("turns the portal's OpenID Provider off on plain http unless both domains are loopback names", () => {
    expect(readDemoConfig({ DEMO_DOMAIN: 'sso.test', DEMO_SECRET: SECRET }).openidProvider).toBe(false);
    expect(readDemoConfig({ DEMO_PARTNER_DOMAIN: 'partner.test', DEMO_SECRET: SECRET }).openidProvider).toBe(false);
    expect(readDemoConfig({ DEMO_DOMAIN: 'sso.test', DEMO_SECURE: '1', DEMO_SECRET: SECRET }).openidProvider).toBe(true);
  });

  it.each([
    [{ DEMO_DOMAIN: 'localhost' }, /DEMO_DOMAIN/],
    // The partner is another organisation: the parent-domain cookie must not reach it, nor its cookie the sites.
    [{ DEMO_PARTNER_DOMAIN: 'partner.sso.localhost' }, /DEMO_PARTNER_DOMAIN must be outside the parent domain/],
    [{ DEMO_PARTNER_DOMAIN: 'sso.localhost' }, /DEMO_PARTNER_DOMAIN must be outside the parent domain/],
    [{ DEMO_DOMAIN: 'sso.partner.localhost' }, /DEMO_PARTNER_DOMAIN must be outside the parent domain/],
    [{ DEMO_PARTNER_DOMAIN: '127.0.0.1' }, /DEMO_PARTNER_DOMAIN must be a host name/],
    [{ DEMO_PARTNER_DOMAIN: 'partner.test/evil' }, /DEMO_PARTNER_DOMAIN must be a host name/],
    [{ DEMO_DOMAIN: '127.0.0.1' }, /DEMO_DOMAIN/],
    [{ DEMO_DOMAIN: 'sso..test' }, /DEMO_DOMAIN/],
    [{ DEMO_DOMAIN: 'sso.test/evil' }, /DEMO_DOMAIN/],
    [{ DEMO_PUBLIC_PORT: '70000' }, /DEMO_PUBLIC_PORT must be a port number/],
    [{ REDIS_URL: 'http://redis' }, /REDIS_URL must start with redis:\/\//],
    [{ DEMO_SECURE: 'yes' }, /DEMO_SECURE must be 1 or 0/],
    [{ DEMO_SECRET: 'short' }, /DEMO_SECRET must be set to at least 32 characters/],
  ])('refuses %j with a message naming the variable', (env, message) => {
    expect(() => readDemoConfig({ DEMO_SECRET: SECRET, ...env })).toThrow(message);
  });
});

describe('origin and secretFor', () => {
  const config = readDemoConfig({ DEMO_SECRET: SECRET });

  it("gives each site its public origin with the front door's port", () => {
    expect(origin(config, 'auth')).toBe('http://auth.sso.localhost:8080');
    expect(origin(readDemoConfig({ DEMO_SECRET: SECRET, DEMO_PUBLIC_PORT: '80' }), 'api')).toBe('http://api.sso.localhost');
    expect(origin(config, 'partner')).toBe('http://partner.localhost:8080');
  });

  it('derives one key per purpose from the demo secret, the same in every process', () => {
    expect(secretFor(config, 'sessions')).toBe(secretFor(readDemoConfig({ DEMO_SECRET: SECRET }), 'sessions'));
    expect(secretFor(config, 'sessions')).not.toBe(secretFor(config, 'oidc-client'));
    expect(secretFor(config, 'sessions')).not.toContain(SECRET);
    expect(secretFor(config, 'sessions')).toMatch(/^[0-9a-f]{64}$/);
  });

  it("keeps each secret's data under a key prefix of its own, so no run meets data sealed with another secret", () => {
    const other = readDemoConfig({ DEMO_SECRET: `${SECRET}-other` });
    expect(demoKeyPrefix(config)).toMatch(/^sso-demo:[0-9a-f]{8}:$/);
    expect(demoKeyPrefix(config)).toBe(demoKeyPrefix(readDemoConfig({ DEMO_SECRET: SECRET, DEMO_PUBLIC_PORT: '9090' })));
    expect(demoKeyPrefix(other)).not.toBe(demoKeyPrefix(config));
  });
});

describe("sessionOptions' linkAccount", () => {
  const config = readDemoConfig({ DEMO_SECRET: SECRET });
  const link = sessionOptions(config, new MemoryStore()).linkAccount!;
  const login = (source: string, subject: string, attributes?: Record<string, string>) =>
    link({ source, subject, name: 'x', roles: ['admin'], method: 'oidc', ...(attributes ? { attributes } : {}) } as never, {} as Request);
  const portalQr = 'qr:http://auth.sso.localhost:8080#sso-portal';

  it("maps the demo identity provider's user onto the directory account of the same id, with the directory's roles", async () => {
    await expect(login('oidc:http://idp.sso.localhost:8080', 'bob')).resolves.toEqual({
      source: 'directory:demo',
      subject: 'bob',
      name: 'Bob Example',
      roles: [],
    });
  });

  it('refuses a user of the demo identity provider that the directory does not know', async () => {
    await expect(login('oidc:http://idp.sso.localhost:8080', 'mallory')).resolves.toBeNull();
  });

  it("maps the portal's own QR logins onto the directory account its provider names, so one person is one account", async () => {
    await expect(login(portalQr, 'pseudonymous-openid', { openid: 'pseudonymous-openid', user_id: 'alice' })).resolves.toEqual({
      source: 'directory:demo',
      subject: 'alice',
      name: 'Alice Example',
      roles: ['admin'],
    });
    await expect(login(portalQr, 'pseudonymous-openid', { user_id: 'mallory' })).resolves.toBeNull();
    // Without the id its provider releases only to it, the portal's QR login names no account: refused, not guessed.
    await expect(login(portalQr, 'alice')).resolves.toBeNull();
  });

  it('leaves every other source an account of its own, even with a subject or user_id the directory knows', async () => {
    await expect(login('oidc:http://idp.evil.test', 'alice')).resolves.toBeUndefined();
    await expect(login('qr:http://idp.evil.test#sso-portal', 'x', { user_id: 'alice' })).resolves.toBeUndefined();
    await expect(login('qr:http://auth.sso.localhost:8080#shop', 'x', { user_id: 'alice' })).resolves.toBeUndefined();
  });
});
