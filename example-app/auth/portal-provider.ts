/**
 * The portal as an OpenID Provider (`openidProvider()`), for apps outside the parent domain: the partner app is its
 * client, with the secret both sides derive from the demo secret. The provider signs with the portal's key set (the
 * one its token service publishes) and keeps its codes and tokens in the shared store. The Notes API is its resource:
 * the partner may hold `notes:read` there, in a JWT access token whose audience is the Notes API alone.
 */
import { openidProvider, type KeySet, type KeyValueStore, type OpenidProviderRouter, type ProviderSessions } from 'express-sso-kit';
import { NOTES_READ_SCOPE, notesResource, origin, partnerOidcClient, secretFor, type DemoConfig } from '../common/config';

/**
 * The provider router for the auth site; mount it after `ssoSession()` and before `loginPortal()`.
 *
 * @example
 * app.use(sessions);
 * app.use(portalProvider(config, store, sessions, keys));
 */
export function portalProvider(config: DemoConfig, store: KeyValueStore, sessions: ProviderSessions, keys: KeySet): OpenidProviderRouter {
  const partner = origin(config, 'partner');
  return openidProvider({
    issuer: origin(config, 'auth'),
    keys,
    store,
    sessions,
    cookieSecrets: [secretFor(config, 'portal-provider-cookies')],
    // The partner's back-channel endpoint is reached through the demo's front door, on loopback (npm run demo) or
    // the compose network: private addresses, which the provider refuses to call unless the operator opts in.
    allowPrivateNetworkBackchannel: true,
    resources: [notesResource(config)],
    clients: [
      {
        ...partnerOidcClient(config),
        name: 'Partner',
        redirectUris: [`${partner}/callback/portal`],
        postLogoutRedirectUris: [`${partner}/signed-out`],
        backchannelLogoutUri: `${partner}/backchannel-logout/portal`,
        scopes: [NOTES_READ_SCOPE],
      },
    ],
  });
}
