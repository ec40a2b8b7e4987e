import { randomBytes } from 'node:crypto';
import { MemoryStore } from '../../lib/store';
import { openidProvider, type OpenidProviderOptions } from '../../lib/provider';
import { ssoSession } from '../../lib/session';
import { KeySet } from '../../lib/tokens';
import { OptionsError } from '../../lib/util/options';

const store = new MemoryStore();
const sessions = ssoSession({
  store,
  cookieDomain: 'example.test',
  secret: randomBytes(32).toString('hex'),
  loginUrl: 'https://auth.example.test/login',
});
const SECRET = 'a-client-secret-of-at-least-32-characters';

function options(overrides: Partial<OpenidProviderOptions> = {}): OpenidProviderOptions {
  return {
    issuer: 'https://auth.example.test',
    keys: KeySet.generate('ES256'),
    store,
    sessions,
    cookieSecrets: ['a-cookie-secret-of-at-least-32-characters'],
    clients: [{ clientId: 'partner', clientSecret: SECRET, redirectUris: ['https://partner.test/callback'] }],
    ...overrides,
  };
}

function refused(overrides: Partial<OpenidProviderOptions>): string {
  try {
    openidProvider(options(overrides));
  } catch (error) {
    expect(error).toBeInstanceOf(OptionsError);
    return (error as Error).message;
  }
  throw new Error('accepted');
}

describe('openidProvider options', () => {
  it('suggests the option meant by an unknown key', () => {
    expect(refused({ cookieSecret: ['x'] } as never)).toMatch(/"cookieSecret" \(did you mean "cookieSecrets"\?\)/);
  });

  it('refuses a factory mounted without being called', () => {
    const request = { method: 'GET', headers: {}, url: '/' };
    expect(() => openidProvider(request as never)).toThrow(/write app\.use\(openidProvider\(\{ \.\.\. \}\)\)/);
  });

  it('takes allowPrivateNetworkBackchannel only as a boolean (an opt-in, never a string that looks like one)', () => {
    expect(refused({ allowPrivateNetworkBackchannel: 'false' } as never)).toMatch(/allowPrivateNetworkBackchannel/);
  });

  it('refuses an HS256 key set: ID tokens need a public key', () => {
    expect(refused({ keys: KeySet.generate('HS256') })).toMatch(/RS256, PS256 or ES256/);
  });

  it('refuses an issuer with a path or over plain http on a public name', () => {
    expect(refused({ issuer: 'https://auth.example.test/oidc' })).toMatch(/issuer must be an origin/);
    expect(refused({ issuer: 'http://auth.example.test' })).toMatch(/must use https/);
  });

  it('refuses a redirect URI over plain http outside loopback, and one with a fragment', () => {
    expect(refused({ clients: [{ clientId: 'p', clientSecret: SECRET, redirectUris: ['http://partner.test/cb'] }] })).toMatch(/https/);
    expect(refused({ clients: [{ clientId: 'p', clientSecret: SECRET, redirectUris: ['https://partner.test/cb#x'] }] })).toMatch(
      /fragment/,
    );
  });

  it('refuses an interactive client without redirect URIs and a public client_credentials client', () => {
    expect(refused({ clients: [{ clientId: 'p', clientSecret: SECRET }] })).toMatch(/needs redirectUris/);
    expect(refused({ clients: [{ clientId: 'job', grantTypes: ['client_credentials'] }] })).toMatch(/needs a clientSecret/);
  });

  it('refuses a short client secret, a client listed twice and a service scope that is not offered', () => {
    expect(refused({ clients: [{ clientId: 'p', clientSecret: 'short', redirectUris: ['https://p.test/cb'] }] })).toMatch(/at least 32/);
    const partner = { clientId: 'p', clientSecret: SECRET, redirectUris: ['https://p.test/cb'] };
    expect(refused({ clients: [partner, partner] })).toMatch(/appears twice/);
    expect(refused({ clients: [{ clientId: 'job', clientSecret: SECRET, grantTypes: ['client_credentials'], scopes: ['x'] }] })).toMatch(
      /not one of serviceScopes/,
    );
  });

  it('refuses short cookie secrets', () => {
    expect(refused({ cookieSecrets: ['short'] })).toMatch(/at least 32 characters/);
  });
});
