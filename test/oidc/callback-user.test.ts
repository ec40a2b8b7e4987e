import { oidcProvider, type OidcProviderOptions } from '../../lib/oidc';
import { loginUserOf } from '../../lib/oidc/callback-user';
import { loginAuthentication } from '../../lib/session/authentication';

const BASE: OidcProviderOptions = {
  issuer: 'https://partner-idp.example.test',
  clientId: 'portal',
  clientSecret: 'a-client-secret-of-at-least-32-characters',
  redirectUri: 'https://auth.example.test/callback/partner',
};
const CLAIMS = { sub: 'u1', name: 'Ada', acr: 'phr', amr: ['hwk', 'pin'], auth_time: 1_800_000_000 };

/** The level the session would record for this login (what `requireSession({ acr })` decides on). */
function levelOf(options: Partial<OidcProviderOptions>): { acr: string; amr: readonly string[] } {
  const user = loginUserOf(oidcProvider({ ...BASE, ...options }), CLAIMS, undefined);
  const { acr, amr } = loginAuthentication('oidc', user.authentication, 1_800_000_000);
  return { acr, amr };
}

describe('whether an upstream provider is believed about how the user authenticated', () => {
  it('does not believe acr and amr from a provider not trusted for roles: its login counts as one factor', () => {
    expect(levelOf({})).toEqual({ acr: '1fa', amr: ['ext'] });
  });

  it('believes them from a provider trusted for roles', () => {
    expect(levelOf({ rolesClaim: 'roles' })).toEqual({ acr: 'phr', amr: ['hwk', 'pin'] });
  });

  it('follows trustAuthenticationClaims when it is given, either way', () => {
    expect(levelOf({ trustAuthenticationClaims: true })).toEqual({ acr: 'phr', amr: ['hwk', 'pin'] });
    expect(levelOf({ rolesClaim: 'roles', trustAuthenticationClaims: false })).toEqual({ acr: '1fa', amr: ['ext'] });
  });
});
