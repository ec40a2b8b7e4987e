export { openidProvider, type OidcProviderInstance, type OpenidProviderRouter } from './openid-provider';
export {
  type OpenidProviderOptions,
  type ProviderClient,
  type ProviderClientJwks,
  type ProviderDpopMode,
  type ProviderGrantType,
  type ProviderResource,
  type ProviderSessions,
} from './provider-options';
export { endProviderAccess } from './provider-access';
