/**
 * The Bearer tokens the api accepts, from two issuers: the auth site's own HS256 tokens (the demo's `api-tokens`
 * key, audience the api's origin), and the portal OpenID Provider's JWT access tokens for the Notes API (ES256,
 * `typ: at+jwt`, checked against the provider's published keys, audience the Notes API's resource indicator), which
 * is how a partner app's token reaches the Notes API. Each token goes to the one verifier its algorithm belongs to;
 * that verifier checks everything (signature, issuer, audience, type, lifetime), so the choice lets nothing through.
 */
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { JwksCache, requireBearer } from 'express-sso-kit';
import { notesResource, origin, secretFor, type DemoConfig } from '../common/config';

/**
 * What the api accepts as its own Bearer tokens: HS256 JWTs signed with the demo's `api-tokens` key, issued by the
 * auth site for this api. Tests and scripts mint them with that key.
 *
 * @example
 * const { key, issuer, audience } = apiTokenSettings(config);
 */
export function apiTokenSettings(config: DemoConfig): { key: string; issuer: string; audience: string } {
  return { key: secretFor(config, 'api-tokens'), issuer: origin(config, 'auth'), audience: origin(config, 'api') };
}

// The `alg` of a compact JWS's protected header, or undefined when the value is no such token.
function algorithmOf(req: Request): string | undefined {
  const match = /^Bearer ([A-Za-z0-9_-]+)\./.exec(req.get('authorization') ?? '');
  if (!match) return undefined;
  try {
    const header: unknown = JSON.parse(Buffer.from(match[1]!, 'base64url').toString('utf8'));
    return header && typeof header === 'object' && typeof (header as { alg?: unknown }).alg === 'string'
      ? (header as { alg: string }).alg
      : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The api's Bearer check: the auth site's HS256 tokens, or the portal provider's access tokens for the Notes API.
 *
 * @example
 * requireAuth({ bearer: apiBearer(config), session: requireSession() });
 */
export function apiBearer(config: DemoConfig): RequestHandler {
  const own = apiTokenSettings(config);
  const portal = origin(config, 'auth');
  const ownTokens = requireBearer({ secret: own.key, algorithms: ['HS256'], issuer: own.issuer, audience: own.audience });
  const providerTokens = requireBearer({
    // The provider's published keys, fetched through the front door (plain http only when the demo runs without TLS).
    keys: new JwksCache({ uri: `${portal}/oidc/jwks`, ...(config.secure ? {} : { allowInsecureLocalDevelopment: true }) }),
    algorithms: ['ES256'],
    issuer: portal,
    audience: notesResource(config).indicator,
  });
  return function apiBearerToken(req: Request, res: Response, next: NextFunction) {
    // Anything but HS256 (no token, a malformed one, another algorithm) gets the provider's strict check and its 401.
    if (algorithmOf(req) === 'HS256') ownTokens(req, res, next);
    else providerTokens(req, res, next);
  };
}
