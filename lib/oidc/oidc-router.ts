import { Router, type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { EVENTS_OPTION, eventsOption } from '../events/event-source';
import type { SecurityEvents } from '../events/security-events';
import type { KeyValueStore } from '../store/port';
import { checkOptions, OptionsError, type OptionSchema } from '../util/options';
import { OidcProvider } from './provider';
import { PROVIDER_OPTION_SCHEMA, checkProviderUrl, type OidcProviderOptions } from './provider-options';
import { createLogin, type OidcLoginOptions } from './login';
import { createCallback } from './callback';
import { createContext } from './context';
import { createLogout } from './logout';
import { createBackchannelLogout } from './backchannel-logout';

/** The paths `oidc()` mounts, relative to where the router is mounted. `false` leaves a route out. */
export interface OidcRoutes {
  /** `GET`: starts the login (`?return_to=…`). Default `/login/<name>`. */
  login?: string | false;
  /** `GET`: the redirect URI. Default `/callback/<name>`, or the path of `redirectUri` when that is given. */
  callback?: string;
  /** `POST`: RP-initiated logout. Default `/logout/<name>`. */
  logout?: string | false;
  /** `POST`: the provider's back-channel logout. Default `/backchannel-logout/<name>`. */
  backchannelLogout?: string | false;
}

/** Options of {@link oidc}: those of `oidcProvider` (give `baseUrl` or `redirectUri`), plus the routes and parts. */
export interface OidcOptions extends Omit<OidcProviderOptions, 'redirectUri' | 'store'> {
  /**
   * The absolute URL where the router is mounted, e.g. `https://auth.example.test` (or `…/sso` when mounted under
   * `/sso`); the redirect URI is `baseUrl` + the callback route. Give this or `redirectUri`.
   */
  baseUrl?: string;
  /** The redirect URI as registered at the provider; the callback route defaults to its path. Give this or `baseUrl`. */
  redirectUri?: string;
  /** The kit store (the one `ssoSession` uses): back-channel `jti` replay marks and the refresh lock. */
  store: KeyValueStore;
  /** Where the routes are, relative to the mount path. Default: see {@link OidcRoutes}. */
  routes?: OidcRoutes;
  /** Options of the login route (`prompt`, `maxAgeSeconds`, `loginHint`, `queryParameters`, `redirects`). */
  login?: OidcLoginOptions;
  /** An access token expiring within this many seconds is refreshed before `req.oidc.accessToken()` hands it out. Default 60. */
  refreshMarginSeconds?: number;
  /** Lifetime of the cross-instance refresh lock, in seconds. Default 10. */
  lockLifetimeSeconds?: number;
  /**
   * Where sign-ins through this provider, refused callbacks and back-channel logouts are recorded. Default the
   * events of `ssoSession` (on `req.sso`).
   */
  events?: SecurityEvents;
}

/** The middleware `oidc()` returns: mount it with `app.use(…)` after `ssoSession()`. */
export interface OidcRouter extends RequestHandler {
  /** The configured provider, e.g. to `await router.provider.metadata()` at start-up. */
  readonly provider: OidcProvider;
  /** The mounted routes, relative to the mount path; a route left out is absent. */
  readonly routes: Readonly<{ login?: string; callback: string; logout?: string; backchannelLogout?: string }>;
}

const PATH = /^\/(?!\/)[\x21-\x7e]*$/;
const path = (value: string): string | undefined => (PATH.test(value) ? undefined : `must be a path like "/login/corp", got "${value}"`);

const ROUTE_SCHEMA: OptionSchema = {
  login: { type: ['string', 'boolean'], expected: 'a path like "/login/corp", or false', check: (v: string | boolean) => routeCheck(v) },
  callback: { type: 'string', expected: 'a path like "/callback/corp"', check: path },
  logout: { type: ['string', 'boolean'], expected: 'a path like "/logout/corp", or false', check: (v: string | boolean) => routeCheck(v) },
  backchannelLogout: {
    type: ['string', 'boolean'],
    expected: 'a path like "/backchannel-logout/corp", or false',
    check: (v: string | boolean) => routeCheck(v),
  },
};

function routeCheck(value: string | boolean): string | undefined {
  if (value === true) return 'must be a path or false (true is the default already: leave it out)';
  return value === false ? undefined : path(value);
}

const OIDC_SCHEMA: OptionSchema = {
  ...Object.fromEntries(Object.entries(PROVIDER_OPTION_SCHEMA).filter(([name]) => name !== 'redirectUri')),
  baseUrl: { type: 'string', expected: 'the absolute URL the router is mounted at, like "https://auth.example.test"' },
  redirectUri: { type: 'string', expected: 'the absolute URL of the callback route, as registered at the provider' },
  store: { ...PROVIDER_OPTION_SCHEMA.store!, required: true },
  routes: { type: 'object', expected: 'an object { login?, callback?, logout?, backchannelLogout? }' },
  login: { type: 'object', expected: 'the options of oidcLogin ({ prompt?, maxAgeSeconds?, loginHint?, … })' },
  refreshMarginSeconds: { type: 'number' },
  lockLifetimeSeconds: { type: 'number' },
  events: EVENTS_OPTION,
};

interface Placement {
  redirectUri: string;
  routes: { login?: string; callback: string; logout?: string; backchannelLogout?: string };
  /** The mount path, for links the browser follows (the callback's "start again" link). */
  prefix: string;
}

/** Works out the redirect URI, the routes and the mount path from `baseUrl` or `redirectUri`. */
function place(options: OidcOptions, name: string): Placement {
  const given = options.routes ?? {};
  checkOptions('oidc: routes', given as unknown, ROUTE_SCHEMA);
  const insecure = options.allowInsecureLocalDevelopment === true;
  const chosen = (route: string | false | undefined, fallback: string): string | undefined =>
    route === false ? undefined : (route ?? fallback);
  let prefix: string;
  let callback: string;
  let redirectUri: string;
  if (options.baseUrl !== undefined) {
    const base = new URL(checkProviderUrl('oidc', 'baseUrl', options.baseUrl, insecure));
    if (base.search) throw new OptionsError(`oidc: baseUrl must not carry a query, got "${options.baseUrl}"`);
    prefix = base.pathname.replace(/\/+$/, '');
    callback = given.callback ?? `/callback/${name}`;
    redirectUri = `${base.origin}${prefix}${callback}`;
  } else {
    redirectUri = checkProviderUrl('oidc', 'redirectUri', options.redirectUri, insecure);
    const registered = new URL(redirectUri).pathname;
    callback = given.callback ?? registered;
    if (!registered.endsWith(callback)) {
      throw new OptionsError(`oidc: the path of redirectUri ("${registered}") must end with routes.callback ("${callback}")`);
    }
    prefix = registered.slice(0, registered.length - callback.length);
  }
  const routes = {
    callback,
    ...optional('login', chosen(given.login, `/login/${name}`)),
    ...optional('logout', chosen(given.logout, `/logout/${name}`)),
    ...optional('backchannelLogout', chosen(given.backchannelLogout, `/backchannel-logout/${name}`)),
  };
  const paths = Object.values(routes);
  if (new Set(paths).size !== paths.length) throw new OptionsError(`oidc: routes must differ from each other, got ${paths.join(', ')}`);
  return { redirectUri, routes, prefix };
}

function optional<K extends string>(key: K, value: string | undefined): Partial<Record<K, string>> {
  return value === undefined ? {} : ({ [key]: value } as Record<K, string>);
}

/**
 * One router for one OpenID provider, with sensible defaults: it configures the provider and mounts, relative to
 * where it is mounted, `GET /login/<name>` (`oidcLogin`), `GET /callback/<name>` (`oidcCallback`), `POST
 * /logout/<name>` (`oidcLogout`) and `POST /backchannel-logout/<name>` (`backchannelLogout`), and installs
 * `req.oidc` (`oidcContext`) for every request that passes through it. `name` defaults to `oidc`. Mount it after
 * `ssoSession()`; for custom wiring use the parts themselves.
 *
 * @example
 * app.use(ssoSession({ store, cookieDomain: 'example.test', secret, loginUrl: 'https://auth.example.test/login' }));
 * app.use(oidc({ name: 'corp', issuer: 'https://idp.example.test', clientId: 'shop', clientSecret: process.env.OIDC_SECRET!,
 *                baseUrl: 'https://auth.example.test', store }));
 * // GET /login/corp, GET /callback/corp, POST /logout/corp, POST /backchannel-logout/corp
 */
export function oidc(options: OidcOptions): OidcRouter {
  checkOptions('oidc', options as unknown, OIDC_SCHEMA, {
    exactlyOne: [['baseUrl', 'redirectUri']],
    exclusive: [['claimsToUser', 'rolesClaim']],
  });
  const {
    baseUrl: _baseUrl,
    redirectUri: _redirect,
    routes: _routes,
    login,
    refreshMarginSeconds,
    lockLifetimeSeconds,
    events: givenEvents,
    ...providerOptions
  } = options;
  const events = eventsOption('oidc', givenEvents);
  const placement = place(options, options.name ?? 'oidc');
  const provider = new OidcProvider({ ...providerOptions, redirectUri: placement.redirectUri }, 'oidc');
  const { routes, prefix } = placement;

  const router = Router();
  // Server-to-server, without the session: first, so nothing before it can refuse the provider's POST.
  if (routes.backchannelLogout) router.post(routes.backchannelLogout, createBackchannelLogout('oidc', provider, {}, events));
  router.use(
    createContext('oidc', provider, {
      ...(refreshMarginSeconds === undefined ? {} : { refreshMarginSeconds }),
      ...(lockLifetimeSeconds === undefined ? {} : { lockLifetimeSeconds }),
    }),
  );
  if (routes.login) router.get(routes.login, createLogin('oidc', provider, login ?? {}, 'oidc: login'));
  router.get(routes.callback, createCallback('oidc', provider, routes.login ? { loginPath: `${prefix}${routes.login}` } : {}, events));
  if (routes.logout) router.post(routes.logout, createLogout('oidc', provider));

  const handler = function oidcRouter(req: Request, res: Response, next: NextFunction): void {
    router(req, res, next);
  };
  return Object.assign(handler, { provider, routes: Object.freeze({ ...routes }) });
}
