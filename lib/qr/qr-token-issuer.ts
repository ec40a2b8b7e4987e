import type { JwtPayload } from '../tokens/types';
import type { TokenService } from '../tokens/token-service';
import { checkOptions, OptionsError } from '../util/options';
import type { QrTokenIssuer } from './provider-ports';

/** Options of {@link qrTokenIssuer}. */
export interface QrTokenIssuerOptions {
  /** The provider's `accessTokenLifetimeSeconds`: revocation marks must live at least this long. Default 7200. */
  accessTokenLifetimeSeconds?: number;
}

/**
 * Adapts the kit's `TokenService` (which must have a store, for refresh tokens and revocation) to what
 * `qrLoginProvider` needs. Checks that a revoked grant stays marked as long as the QR access tokens live.
 *
 * @example
 * const tokens = new TokenService({ keys, issuer: 'https://idp.example.test', store, accessTokenLifetimeSeconds: 7200 });
 * idp.use(qrLoginProvider({ store, apps, users, tokens: qrTokenIssuer(tokens) }));
 */
export function qrTokenIssuer(service: TokenService, options: QrTokenIssuerOptions = {}): QrTokenIssuer {
  if (typeof service === 'function') throw new OptionsError('qrTokenIssuer: pass a TokenService instance, not the class');
  if (!service || typeof service.issueAccessToken !== 'function') throw new OptionsError('qrTokenIssuer: service must be a TokenService');
  checkOptions('qrTokenIssuer', options, {
    accessTokenLifetimeSeconds: {
      type: 'integer',
      expected: "the provider's accessTokenLifetimeSeconds (default 7200)",
      check: (value: number) => (value < 1 ? `must be a positive whole number of seconds, got ${value}` : undefined),
    },
  });
  const refreshTokens = service.refreshTokens;
  if (!refreshTokens) {
    throw new OptionsError(
      'qrTokenIssuer: the TokenService needs a store (new TokenService({ keys, issuer, store })) for refresh tokens and revocation',
    );
  }
  const lifetime = (options as QrTokenIssuerOptions).accessTokenLifetimeSeconds ?? 7200;
  if (refreshTokens.accessTokenLifetimeSeconds < lifetime) {
    // A grant's revocation mark lives as long as the longest access token; shorter than ours, a revoked token would revive.
    throw new OptionsError(
      `qrTokenIssuer: the TokenService keeps revocation marks for ${refreshTokens.accessTokenLifetimeSeconds} s, shorter than the ${lifetime} s QR access tokens live`,
    );
  }
  return {
    async issueAccessToken(request) {
      return service.issueAccessToken(request).token;
    },
    async verifyAccessToken(token, audience): Promise<JwtPayload> {
      return (await service.verifyAccessToken(token, { audience })).claims;
    },
    async issueRefreshToken(request) {
      return (await refreshTokens.issue(request)).token;
    },
    async rotateRefreshToken(refreshToken, clientId, req) {
      const next = await refreshTokens.rotate(refreshToken, clientId, {}, req);
      const { record } = next;
      if (!record.grantId) throw new TypeError('qrTokenIssuer: the refresh token belongs to no grant');
      return {
        refreshToken: next.token,
        subject: record.subject,
        clientId: record.clientId,
        grantId: record.grantId,
        scope: record.scope ?? 'snsapi_login',
      };
    },
    revokeGrant: (grantId) => service.revokeGrant(grantId),
    isRevoked: (claims) => service.isRevoked(claims),
  };
}
