import type { LoginUser } from '../session/types';
import { misconfigured } from './errors';
import type { OidcProvider } from './provider';

/**
 * The login an ID token stands for: the identity `(oidc:<issuer>, sub)` — never an id the claims or the mapping
 * choose — with the name, roles and attributes of the provider's claims mapping (roles only from a provider trusted
 * for them, or from the app's own `claimsToUser`). A mapping that returns the wrong shape is a configuration error
 * (500 `oidc_misconfigured`), and nobody is logged in.
 *
 * @example
 * const user = loginUserOf(corp, claims, userinfo);
 * await establishLogin(req, user, { tags });
 */
export function loginUserOf(
  provider: OidcProvider,
  claims: Record<string, unknown>,
  userinfo: Record<string, unknown> | undefined,
): LoginUser {
  const profile = provider.claimsToUser(claims, userinfo);
  if (
    !profile ||
    typeof profile !== 'object' ||
    'id' in profile ||
    typeof profile.name !== 'string' ||
    !Array.isArray(profile.roles) ||
    !profile.roles.every((role) => typeof role === 'string')
  ) {
    throw misconfigured(
      `oidcProvider "${provider.name}": claimsToUser must return { name: string, roles: string[] } (no id: the identity is (issuer, sub); map it to a local account with ssoSession({ linkAccount }))`,
    );
  }
  const sub = String(claims.sub);
  const sid = typeof claims.sid === 'string' ? claims.sid : undefined;
  const authTime = typeof claims.auth_time === 'number' && Number.isFinite(claims.auth_time) ? claims.auth_time * 1000 : undefined;
  // How the provider says the user authenticated (OIDC Core §2): kept so step-up rules can read the level and time,
  // when the provider is trusted to say it. Otherwise the login counts as one factor, whatever a partner IdP claims.
  const trusted = provider.trustAuthenticationClaims;
  const amr =
    trusted && Array.isArray(claims.amr)
      ? claims.amr.filter((method): method is string => typeof method === 'string' && method !== '')
      : [];
  const acr = trusted && typeof claims.acr === 'string' && claims.acr !== '' ? claims.acr : undefined;
  const authentication = {
    ...(amr.length > 0 ? { amr } : {}),
    ...(acr === undefined ? {} : { acr }),
    ...(authTime === undefined ? {} : { authTime: Math.floor(authTime / 1000) }),
  };
  return {
    // The identity is (issuer, sub): another provider's user with the same sub is someone else.
    source: `oidc:${provider.issuer}`,
    subject: sub,
    name: profile.name,
    roles: [...profile.roles],
    method: 'oidc',
    ...(authTime === undefined ? {} : { authenticatedAt: authTime }),
    ...(Object.keys(authentication).length > 0 ? { authentication } : {}),
    attributes: {
      ...profile.attributes,
      provider: provider.name,
      issuer: provider.issuer,
      subject: sub,
      ...(sid ? { sid } : {}),
    },
  };
}
