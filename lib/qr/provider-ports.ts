import type { Request } from 'express';
import type { JwtPayload } from '../tokens/types';

/** A user as the QR-login provider reads it for `/sns/userinfo`. The portal's `DirectoryUser` fits. */
export interface QrDirectoryUser {
  id: string;
  /** Used as `nickname` when `nickname` is absent. */
  name?: string;
  nickname?: string;
  /** WeChat's convention: 1 male, 2 female, 0 unknown. */
  sex?: number;
  city?: string;
  province?: string;
  country?: string;
  headimgurl?: string;
  /** Profile fields may also come from here (`sex`, `city`, `province`, `country`, `headimgurl`). */
  attributes?: Record<string, string | number | boolean | null>;
}

/** Where the provider looks users up. */
export interface QrUserDirectory {
  /**
   * The identity source of these users (`directory:<name>`). Only a signed-in user of this source may scan and
   * confirm; a user who signed in through another source (a partner IdP) is someone else, whatever their subject.
   * Default `directory:local`, the portal directory's default.
   */
  readonly source?: string;
  findById(id: string): Promise<QrDirectoryUser | null>;
}

/** What the provider asks of the token service when it issues access tokens. */
export interface QrAccessTokenRequest {
  subject: string;
  audience: string;
  scope: string;
  roles: string[];
  clientId: string;
  grantId: string;
  expiresInSeconds: number;
}

/** A refresh token after rotation: the new token and what the grant stands for. */
export interface QrRotatedRefreshToken {
  refreshToken: string;
  subject: string;
  clientId: string;
  grantId: string;
  scope: string;
}

/**
 * The token operations the QR-login provider needs, a narrow port over the kit's token service (`lib/tokens`).
 * Access tokens are JWTs signed by the token service, so any API can check them with `requireBearer`; refresh
 * tokens rotate; revoking a grant revokes every token issued under it, including ones issued after the revocation.
 */
export interface QrTokenIssuer {
  issueAccessToken(request: QrAccessTokenRequest): Promise<string>;
  /**
   * Verifies an access token's signature (algorithm allowlist), expiry, issuer and audience, and that its grant was
   * not revoked; rejects with a `TokenError` (`reason` says why, `expired` for an expired one).
   */
  verifyAccessToken(token: string, audience: string): Promise<JwtPayload>;
  issueRefreshToken(request: { subject: string; clientId: string; grantId: string; scope: string }): Promise<string>;
  /**
   * Rotates a refresh token of `clientId`; rejects when it is unknown, spent, expired, revoked or another client's.
   * `req` is the request presenting it, for the security event of a detected reuse.
   */
  rotateRefreshToken(refreshToken: string, clientId: string, req?: Request): Promise<QrRotatedRefreshToken>;
  revokeGrant(grantId: string): Promise<void>;
  isRevoked(claims: JwtPayload): Promise<boolean>;
}
