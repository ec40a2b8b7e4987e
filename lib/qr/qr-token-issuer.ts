import type { JwtPayload } from 'jsonwebtoken';
import type { TokenService } from '../tokens/token-service';
import type { QrTokenIssuer } from './provider-ports';

/**
 * Adapts the kit's `TokenService` (which must have a store, for refresh tokens and revocation) to what
 * `qrLoginProvider` needs. Checks that a revoked grant stays marked as long as the QR access tokens live.
 *
 * @example
 * const tokens = new TokenService({ keys, issuer: 'https://idp.example.test', store, accessTokenTtlSeconds: 7200 });
 * idp.use(qrLoginProvider({ store, apps, users, tokens: qrTokenIssuer(tokens) }));
 */
export function qrTokenIssuer(service: TokenService, options: { accessTokenLifetimeSeconds?: number } = {}): QrTokenIssuer {
  if (typeof service === 'function') throw new TypeError('qrTokenIssuer: pass a TokenService instance, not the class');
  if (!service || typeof service.issueAccessToken !== 'function') throw new TypeError('qrTokenIssuer: service must be a TokenService');
  const refreshTokens = service.refreshTokens;
  if (!refreshTokens) {
    throw new TypeError(
      'qrTokenIssuer: the TokenService needs a store (new TokenService({ keys, issuer, store })) for refresh tokens and revocation',
    );
  }
  const lifetime = options.accessTokenLifetimeSeconds ?? 7200;
  if (refreshTokens.accessTokenTtlSeconds < lifetime) {
    // revokeGrant keeps its mark for the service's access-token lifetime; shorter than ours, a revoked token would revive.
    throw new TypeError(
      `qrTokenIssuer: create the TokenService with accessTokenTtlSeconds of at least ${lifetime} (QR access tokens live that long), got ${refreshTokens.accessTokenTtlSeconds}`,
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
    async rotateRefreshToken(refreshToken, clientId) {
      const next = await refreshTokens.rotate(refreshToken, clientId);
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
