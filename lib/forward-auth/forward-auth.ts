import { BlockList, isIP } from 'node:net';
import { Router, type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { compileAccessPolicy, decideAccess, type AccessDecision, type CompiledAccessPolicy } from '../access/access-decision';
import { compileRules, defaultRule, type AccessPolicyLevel, type AccessRule } from '../access/access-rules';
import type { SecurityEvents } from '../events/security-events';
import { EVENTS_OPTION, eventsOption } from '../events/event-source';
import { BadRequestError, ForbiddenError, HttpError, UnauthorizedError } from '../http/errors';
import { redactPath } from '../http/log-redaction';
import type { Policy } from '../rbac/policy';
import { authenticationOf } from '../session/authentication';
import { checkRequestOrigin, compileAllowedOrigins, csrfError } from '../session/csrf-guard';
import { sessionReaderOf } from '../session/session-reader';
import { InsufficientAuthenticationError, meetsRequirement, type AuthenticationRequirement } from '../session/step-up';
import type { SessionUser } from '../session/types';
import type { TokenService } from '../tokens/token-service';
import { requireBearer } from '../tokens/require-bearer';
import type { RequireBearerOptions } from '../tokens/require-bearer-options';
import { tokenMeets } from '../tokens/token-authentication';
import { debugChannel } from '../util/debug';
import { checkOptions, OptionsError, within, type OptionSchema } from '../util/options';
import { DecisionCache } from './decision-cache';
import { DEFAULT_IDENTITY_HEADERS, identityHeaders, type ForwardedIdentity, type IdentityHeaderNames } from './identity-headers';
import { originalRequest, withoutSegmentParameters, type ForwardAuthDialect, type OriginalRequest } from './original-request';

/** The signed identity assertion of {@link ForwardAuthOptions}. */
export interface ForwardAuthAssertionOptions {
  /** The token service that signs it (an access token, `typ` `at+jwt`, verifiable with its JWKS). */
  tokens: TokenService;
  /** The header it is sent in. Default `Remote-Assertion`. */
  header?: string;
  /** Its audience for an original request. Default the original origin (`https://docs.example.test`). */
  audience?: (original: OriginalRequest) => string;
  /** Its lifetime. Default 60 seconds. */
  expiresInSeconds?: number;
}

/** Options of {@link forwardAuth}. */
export interface ForwardAuthOptions {
  /** The `ssoSession(...)` middleware whose sessions are checked (its cookie, secrets, store, login page). */
  session: RequestHandler;
  /**
   * The addresses (or CIDR ranges) of the reverse proxies, e.g. `['127.0.0.1', '10.0.0.0/8']`. A sub-request from
   * any other address is refused (403 `untrusted_proxy`): only a proxy may say what the original request was.
   */
  trustedProxies: readonly string[];
  /** The access rules, as `accessPolicy`'s: first match wins, matched against the original host, path and method. */
  rules: readonly AccessRule[];
  /** What applies when no rule matches. Default `deny`. */
  defaultPolicy?: AccessPolicyLevel;
  /** The policy `permission` rules are checked against. */
  policy?: Policy;
  /** The portal's step-up page. Default `step-up` next to the login page. */
  stepUpUrl?: string;
  /** The names of the identity headers. */
  headers?: IdentityHeaderNames;
  /** Accept `Authorization: Bearer` tokens to APIs behind the proxy, checked as `requireBearer(bearer)` checks them. */
  bearer?: RequireBearerOptions;
  /** Sends a short-lived signed assertion of the identity, for upstreams that verify rather than trust headers. */
  assertion?: ForwardAuthAssertionOptions;
  /** Other origins whose pages may send state-changing requests to the proxied apps (the CSRF origin check). */
  csrfAllowedOrigins?: readonly string[];
  /** How many rule decisions (host, method, path, roles) are remembered. Default 10000. */
  decisionCacheSize?: number;
  /** Whether rule paths match case-sensitively, as the upstream routes. Default false (rules match any case). */
  caseSensitive?: boolean;
  events?: SecurityEvents;
}

const SCHEMA: OptionSchema = {
  session: { type: 'function', required: true, expected: 'the middleware ssoSession({ ... }) returned' },
  trustedProxies: { type: 'string[]', required: true, expected: "the proxies' addresses, e.g. ['127.0.0.1', '10.0.0.0/8']" },
  rules: { type: 'array', required: true, expected: "an array of rules like { domain: 'docs.example.test', policy: 'one_factor' }" },
  defaultPolicy: { type: 'string' },
  policy: { type: 'object' },
  stepUpUrl: { type: 'string' },
  headers: {
    type: 'object',
    members: { user: { type: 'string' }, name: { type: 'string' }, email: { type: 'string' }, groups: { type: 'string' } },
  },
  bearer: { type: 'object' },
  assertion: {
    type: 'object',
    members: {
      tokens: { type: 'object', required: true },
      header: { type: 'string' },
      audience: { type: 'function' },
      expiresInSeconds: { type: 'integer', check: within(5, 600) },
    },
  },
  csrfAllowedOrigins: { type: 'string[]' },
  decisionCacheSize: { type: 'integer', check: within(1, 10_000_000) },
  caseSensitive: { type: 'boolean' },
  events: EVENTS_OPTION,
};

const HEADER_NAME = /^[A-Za-z0-9][A-Za-z0-9-]{0,63}$/;
const debug = debugChannel('forward-auth');

function proxyList(addresses: readonly string[]): BlockList {
  const list = new BlockList();
  for (const entry of addresses) {
    const [address, bits, extra] = entry.split('/');
    const family = isIP(address ?? '');
    const prefix = bits === undefined ? undefined : Number(bits);
    const max = family === 6 ? 128 : 32;
    if (family === 0 || extra !== undefined || (prefix !== undefined && !(Number.isInteger(prefix) && prefix >= 0 && prefix <= max))) {
      throw new OptionsError(
        `forwardAuth: trustedProxies must list IP addresses or CIDR ranges like "10.0.0.0/8", got ${JSON.stringify(entry)}`,
      );
    }
    const type = family === 6 ? 'ipv6' : 'ipv4';
    if (prefix === undefined) list.addAddress(address!, type);
    else list.addSubnet(address!, prefix, type);
  }
  return list;
}

function isTrusted(list: BlockList, address: string | undefined): boolean {
  if (address === undefined) return false;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped !== null) return list.check(mapped[1]!, 'ipv4');
  return list.check(address, isIP(address) === 6 ? 'ipv6' : 'ipv4');
}

/** A navigation of the original request: GET or HEAD preferring HTML, as `requireSession` tells them. */
function isNavigation(original: OriginalRequest, req: Request): boolean {
  return (original.method === 'GET' || original.method === 'HEAD') && req.accepts(['application/json', 'text/html']) === 'text/html';
}

/** The identity the original request carries, and what it may be checked for. */
interface Credential {
  identity: ForwardedIdentity;
  roles: readonly string[];
  meets(requirement: AuthenticationRequirement): boolean;
  /** The cookie authenticates it (ambient, so it gets the CSRF check); false for a Bearer token. */
  ambient: boolean;
  user?: SessionUser;
}

function sessionCredential(user: SessionUser): Credential {
  const roles = Array.isArray(user.roles) ? user.roles.filter((role) => typeof role === 'string') : [];
  const email = user.attributes?.email;
  return {
    identity: { user: user.id, name: user.name, email: typeof email === 'string' ? email : undefined, groups: roles },
    roles,
    meets: (requirement) => meetsRequirement(authenticationOf(user), requirement, Math.floor(Date.now() / 1000)),
    ambient: true,
    user,
  };
}

function tokenCredential(claims: Record<string, unknown>): Credential {
  const roles = Array.isArray(claims.roles) ? claims.roles.filter((role): role is string => typeof role === 'string') : [];
  return {
    identity: {
      user: String(claims.sub),
      name: typeof claims.name === 'string' ? claims.name : undefined,
      email: typeof claims.email === 'string' ? claims.email : undefined,
      groups: roles,
    },
    roles,
    meets: (requirement) => tokenMeets(claims, requirement, Math.floor(Date.now() / 1000)),
    ambient: false,
  };
}

const DENIALS = {
  'deny-rule': 'rule_denied',
  'no-rule': 'no_rule',
  'missing-role': 'permission_denied',
  'missing-permission': 'permission_denied',
} as const;

/**
 * The authorization endpoint of a reverse proxy, for the apps on the parent domain that do not run Express (a static
 * site, Grafana, a Python service): mount it on the portal host, point Caddy `forward_auth`, nginx `auth_request`,
 * Traefik `ForwardAuth` or Envoy `ext_authz` at it, and every request to those apps is decided by the same session,
 * access rules and Bearer checks as the Express apps. It answers sub-requests at `/forward-auth` (Caddy, Traefik:
 * `X-Forwarded-Method/-Proto/-Host/-Uri`), `/auth-request` (nginx: `X-Original-Method`, `X-Original-URL`) and
 * `/ext-authz/<original path>` (Envoy), from `trustedProxies` only: 200 with `Remote-User`, `Remote-Name`,
 * `Remote-Email`, `Remote-Groups` (and a signed `Remote-Assertion` with `assertion`) to let the request through; a
 * browser navigation without a login or with too weak a one is sent to the portal's login or step-up page with the
 * original URL as `return_to` (302; 401 with `Location` for nginx, whose config turns it into the redirect); 401
 * problem+json for other requests; 403 when the answer can only be no. A state-changing request authenticated by the
 * cookie gets the CSRF origin check of `ssoSession` against the original origin. Mount it before `ssoSession`, and
 * `errorHandler({ html: true })` after it (it renders the 401/403 answers).
 *
 * @example
 * app.use('/authz', forwardAuth({ session: sessions, trustedProxies: ['127.0.0.1'],
 *   rules: [{ domain: 'docs.example.test', policy: 'one_factor' }] }));
 */
export function forwardAuth(options: ForwardAuthOptions): Router {
  checkOptions('forwardAuth', options, SCHEMA);
  const proxies = proxyList(options.trustedProxies);
  const reader = sessionReaderOf(options.session);
  if (reader === undefined) throw new OptionsError('forwardAuth: session must be the middleware ssoSession({ ... }) returned');
  const fallback = defaultRule(options.defaultPolicy ?? 'deny');
  const compiled: CompiledAccessPolicy = compileAccessPolicy(compileRules('forwardAuth', options.rules), fallback, options.policy);
  if (compiled.rules.some((rule) => rule.permission !== undefined) && options.policy === undefined) {
    throw new OptionsError('forwardAuth: a rule names a permission; pass the policy too: forwardAuth({ policy, rules, ... })');
  }
  const names = { ...DEFAULT_IDENTITY_HEADERS, ...options.headers };
  const assertionHeader = options.assertion?.header ?? 'Remote-Assertion';
  for (const name of [...Object.values(names), assertionHeader]) {
    if (!HEADER_NAME.test(name))
      throw new OptionsError(`forwardAuth: header names must be tokens like "Remote-User", got ${JSON.stringify(name)}`);
  }
  const bearerOptions = options.bearer;
  if (bearerOptions !== undefined) {
    for (const unusable of ['dpop', 'allowQueryToken', 'allowBodyToken'] as const) {
      if (bearerOptions[unusable] !== undefined) {
        throw new OptionsError(
          `forwardAuth: bearer.${unusable} cannot be checked on a proxy's sub-request (it has no body, and its method and URL are not the original's)`,
        );
      }
    }
  }
  const bearer = bearerOptions === undefined ? undefined : requireBearer(bearerOptions);
  const allowedOrigins = compileAllowedOrigins(options.csrfAllowedOrigins ?? [], 'forwardAuth: csrfAllowedOrigins');
  const events = eventsOption('forwardAuth', options.events) ?? reader.runtime.events;
  const cache = new DecisionCache(options.decisionCacheSize ?? 10_000);
  const routing = Object.freeze({ caseSensitive: options.caseSensitive === true, strict: false });
  const runtime = reader.runtime;
  const stepUpUrl = options.stepUpUrl ?? new URL('step-up', runtime.loginUrl).href;

  function ruleDecision(original: OriginalRequest, req: Request, roles: readonly string[] | undefined): AccessDecision {
    const preflight =
      original.method === 'OPTIONS' &&
      typeof req.headers['access-control-request-method'] === 'string' &&
      req.headers.cookie === undefined &&
      req.headers.authorization === undefined
        ? req.headers['access-control-request-method'].toUpperCase()
        : undefined;
    const key = `${original.hostname} ${original.method} ${preflight ?? ''} ${roles === undefined ? '-' : roles.join(',')} ${original.path}`;
    const known = cache.get(key);
    if (known !== undefined) return known;
    const facts = { host: original.hostname, path: original.path, method: original.method, preflightMethod: preflight, routing, roles };
    let decision = decideAccess(compiled, facts);
    // `/admin;x=1` is `/admin` to a servlet container: both readings must meet the same rule.
    const plain = withoutSegmentParameters(original.path);
    if (plain !== undefined && decision.outcome !== 'refuse') {
      const other = decideAccess(compiled, { ...facts, path: plain });
      if (other.rule !== decision.rule) decision = { outcome: 'refuse', reason: 'ambiguous-path', rule: undefined };
    }
    cache.set(key, decision);
    return decision;
  }

  function emitDenied(
    req: Request,
    reason: string,
    original: OriginalRequest | undefined,
    decision?: AccessDecision,
    userId?: string,
  ): void {
    events?.emit(
      'access.denied',
      {
        reason: reason as never,
        route: original === undefined ? 'forward-auth' : `${original.hostname}${original.path}`.slice(0, 200),
        ...(decision?.rule === undefined ? {} : { rule: String(decision.rule.index) }),
        ...(userId === undefined ? {} : { userId }),
      },
      req,
    );
  }

  /** An answer the proxy turns into the client's, in the dialect's terms. */
  function refuse(req: Request, res: Response, next: NextFunction, dialect: ForwardAuthDialect, error: HttpError, location?: string): void {
    res.set('Cache-Control', 'no-store');
    if (location !== undefined && dialect !== 'auth-request') {
      res.redirect(302, location);
      return;
    }
    // nginx's auth_request only passes 401 and 403 on (anything else is its 500): its config redirects on Location.
    if (dialect === 'auth-request') {
      if (location !== undefined) res.set('Location', location);
      if (error.status !== 401 && error.status !== 403) error = new ForbiddenError({ code: error.code, detail: error.detail ?? '' });
    }
    next(error);
  }

  function returnTo(original: OriginalRequest): string {
    return runtime.redirects.isSafe(original.url) ? original.url : runtime.redirects.defaultUrl;
  }

  function grant(res: Response, original: OriginalRequest, credential: Credential | undefined): void {
    res.set('Cache-Control', 'no-store');
    if (credential !== undefined) {
      res.set(identityHeaders(credential.identity, names));
      const assertion = options.assertion;
      if (assertion !== undefined && credential.user !== undefined) {
        const user = credential.user;
        const { acr, amr, authTime } = authenticationOf(user);
        const { token } = assertion.tokens.issueAccessToken({
          subject: user.id,
          audience: assertion.audience?.(original) ?? original.origin,
          clientId: 'forward-auth',
          roles: [...credential.roles],
          authentication: { acr, amr, authTime },
          expiresInSeconds: assertion.expiresInSeconds ?? 60,
        });
        res.set(assertionHeader, token);
      }
    }
    res.status(200).end();
  }

  async function credentialOf(req: Request): Promise<Credential | HttpError | undefined> {
    const authorization = req.headers.authorization;
    if (bearer !== undefined && typeof authorization === 'string' && /^bearer /i.test(authorization)) {
      const error = await new Promise<unknown>((resolve) => bearer(req, req.res!, resolve));
      if (error !== undefined) return error instanceof HttpError ? error : new HttpError(503, { code: 'unavailable' });
      return tokenCredential(req.auth!.payload as Record<string, unknown>);
    }
    const session = await reader!.read(req.headers.cookie, req);
    return session === undefined ? undefined : sessionCredential(session.data.user as SessionUser);
  }

  async function answer(req: Request, res: Response, next: NextFunction, dialect: ForwardAuthDialect): Promise<void> {
    if (!isTrusted(proxies, req.socket.remoteAddress)) {
      debug('refused a sub-request from %s: not one of trustedProxies', req.socket.remoteAddress);
      emitDenied(req, 'untrusted_proxy', undefined);
      next(new ForbiddenError({ code: 'untrusted_proxy', detail: 'Only the reverse proxy may ask this endpoint.' }));
      return;
    }
    const original = originalRequest(dialect, req.headers, { method: req.method, pathAfterPrefix: req.url });
    if (original === undefined) {
      emitDenied(req, 'malformed_request', undefined);
      const detail = 'The proxy did not name the original request plainly (method, scheme, host and URI, once each).';
      refuse(req, res, next, dialect, new BadRequestError({ code: 'invalid_forwarded_request', detail }));
      return;
    }
    const credential = await credentialOf(req);
    if (credential instanceof HttpError) {
      refuse(req, res, next, dialect, credential);
      return;
    }
    const decision = ruleDecision(original, req, credential?.roles);
    if (debug.enabled)
      debug('%s %s%s: %s (%s)', original.method, original.hostname, redactPath(original.path), decision.outcome, decision.reason);
    switch (decision.outcome) {
      case 'refuse':
        emitDenied(req, 'malformed_request', original);
        refuse(
          req,
          res,
          next,
          dialect,
          new BadRequestError({ code: 'ambiguous_path', detail: 'The request path reads differently decoded; send it plainly.' }),
        );
        return;
      case 'deny': {
        emitDenied(req, DENIALS[decision.reason], original, decision, credential?.identity.user);
        const denied =
          decision.reason === 'missing-role' || decision.reason === 'missing-permission'
            ? new ForbiddenError({ code: 'permission_denied', detail: 'You are not allowed to access this resource.' })
            : new ForbiddenError({ code: 'access_denied', detail: 'Access to this resource is denied.' });
        refuse(req, res, next, dialect, denied);
        return;
      }
      case 'allow':
        grant(res, original, credential);
        return;
      case 'authenticate':
        break;
    }
    const navigation = isNavigation(original, req);
    if (credential === undefined) {
      emitDenied(req, 'not_authenticated', original, decision);
      const error = new UnauthorizedError({
        code: 'session_required',
        detail: 'Log in to continue.',
        extensions: { login_url: runtime.loginUrl },
      });
      refuse(req, res, next, dialect, error, navigation ? runtime.loginRedirectPrefix + encodeURIComponent(returnTo(original)) : undefined);
      return;
    }
    const { policy, maxAgeSeconds } = decision.requirement;
    const requirement: AuthenticationRequirement = {
      ...(policy === 'two_factor' ? { acr: '2fa' as const } : {}),
      ...(maxAgeSeconds === undefined ? {} : { maxAgeSeconds }),
    };
    if ((requirement.acr !== undefined || requirement.maxAgeSeconds !== undefined) && !credential.meets(requirement)) {
      emitDenied(req, 'insufficient_authentication', original, decision, credential.identity.user);
      const query = `${requirement.acr === undefined ? '' : `&acr=${requirement.acr}`}${maxAgeSeconds === undefined ? '' : `&max_age=${maxAgeSeconds}`}`;
      const separator = new URL(stepUpUrl).search ? '&' : '?';
      const location =
        navigation && credential.ambient
          ? `${stepUpUrl}${separator}return_to=${encodeURIComponent(returnTo(original))}${query}`
          : undefined;
      refuse(req, res, next, dialect, new InsufficientAuthenticationError(requirement, { stepUpUrl }), location);
      return;
    }
    if (credential.ambient) {
      const refusal = checkRequestOrigin(
        {
          method: original.method,
          ownOrigin: original.origin,
          origin: req.headers.origin,
          referer: req.headers.referer,
          secFetchSite: typeof req.headers['sec-fetch-site'] === 'string' ? req.headers['sec-fetch-site'] : undefined,
        },
        allowedOrigins,
      );
      if (refusal !== undefined) {
        refuse(req, res, next, dialect, csrfError(refusal, req, 'forwardAuth', events));
        return;
      }
    }
    grant(res, original, credential);
  }

  const handlerFor = (dialect: ForwardAuthDialect): RequestHandler =>
    function forwardAuthMiddleware(req: Request, res: Response, next: NextFunction): void {
      answer(req, res, next, dialect).catch(next);
    };
  const router = Router();
  router.all('/forward-auth', handlerFor('forward-auth'));
  router.all('/auth-request', handlerFor('auth-request'));
  router.use('/ext-authz', handlerFor('ext-authz'));
  // nginx shows its own page for a 403 of auth_request; its config fetches this one instead.
  router.get('/forbidden', function forwardAuthForbidden(req: Request, res: Response, next: NextFunction): void {
    res.set('Cache-Control', 'no-store');
    next(new ForbiddenError({ code: 'access_denied', detail: 'You are not allowed to access this page.' }));
  });
  return router;
}
