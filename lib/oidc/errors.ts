import { BadGatewayError, BadRequestError, HttpError, ServiceUnavailableError } from '../http/errors';

/**
 * The identity provider did not answer (timeout, connection refused, DNS): 503 with Retry-After. The login fails
 * closed; nothing is stored.
 *
 * @example
 * throw providerUnavailable('corp', 'token endpoint timed out', error);
 */
export function providerUnavailable(provider: string, what: string, cause?: unknown): ServiceUnavailableError {
  return new ServiceUnavailableError({
    code: 'idp_unavailable',
    detail: `The identity provider "${provider}" did not answer (${what}). Try again shortly.`,
    cause,
  });
}

/**
 * The identity provider answered, but wrongly (non-2xx, not JSON, missing fields): 502.
 *
 * @example
 * throw providerMisbehaved('corp', 'token endpoint answered 500');
 */
export function providerMisbehaved(provider: string, what: string, cause?: unknown): BadGatewayError {
  return new BadGatewayError({
    code: 'idp_bad_response',
    detail: `The identity provider "${provider}" sent an unusable answer (${what}).`,
    cause,
  });
}

/**
 * The login cannot complete because of what the browser brought back (bad state, bad token, replay): 400, with
 * `loginUrl` in the problem so the page can offer to start again.
 *
 * @example
 * throw loginRejected('invalid_state', 'This login response was already used.', '/login/corp');
 */
export function loginRejected(code: string, detail: string, loginUrl?: string, cause?: unknown): BadRequestError {
  return new BadRequestError({
    code,
    detail: loginUrl ? `${detail} Start again at ${loginUrl}.` : detail,
    ...(loginUrl ? { extensions: { loginUrl } } : {}),
    cause,
  });
}

/**
 * The app is wired in a way the OIDC middlewares cannot work with (no `ssoSession` before them, a Secure cookie on
 * what Express sees as plain http, a post-logout URI the redirect policy refuses, a claims mapping returning the
 * wrong shape): 500 `oidc_misconfigured`. The detail is for the server log; the client sees a generic page.
 *
 * @example
 * throw misconfigured('oidcLogin: req.session is missing; mount ssoSession() before oidcLogin');
 */
export function misconfigured(detail: string, cause?: unknown): HttpError {
  return new HttpError(500, { code: 'oidc_misconfigured', detail, cause });
}
