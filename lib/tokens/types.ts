/**
 * The verified claims of a JWT. The members are those of express-oauth2-jwt-bearer's (and jose's) `JWTPayload`,
 * declared here so the kit's published types need no `@types/*` package, and so both libraries' `req.auth` merge
 * into one declaration in an app that uses both.
 */
export interface JwtPayload {
  iss?: string;
  sub?: string;
  aud?: string | string[];
  jti?: string;
  nbf?: number;
  exp?: number;
  iat?: number;
  [propName: string]: unknown;
}

/** The protected header of a verified JWT; the members of express-oauth2-jwt-bearer's (and jose's) JWS header. */
export interface JwtHeader {
  kid?: string;
  x5t?: string;
  x5c?: string[];
  x5u?: string;
  jku?: string;
  jwk?: { kty?: string; crv?: string; x?: string; y?: string; e?: string; n?: string };
  typ?: string;
  cty?: string;
  alg?: string;
  b64?: boolean;
  crit?: string[];
  [propName: string]: unknown;
}

/**
 * What `requireBearer` puts on `req.auth` once a token is verified. The type is member for member
 * express-oauth2-jwt-bearer's `req.auth` (`payload`, `header`, `token`): TypeScript merges two declarations of one
 * property only when their types are identical, and apps often use both libraries.
 */
export interface AuthInfo {
  header: JwtHeader;
  /** The verified claims (frozen: the verified-token cache hands the same object to later requests). */
  payload: JwtPayload;
  /** The raw token, for forwarding to another API. */
  token: string;
}
