import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { EVENTS_OPTION, eventsFor, eventsOption } from '../events/event-source';
import type { SecurityEvents } from '../events/security-events';
import { signInAttempt } from '../events/sign-in-attempt';
import { BadRequestError, ForbiddenError, ServiceUnavailableError, UnauthorizedError } from '../http/errors';
import { checkRequestOrigin, compileAllowedOrigins, csrfError, isSafeMethod, originFactsOf } from '../session/csrf-guard';
import { identityId, sourceProblem } from '../session/identity';
import { refuseRenamedOptions } from '../session/renamed-options';
import type { SessionUser } from '../session/types';
import { StoreUnavailableError } from '../store/port';
import { debugChannel } from '../util/debug';
import { checkOptions, refuseInProduction } from '../util/options';
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
   * TLS-terminating proxy) is refused with 403 `https_required`. Refused when `NODE_ENV=production`; warns once.
   */
  allowInsecureLocalDevelopment?: boolean;
  /**
   * Exact origins besides the request's own whose pages may send state-changing requests carrying Basic
   * credentials. Browsers attach remembered Basic credentials to every request to the site, like a cookie, so a
   * browser's request from another origin is refused (403 `csrf_origin`). Default none.
   */
  allowedOrigins?: readonly string[];
  /**
   * Where each check is recorded (`signin.succeeded`/`signin.failed` with method `basic`, `csrf.refused`). Default
   * the events of `ssoSession` when it runs before; none otherwise. A request without credentials (a browser's
   * first, which the challenge answers) is no attempt and is not recorded.
   */
  events?: SecurityEvents;
}

const REALM = /^[\x20-\x7e]+$/;
// eslint-disable-next-line no-control-regex
const BAD_USER_ID = /[\u0000-\u001f\u007f]/;
const debug = debugChannel('basic');
let insecureWarningShown = false;

/**
 * A browser marks its requests with `Origin`, `Referer` or Fetch Metadata (`Sec-Fetch-*`); curl and servers send
 * none of them. Only a browser attaches remembered Basic credentials on its own, so only a browser can be made to
 * send them by another page.
 */
function isBrowserRequest(req: Request): boolean {
  const headers = req.headers;
  return (
    headers.origin !== undefined ||
    headers.referer !== undefined ||
    headers['sec-fetch-site'] !== undefined ||
    headers['sec-fetch-mode'] !== undefined ||
    headers['sec-fetch-dest'] !== undefined ||
    headers['sec-fetch-user'] !== undefined
  );
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
 * A browser's state-changing request (anything but GET, HEAD, OPTIONS) from another origin, or one the browser
 * calls cross-site, is refused with 403 `csrf_origin`: browsers resend remembered Basic credentials on their own.
 * Clients that send no `Origin`, `Referer` or `Sec-Fetch-*` (curl, servers) are not browsers and pass.
 * On success `req.user` is the verified user with method `basic`. There is no session: every request is checked.
 *
 * @example
 * app.use('/metrics', requireBasic({ realm: 'metrics', verify: basicCredentials({ prometheus: { passwordHash } }) }));
 */
export function requireBasic(options: RequireBasicOptions): RequestHandler {
  refuseRenamedOptions('requireBasic', options, { allowInsecureHttp: 'renamed to allowInsecureLocalDevelopment' });
  checkOptions('requireBasic', options as unknown, {
    verify: {
      type: 'function',
      required: true,
      expected: 'a function (username, password, req) => user | null, e.g. basicCredentials({...})',
    },
    realm: {
      type: 'string',
      check: (value: string) =>
        REALM.test(value) && !/["\\]/.test(value)
          ? undefined
          : `must be printable ASCII without quotes, backslashes or line breaks, got ${JSON.stringify(value)}`,
    },
    source: { type: 'string', check: (value: string) => sourceProblem(value) },
    allowInsecureLocalDevelopment: { type: 'boolean' },
    allowedOrigins: { type: 'string[]', expected: 'an array of origins like "https://admin.example.test"' },
    events: EVENTS_OPTION,
  });
  const ownEvents = eventsOption('requireBasic', options.events);
  const { verify, realm = 'Restricted', source = 'basic:credentials', allowInsecureLocalDevelopment = false } = options;
  if (allowInsecureLocalDevelopment) {
    refuseInProduction('requireBasic');
    if (!insecureWarningShown) {
      insecureWarningShown = true;
      console.warn(
        `[express-sso-kit] requireBasic (realm "${realm}"): allowInsecureLocalDevelopment is on; passwords may travel in clear. Use it only in tests and development.`,
      );
    }
  }
  const allowedOrigins = compileAllowedOrigins(options.allowedOrigins, 'requireBasic', { allowHttp: allowInsecureLocalDevelopment });

  const challenge = { 'WWW-Authenticate': `Basic realm="${realm}", charset="UTF-8"` };
  const unauthorized = (code: string, detail: string) => new UnauthorizedError({ code, detail, headers: challenge });

  return async function requireBasicMiddleware(req: Request, _res: Response, next: NextFunction): Promise<void> {
    // Refused before the header is even read, and without a challenge, so browsers are not invited to send it again.
    if (!req.secure && !allowInsecureLocalDevelopment) {
      debug('refused %s: Basic credentials over plain http', req.method);
      next(new ForbiddenError({ code: 'https_required', detail: 'Basic authentication is accepted over HTTPS only.' }));
      return;
    }
    // Remembered credentials ride along like a cookie: a browser's state-changing request must come from an
    // allowed origin (the same rule as the session cookie's). Checked before the credentials are even read.
    if (!isSafeMethod(req.method) && isBrowserRequest(req)) {
      const refusal = checkRequestOrigin(originFactsOf(req), allowedOrigins);
      if (refusal !== undefined) {
        next(csrfError(refusal, req, 'requireBasic', ownEvents));
        return;
      }
    }
    const parsed = parseBasicAuthorization(req.headers.authorization);
    if (parsed.kind === 'absent') {
      next(unauthorized('credentials_required', 'Basic credentials are required.'));
      return;
    }
    const attempt = signInAttempt(req, eventsFor(req, ownEvents), 'basic', { provider: source });
    if (parsed.kind === 'malformed') {
      attempt.failed('invalid_request');
      next(new BadRequestError({ code: 'invalid_basic_credentials', detail: parsed.reason }));
      return;
    }
    let user: BasicUser | null | undefined;
    try {
      user = await verify(parsed.username, parsed.password, req);
    } catch (error) {
      attempt.failed(undefined);
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
      debug('refused %s: the user name or password is wrong', req.method);
      attempt.failed('bad_credentials', { username: parsed.username });
      next(unauthorized('invalid_credentials', 'The user name or password is wrong.'));
      return;
    }
    try {
      req.user = toSessionUser(user, source);
    } catch (error) {
      next(error);
      return;
    }
    attempt.succeeded({ username: parsed.username });
    next();
  };
}
