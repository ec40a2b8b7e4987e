import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { BadRequestError } from '../http/errors';
import { checkOptions, within, type OptionSchema } from '../util/options';
import { assertProvider, type OidcProvider } from './provider';
import { addTransaction, codeChallenge, newTransaction } from './transaction';
import { requireSessionSupport, redirectPolicyOf, saveSession } from './session-bridge';
import type { RedirectPolicy } from '../session/types';

/** Query parameters a caller of the login route may pass through to the provider, each vetted. */
export type LoginQueryParameter = 'prompt' | 'max_age' | 'login_hint' | 'acr_values';

/** Options of {@link oidcLogin}. */
export interface OidcLoginOptions {
  /** Sent as `prompt` on every login, e.g. `login` to force re-authentication. Default: none. */
  prompt?: 'none' | 'login' | 'consent' | 'select_account';
  /** Sent as `max_age`: the login must be at most this many seconds old (checked on `auth_time`). Default: none. */
  maxAgeSeconds?: number;
  /** Sent as `login_hint` on every login. Default: none. */
  loginHint?: string;
  /**
   * Sent as `acr_values` (OIDC Core §3.1.2.1): the levels the provider should authenticate at, preferred first,
   * e.g. `['2fa']`. The callback then refuses an ID token whose `acr` is none of them. Default: none.
   */
  acrValues?: readonly string[];
  /**
   * Which query parameters of the login route are passed on (each validated; a bad value answers 400). They
   * override the fixed options above. Default `['prompt', 'max_age', 'login_hint', 'acr_values']` (each can only make the login stricter).
   */
  queryParameters?: readonly LoginQueryParameter[];
  /** The redirect policy for `return_to`. Default: the one `ssoSession` installs (`req.sso.redirects`). */
  redirects?: RedirectPolicy;
}

const PROMPTS = new Set(['none', 'login', 'consent', 'select_account']);
const QUERY_PARAMETERS = new Set<LoginQueryParameter>(['prompt', 'max_age', 'login_hint', 'acr_values']);
// An acr value as providers spell them: levels (`2fa`), URNs and URIs, no spaces (acr_values is space-separated).
const ACR_VALUE = /^[\x21-\x7e]{1,128}$/;
// A day is far beyond any sensible freshness requirement; larger values are typos.
const MAX_AGE_LIMIT = 86400;
const HINT = /^[\x21-\x7e]{1,254}$/;

function isMaxAge(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= MAX_AGE_LIMIT;
}

const LOGIN_OPTIONS: OptionSchema = {
  prompt: {
    type: 'string',
    check: (value: string) => (PROMPTS.has(value) ? undefined : `must be one of ${[...PROMPTS].join(', ')}, got "${value}"`),
  },
  maxAgeSeconds: {
    type: 'integer',
    expected: `a whole number of seconds from 0 to ${MAX_AGE_LIMIT}`,
    check: within(0, MAX_AGE_LIMIT),
    aliases: ['maxAge'],
  },
  loginHint: {
    type: 'string',
    check: (value: string) => (HINT.test(value) ? undefined : 'must be 1–254 printable characters without spaces'),
  },
  acrValues: {
    type: 'string[]',
    expected: "an array of acr values such as ['2fa']",
    check: (value: string[]) =>
      value.length > 0 && value.length <= 8 && value.every((acr) => ACR_VALUE.test(acr))
        ? undefined
        : 'must list 1–8 acr values of printable characters without spaces',
  },
  queryParameters: {
    type: 'string[]',
    expected: `an array of some of ${[...QUERY_PARAMETERS].join(', ')}`,
    check: (value: string[]) =>
      value.every((name) => QUERY_PARAMETERS.has(name as LoginQueryParameter))
        ? undefined
        : `must list some of ${[...QUERY_PARAMETERS].join(', ')}, got ${JSON.stringify(value)}`,
  },
  redirects: {
    type: 'object',
    expected: 'a redirect policy from createRedirectPolicy()',
    check: (value: { sanitize?: unknown }) =>
      typeof value.sanitize === 'function' ? undefined : 'must be a redirect policy from createRedirectPolicy()',
  },
};

function queryValue(req: Request, name: string): string | undefined {
  const value = req.query[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw new BadRequestError({ code: 'invalid_request', detail: `The ${name} parameter must appear once.` });
  return value;
}

/** Reads the vetted pass-through parameters; a malformed one is a 400, never silently dropped. */
function loginParameters(req: Request, options: OidcLoginOptions, allowed: ReadonlySet<string>) {
  let prompt = options.prompt;
  let maxAge = options.maxAgeSeconds;
  let loginHint = options.loginHint;
  let acrValues = options.acrValues;
  const queryPrompt = allowed.has('prompt') ? queryValue(req, 'prompt') : undefined;
  if (queryPrompt !== undefined) {
    if (!PROMPTS.has(queryPrompt))
      throw new BadRequestError({ code: 'invalid_request', detail: `prompt must be one of ${[...PROMPTS].join(', ')}.` });
    prompt = queryPrompt as OidcLoginOptions['prompt'];
  }
  const queryMaxAge = allowed.has('max_age') ? queryValue(req, 'max_age') : undefined;
  if (queryMaxAge !== undefined) {
    const parsed = /^\d{1,6}$/.test(queryMaxAge) ? Number(queryMaxAge) : NaN;
    if (!isMaxAge(parsed))
      throw new BadRequestError({ code: 'invalid_request', detail: `max_age must be whole seconds from 0 to ${MAX_AGE_LIMIT}.` });
    maxAge = parsed;
  }
  const queryHint = allowed.has('login_hint') ? queryValue(req, 'login_hint') : undefined;
  if (queryHint !== undefined) {
    if (!HINT.test(queryHint))
      throw new BadRequestError({ code: 'invalid_request', detail: 'login_hint must be 1–254 printable characters.' });
    loginHint = queryHint;
  }
  const queryAcr = allowed.has('acr_values') ? queryValue(req, 'acr_values') : undefined;
  if (queryAcr !== undefined) {
    const values = queryAcr.split(' ').filter(Boolean);
    if (values.length === 0 || values.length > 8 || !values.every((acr) => ACR_VALUE.test(acr)))
      throw new BadRequestError({ code: 'invalid_request', detail: 'acr_values must be 1–8 space-separated values.' });
    acrValues = values;
  }
  return { prompt, maxAge, loginHint, acrValues };
}

/**
 * The login middleware under a factory name of the caller's (`oidcLogin`, or `oidc` for the router; its option
 * errors name `optionsLabel`, e.g. `oidc: login`).
 *
 * @example
 * router.get('/login/corp', createLogin('oidc', corp, { prompt: 'login' }, 'oidc: login'));
 */
export function createLogin(who: string, provider: OidcProvider, options: OidcLoginOptions = {}, optionsLabel = who): RequestHandler {
  assertProvider(who, provider);
  checkOptions(optionsLabel, options as unknown, LOGIN_OPTIONS);
  const settings: OidcLoginOptions = { ...options };
  const allowed = new Set<string>(options.queryParameters ?? ['prompt', 'max_age', 'login_hint', 'acr_values']);

  return async function oidcLoginMiddleware(req: Request, res: Response, next: NextFunction) {
    try {
      requireSessionSupport(req, who);
      const { prompt, maxAge, loginHint, acrValues } = loginParameters(req, settings, allowed);
      const redirects = redirectPolicyOf(req, settings.redirects, who);
      const returnTo = redirects.sanitize(req.query.return_to);
      const metadata = await provider.metadata();

      const transaction = newTransaction({
        provider: provider.name,
        returnTo,
        ...(maxAge === undefined ? {} : { maxAge }),
        ...(acrValues === undefined ? {} : { acrValues }),
      });
      req.session.oidcTransactions = addTransaction(req.session.oidcTransactions, transaction);
      // Saved before the browser leaves, so the callback finds the transaction even if it races this response.
      await saveSession(req);

      const url = new URL(metadata.authorizationEndpoint);
      const params = url.searchParams;
      params.set('response_type', 'code');
      params.set('client_id', provider.clientId);
      params.set('redirect_uri', provider.redirectUri);
      params.set('scope', provider.scope);
      params.set('state', transaction.state);
      params.set('nonce', transaction.nonce);
      params.set('code_challenge', codeChallenge(transaction.codeVerifier));
      params.set('code_challenge_method', 'S256');
      if (prompt !== undefined) params.set('prompt', prompt);
      if (maxAge !== undefined) params.set('max_age', String(maxAge));
      if (loginHint !== undefined) params.set('login_hint', loginHint);
      if (acrValues !== undefined) params.set('acr_values', acrValues.join(' '));

      res.setHeader('Cache-Control', 'no-store');
      res.redirect(302, url.href);
    } catch (error) {
      next(error);
    }
  };
}

/**
 * Starts an OpenID Connect login: stores a single-use transaction (state, nonce, PKCE verifier, the sanitized
 * `return_to`) in the browser's session and redirects (302) to the provider's authorization endpoint. Needs
 * `ssoSession()` mounted before it.
 *
 * @example
 * app.get('/login/corp', oidcLogin(corp));
 * // GET /login/corp?return_to=https://shop.example.test/cart → 302 to the provider
 */
export function oidcLogin(provider: OidcProvider, options: OidcLoginOptions = {}): RequestHandler {
  return createLogin('oidcLogin', provider, options);
}
