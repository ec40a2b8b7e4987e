import type { AuthenticationMethod } from './types';

/**
 * One factor the user presented in this session: its RFC 8176 method reference (`pwd`, `otp`, `hwk`, `swk`, or
 * the kit's `qr`) and when, in epoch seconds.
 */
export interface AuthenticationFactor {
  readonly method: string;
  readonly at: number;
}

/**
 * How strongly the session's user is authenticated: the methods used (`amr`, RFC 8176 values), the level reached
 * (`acr`: `1fa`, `2fa`, or `phr` for phishing-resistant), the time of the most recent factor (`authTime`, epoch
 * seconds, as OpenID Connect's `auth_time`), and each factor with its own time.
 */
export interface Authentication {
  readonly acr: string;
  readonly amr: readonly string[];
  readonly authTime: number;
  readonly factors: readonly AuthenticationFactor[];
}

/** What a login may say about its authentication; the rest is derived from the login's `method`. */
export interface LoginAuthentication {
  /** RFC 8176 method references; default from the login method (`password` → `pwd`, `qr` → `qr`, ...). */
  amr?: readonly string[];
  /** The level reached; default `1fa`, `2fa` when two kinds of factor were used, `phr` for a hardware key alone. */
  acr?: string;
  /** Epoch seconds of the authentication; default now. */
  authTime?: number;
}

const METHOD_AMR: Record<string, string> = { password: 'pwd', qr: 'qr', basic: 'pwd', oidc: 'ext' };

/** The level a set of methods reaches when the login does not say. */
export function levelOf(amr: readonly string[]): string {
  const kinds = new Set(amr.filter((method) => method !== 'mfa'));
  if (kinds.has('hwk')) return 'phr';
  if (kinds.size >= 2 || amr.includes('mfa')) return '2fa';
  return '1fa';
}

/** The `amr` a login method stands for when the login gives none. */
export function amrOfMethod(method: AuthenticationMethod): string[] {
  return [METHOD_AMR[method] ?? method];
}

/**
 * The authentication record of a fresh login: what the login said, completed from its method and time.
 *
 * @example
 * loginAuthentication('password', undefined, 1_800_000_000); // { acr: '1fa', amr: ['pwd'], authTime: 1800000000, ... }
 */
export function loginAuthentication(
  method: AuthenticationMethod,
  given: LoginAuthentication | undefined,
  nowSeconds: number,
): Authentication {
  const amr = given?.amr && given.amr.length > 0 ? [...given.amr] : amrOfMethod(method);
  const authTime = given?.authTime ?? nowSeconds;
  return {
    acr: given?.acr ?? levelOf(amr),
    amr,
    authTime,
    factors: amr.map((entry) => ({ method: entry, at: authTime })),
  };
}

/**
 * The authentication of a session user, also for sessions stored before the kit recorded it (derived from the
 * user's `method` and `authenticatedAt`).
 */
export function authenticationOf(user: {
  method: AuthenticationMethod;
  authenticatedAt: number;
  authentication?: Authentication;
}): Authentication {
  return user.authentication ?? loginAuthentication(user.method, undefined, Math.floor(user.authenticatedAt / 1000));
}
