import type { JwtHeader, JwtPayload } from 'jsonwebtoken';

/**
 * What `requireBearer` puts on `req.auth` once a token is verified: the shape of express-oauth2-jwt-bearer's
 * `req.auth` (`payload`, `header`, `token`). `claims` is the same object as `payload`, kept while code written
 * for earlier versions moves to `payload`.
 */
export interface AuthInfo {
  /** The raw token, for forwarding to another API. */
  token: string;
  header: JwtHeader;
  /** The verified claims (frozen: the verified-token cache hands the same object to later requests). */
  payload: JwtPayload;
  /** @deprecated The same object as `payload`; read `payload`. */
  claims: JwtPayload;
}
