export { openidProvider, type OidcProviderInstance, type OpenidProviderRouter } from './openid-provider';
export { type OpenidProviderOptions, type ProviderClient, type ProviderGrantType, type ProviderSessions } from './provider-options';
