import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { BadRequestError, ForbiddenError, ServiceUnavailableError, UnauthorizedError } from '../http/errors';
import { identityId, sourceProblem } from '../session/identity';
import type { SessionUser } from '../session/types';
import { StoreUnavailableError } from '../store/port';
import type { BasicUser, BasicVerifier } from './basic-credentials';
import { parseBasicAuthorization } from './basic-header';

/** Options of {@link requireBasic}. */
export interface RequireBasicOptions {
  /** Checks the user-id and password; resolves to the user or null. May be async. Required. See `basicCredentials`. */
  verify: BasicVerifier<Request>;
  /** The protection space named in the challenge. Printable ASCII without `"` or `\`. Default `"Restricted"`. */
  realm?: string;
  /** The identity source of the verified users; their ids are `<source>|<user id>`. Default `basic:credentials`. */
  source?: string;
  /**
   * Accept credentials on plain-HTTP requests. Only for tests and local development: Basic sends the password in
   * clear. Default false, so a request that is not `req.secure` (mind `app.set('trust proxy', …)` behind a
   * TLS-terminating proxy) is refused with 403 `https_required`. Setting it logs a warning once.
   */
  allowInsecureHttp?: boolean;
}

const OPTION_KEYS = new Set(['verify', 'realm', 'source', 'allowInsecureHttp']);
const REALM = /^[\x20-\x7e]+$/;
// eslint-disable-next-line no-control-regex
const BAD_USER_ID = /[\u0000-\u001f\u007f]/;

function looksLikeRequest(value: unknown): boolean {
  return typeof value === 'object' && value !== null && 'headers' in value && 'method' in value;
}

function toSessionUser(user: BasicUser, source: string): SessionUser {
  if (typeof user !== 'object' || user === null || typeof user.id !== 'string' || user.id === '' || BAD_USER_ID.test(user.id)) {
    throw new TypeError('requireBasic: verify must resolve to null or a user { id, name?, roles? } with a non-empty string id');
  }
  const roles = Array.isArray(user.roles) ? user.roles.filter((role): role is string => typeof role === 'string') : [];
  return {
    id: identityId({ source, subject: user.id }),
    source,
    subject: user.id,
    name: typeof user.name === 'string' ? user.name : user.id,
    roles,
    method: 'basic',
    authenticatedAt: Date.now(),
    ...(user.attributes ? { attributes: { ...user.attributes } } : {}),
  };
}

/**
 * HTTP Basic authentication (RFC 7617) over HTTPS only. Missing or wrong credentials answer 401 with
 * `WWW-Authenticate: Basic realm="…", charset="UTF-8"`; undecodable ones 400; plain HTTP 403 `https_required`.
 * On success `req.user` is the verified user with method `basic`. There is no session: every request is checked.
 *
 * @example
 * app.use('/metrics', requireBasic({ realm: 'metrics', verify: basicCredentials({ prometheus: { passwordHash } }) }));
 */
export function requireBasic(options: RequireBasicOptions): RequestHandler {
  if (looksLikeRequest(options)) {
    throw new TypeError(
      'requireBasic: it was mounted as middleware itself; call it: app.use(requireBasic({ verify: basicCredentials({...}) }))',
    );
  }
  if (options === null || typeof options !== 'object') throw new TypeError('requireBasic: pass options with a verify function');
  for (const key of Object.keys(options)) {
    if (!OPTION_KEYS.has(key))
      throw new TypeError(`requireBasic: unknown option "${key}"; known options are ${[...OPTION_KEYS].join(', ')}`);
  }
  const { verify, realm = 'Restricted', source = 'basic:credentials', allowInsecureHttp = false } = options;
  const badSource = sourceProblem(source);
  if (badSource !== undefined) throw new TypeError(`requireBasic: source ${badSource}`);
  if (typeof verify !== 'function')
    throw new TypeError('requireBasic: verify is required: (username, password, req) => user | null, e.g. basicCredentials({...})');
  if (typeof realm !== 'string' || !REALM.test(realm) || /["\\]/.test(realm)) {
    throw new TypeError(
      `requireBasic: realm must be printable ASCII without quotes, backslashes or line breaks, got ${JSON.stringify(realm)}`,
    );
  }
  if (typeof allowInsecureHttp !== 'boolean') throw new TypeError('requireBasic: allowInsecureHttp must be true or false');
  if (allowInsecureHttp) {
    console.warn(
      `[express-sso-kit] requireBasic (realm "${realm}"): allowInsecureHttp is on; passwords may travel in clear. Use it only in tests and development.`,
    );
  }

  const challenge = { 'WWW-Authenticate': `Basic realm="${realm}", charset="UTF-8"` };
  const unauthorized = (code: string, detail: string) => new UnauthorizedError({ code, detail, headers: challenge });

  return async function requireBasicMiddleware(req: Request, _res: Response, next: NextFunction): Promise<void> {
    // Refused before the header is even read, and without a challenge, so browsers are not invited to send it again.
    if (!req.secure && !allowInsecureHttp) {
      next(new ForbiddenError({ code: 'https_required', detail: 'Basic authentication is accepted over HTTPS only.' }));
      return;
    }
    const parsed = parseBasicAuthorization(req.headers.authorization);
    if (parsed.kind === 'absent') {
      next(unauthorized('credentials_required', 'Basic credentials are required.'));
      return;
    }
    if (parsed.kind === 'malformed') {
      next(new BadRequestError({ code: 'invalid_basic_credentials', detail: parsed.reason }));
      return;
    }
    let user: BasicUser | null | undefined;
    try {
      user = await verify(parsed.username, parsed.password, req);
    } catch (error) {
      // An outage fails closed as 503 even under Express's default handler, never as "wrong password".
      next(
        error instanceof StoreUnavailableError
          ? new ServiceUnavailableError({
              code: 'store_unavailable',
              detail: 'Credentials cannot be checked right now. Try again shortly.',
              cause: error,
            })
          : error,
      );
      return;
    }
    if (!user) {
      next(unauthorized('invalid_credentials', 'The user name or password is wrong.'));
      return;
    }
    try {
      req.user = toSessionUser(user, source);
    } catch (error) {
      next(error);
      return;
    }
    next();
  };
}
