import { randomBytes } from 'node:crypto';
import { MemoryStore } from '../../lib/store';
import { openidProvider, type OpenidProviderOptions } from '../../lib/provider';
import { ssoSession } from '../../lib/session';
import { KeySet } from '../../lib/tokens';
import { OptionsError } from '../../lib/util/options';
import { recordUnhandledRejections } from '../helpers/fault-probes';

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

describe('openidProvider Level 3 options', () => {
  const JWK = {
    kty: 'EC',
    crv: 'P-256',
    x: 'f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU',
    y: 'x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0',
  };
  const keyed = { clientId: 'fapi', jwks: { keys: [JWK] }, redirectUris: ['https://fapi.test/callback'] };

  it('refuses a service scope on an interactive client', () => {
    expect(
      refused({
        serviceScopes: ['reports:read'],
        clients: [{ clientId: 'app', clientSecret: SECRET, redirectUris: ['https://a.test/cb'], scopes: ['reports:read'] }],
      }),
    ).toMatch(/"reports:read" is a service scope; an authorization_code client cannot hold one/);
  });

  it('refuses a service without scopes (an empty allowlist would allow every scope)', () => {
    expect(refused({ clients: [{ clientId: 'job', clientSecret: SECRET, grantTypes: ['client_credentials'] }] })).toMatch(/needs scopes/);
  });

  it('refuses two ways of client authentication at once, and a private key in jwks', () => {
    expect(refused({ clients: [{ ...keyed, clientSecret: SECRET }] })).toMatch(/one way to authenticate/);
    expect(refused({ clients: [{ ...keyed, jwks: { keys: [{ ...JWK, d: 'secret' }] } }] })).toMatch(/public keys/);
    expect(refused({ clients: [{ ...keyed, jwks: undefined, jwksUri: 'http://partner.test/jwks' }] })).toMatch(/jwksUri must use https/);
  });

  it('refuses resource scopes that clash with OpenID or service scopes, and indicators that are not URLs', () => {
    expect(refused({ resources: [{ indicator: 'https://api.test/', scopes: ['openid'] }] })).toMatch(/already an OpenID/);
    expect(refused({ resources: [{ indicator: 'notes', scopes: ['notes:read'] }] })).toMatch(/must be an absolute URL/);
  });

  it("with profile 'fapi2' refuses secrets, public clients, dpop 'allowed', optional PAR and form_post", async () => {
    expect(refused({ profile: 'fapi2' })).toMatch(/profile 'fapi2' needs private_key_jwt/);
    expect(refused({ profile: 'fapi2', clients: [{ clientId: 'spa', redirectUris: ['https://spa.test/cb'] }] })).toMatch(
      /needs private_key_jwt/,
    );
    expect(refused({ profile: 'fapi2', clients: [{ ...keyed, dpop: 'allowed' }] })).toMatch(/binds every token/);
    expect(refused({ profile: 'fapi2', clients: [{ ...keyed, requirePushedAuthorizationRequests: false }] })).toMatch(/requires pushed/);
    expect(refused({ profile: 'fapi2', clients: [{ ...keyed, responseMode: 'form_post' }] })).toMatch(/response_mode query only/);
    expect(refused({ profile: 'fapi2', dpop: 'allowed', clients: [keyed] })).toMatch(/binds every token/);
    const op = openidProvider(options({ profile: 'fapi2', clients: [keyed] }));
    await op.ready;
    await op.close();
  });
});

describe('openidProvider start-up failure', () => {
  it('rejects ready for whoever awaits it, and leaves no unhandled rejection for an app that does not', async () => {
    class DownStore extends MemoryStore {
      override async subscribe(): Promise<() => Promise<void>> {
        throw new Error('store down');
      }
    }
    const rejections = recordUnhandledRejections();
    try {
      const unused = openidProvider(options({ store: new DownStore() }));
      const awaited = openidProvider(options({ store: new DownStore() }));
      await expect(awaited.ready).rejects.toThrow('store down');
      await unused.close();
      // Unhandled rejections are reported after the microtask queue drains: give them a macrotask.
      await new Promise((resolve) => setImmediate(resolve));
      expect(rejections.seen).toEqual([]);
    } finally {
      rejections.stop();
    }
  });
});
