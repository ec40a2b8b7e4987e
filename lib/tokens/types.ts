import type { JwtHeader, JwtPayload } from 'jsonwebtoken';

/** What `requireBearer` puts on `req.auth` once a token is verified. */
export interface AuthInfo {
  /** The raw token, for forwarding to another API. */
  token: string;
  header: JwtHeader;
  claims: JwtPayload;
}
