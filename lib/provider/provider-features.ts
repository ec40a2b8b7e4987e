import type Provider from 'oidc-provider' with { 'resolution-mode': 'import' };
import type { Configuration, KoaContextWithOIDC } from 'oidc-provider' with { 'resolution-mode': 'import' };
import type { KeyValueStore } from '../store';
import { sha256 } from '../util/digest';
import { DEFAULT_DPOP_ALGORITHMS } from '../tokens/dpop';
import { allowedScopesOf, CLIENT_ASSERTION_ALGORITHMS } from './client-metadata';
import type { ProviderResource, ResolvedProviderOptions } from './provider-options';

type InvalidTargetFactory = (detail: string) => Error;

/** The store key of one client assertion's or DPoP proof's `jti`, scoped to its issuer (the client), one hash tag each. */
function replayKey(issuer: string, jti: string): string {
  return `op:replay:{${sha256(`${issuer} ${jti}`, 'base64url')}}`;
}

/**
 * Makes oidc-provider's single-use checks (client assertion `jti`, DPoP proof `jti` at the token and PAR endpoints)
 * one atomic SET NX in the kit store: its own check reads and then writes, so two parallel requests with one
 * assertion could both pass. The record expires when the assertion or proof could no longer be accepted.
 *
 * @example
 * useAtomicReplayDetection(provider, store);
 */
export function useAtomicReplayDetection(provider: Provider, store: KeyValueStore): void {
  const detection = provider.ReplayDetection as unknown as { unique: (iss: string, jti: string, exp: number) => Promise<boolean> };
  detection.unique = async (iss: string, jti: string, exp: number): Promise<boolean> => {
    const ttl = Math.max(1, Math.ceil(exp - Date.now() / 1000));
    return store.setIfAbsent(replayKey(String(iss), String(jti)), '1', ttl);
  };
}

/** The resource a client gets by default: the one resource whose scopes it holds, when there is exactly one. */
function defaultResourceOf(settings: ResolvedProviderOptions, clientId: string): string | undefined {
  const client = settings.clients.find((candidate) => candidate.clientId === clientId);
  if (!client) return undefined;
  const allowed = new Set(allowedScopesOf(client));
  const mine = settings.resources.filter((resource) => resource.scopes.some((scope) => allowed.has(scope)));
  return mine.length === 1 ? mine[0]!.indicator : undefined;
}

/**
 * The scopes of `resource` that `clientId` may hold (its `scopes` allowlist), space-separated; undefined when the
 * resource is not registered.
 */
export function resourceScopesFor(settings: ResolvedProviderOptions, resource: ProviderResource, clientId: string): string {
  const client = settings.clients.find((candidate) => candidate.clientId === clientId);
  const allowed = new Set(client ? allowedScopesOf(client) : []);
  return resource.scopes.filter((scope) => allowed.has(scope)).join(' ');
}

/**
 * oidc-provider's features for the Level 3 profile: DPoP (RFC 9449) on, with its proofs' algorithms the kit's
 * allowlist; pushed authorization requests (RFC 9126), required for all clients or per client; resource indicators
 * (RFC 8707) for the registered `resources`, whose access tokens are JWTs (RFC 9068) signed with the kit's key; and
 * with `profile: 'fapi2'` oidc-provider's own FAPI 2.0 checks as well.
 *
 * @example
 * const features = { ...levelThreeFeatures(settings, (detail) => new oidc.errors.InvalidTarget(detail)) };
 */
export function levelThreeFeatures(settings: ResolvedProviderOptions, invalidTarget: InvalidTargetFactory): Record<string, unknown> {
  const { resources, lifetimes } = settings;
  const signingAlg = settings.keys.signingKey.alg;
  return {
    dPoP: { enabled: true, allowReplay: false },
    pushedAuthorizationRequests: {
      enabled: true,
      requirePushedAuthorizationRequests: settings.requirePushedAuthorizationRequests,
      allowUnregisteredRedirectUris: false,
    },
    ...(settings.profile === 'fapi2' ? { fapi: { enabled: true, profile: '2.0' } } : {}),
    resourceIndicators: {
      enabled: true,
      defaultResource: async (_ctx: KoaContextWithOIDC, client: { clientId: string }, oneOf?: string | string[]) =>
        oneOf ?? defaultResourceOf(settings, client.clientId),
      // A refresh or code exchange without `resource` keeps the audience the grant was given for.
      useGrantedResource: async () => true,
      getResourceServerInfo: async (_ctx: KoaContextWithOIDC, indicator: string, client: { clientId: string }) => {
        const resource = resources.find((candidate) => candidate.indicator === indicator);
        if (!resource) throw invalidTarget('the resource is not registered at this provider');
        const scope = resourceScopesFor(settings, resource, client.clientId);
        if (scope === '') throw invalidTarget('this client may not obtain tokens for the resource');
        return {
          scope,
          audience: resource.indicator,
          accessTokenTTL: resource.accessTokenLifetimeSeconds ?? lifetimes.accessToken,
          accessTokenFormat: 'jwt',
          jwt: { sign: { alg: signingAlg as never } },
        };
      },
    },
  };
}

/** The algorithms oidc-provider accepts for client assertions and DPoP proofs: asymmetric ones only. */
export function levelThreeAlgorithms(): Pick<
  NonNullable<Configuration['enabledJWA']>,
  'clientAuthSigningAlgValues' | 'dPoPSigningAlgValues'
> {
  return {
    clientAuthSigningAlgValues: [...CLIENT_ASSERTION_ALGORITHMS] as never,
    // The same proof algorithms requireBearer accepts, so a client's DPoP key works at the provider and at the APIs.
    dPoPSigningAlgValues: [...DEFAULT_DPOP_ALGORITHMS] as never,
  };
}
