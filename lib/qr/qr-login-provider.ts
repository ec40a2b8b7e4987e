import { randomBytes } from 'node:crypto';
import express, { type NextFunction, type Request, type RequestHandler, type Response, type Router } from 'express';
import { ipKeyGenerator, rateLimit } from 'express-rate-limit';
import {
  BadRequestError,
  ConflictError,
  ForbiddenError,
  GoneError,
  NotFoundError,
  TooManyRequestsError,
  UnauthorizedError,
  UnprocessableEntityError,
  type FieldError,
} from '../http/errors';
import { methodNotAllowed } from '../http/handlers';
import { KeyValueRateLimitStore } from '../http/rate-limit-store';
import { DEFAULT_DIRECTORY_SOURCE, sourceProblem } from '../session/identity';
import type { KeyValueStore } from '../store/port';
import { buildAppRegistry, type QrAppRegistration, type RegisteredQrApp } from './app-registry';
import { hasBinding, hashBinding, setBindingCookie } from './browser-binding';
import { QrLoginRequests, randomToken, type QrStatusEvent } from './qr-login-requests';
import { QR_PAGE_CSP, QR_PAGE_SCRIPT, renderConfirmationPage, renderMessagePage, renderQrPage } from './qr-pages';
import { effectiveStatus, isTerminal, type QrLoginRecord, type QrLoginStatus, type QrLoginTransition } from './qr-state';
import type { QrTokenIssuer, QrUserDirectory } from './provider-ports';
import { accessTokenEndpoint, refreshTokenEndpoint, userinfoEndpoint, weChatErrorRenderer, type WeChatApiContext } from './wechat-api';

/** Rate limits of what a stranger can reach, per minute. */
export interface QrRateLimits {
  /** QR login requests one client IP (an IPv6 /56) may create per minute. Default 30. */
  qrconnectPerMinute?: number;
  /** Token, refresh and userinfo calls per appid per minute. Default 600. */
  tokenPerMinute?: number;
}

/** Options of {@link qrLoginProvider}. */
export interface QrLoginProviderOptions {
  /** Where requests, codes and counters live; a RedisStore so every instance sees every request. */
  store: KeyValueStore;
  /** The relying apps allowed to use QR login. */
  apps: readonly QrAppRegistration[];
  /** Where `/sns/userinfo` reads profiles. */
  users: QrUserDirectory;
  /** The token service (see `qrTokenIssuer()` to adapt the kit's `TokenService`). */
  tokens: QrTokenIssuer;
  /**
   * Authenticates the phone app's user on the `/sns/qr-logins` API, e.g. `requireBearer({ … })`; the user is
   * `req.auth.claims.sub`. Without it only the provider's own session (`req.session.user`) is accepted.
   */
  authenticateApp?: RequestHandler;
  /**
   * The provider's public origin (e.g. `https://idp.example.test`), used in the URL inside the QR code and for the
   * same-origin check of the confirmation form. Default: derived from the request (set Express's `trust proxy`).
   */
  publicUrl?: string;
  /**
   * Secret keying the openid HMAC (≥ 32 bytes). Default: one random secret created on first use and kept in the
   * store, shared by all instances; set it explicitly so openids survive losing the store.
   */
  openidSecret?: string | Buffer;
  /** How long a QR code can be scanned and confirmed, 120–300 s (spec §8: 2–5 minutes). Default 180. */
  qrValiditySeconds?: number;
  /**
   * TESTS ONLY: a validity of 1–119 s, so a test can watch a code expire. Refused when NODE_ENV is `production`.
   */
  testOnlyQrValiditySeconds?: number;
  /** How long the authorization code in the redirect can be redeemed, 30–600 s. Default 300. */
  codeValiditySeconds?: number;
  /** Lifetime of issued access tokens. Default 7200 (spec §8). */
  accessTokenLifetimeSeconds?: number;
  /** How long the openid → user mapping for userinfo is kept after an exchange or refresh. Default 30 days. */
  subjectRetentionSeconds?: number;
  /** Require the app secret on refresh_token. WeChat does not; the kit does by default. Default true. */
  requireSecretOnRefresh?: boolean;
  /** Answer errcode bodies with HTTP 200 as WeChat does. Default false (the statuses of spec §7). */
  wechatCompatibleStatus?: boolean;
  /** Limits per minute, or false to turn limiting off (e.g. behind a gateway that limits). */
  rateLimits?: QrRateLimits | false;
  /** Name of the browser-binding cookie. Default `qr_binding`. */
  bindingCookieName?: string;
  /** Where the web confirmation page sends a visitor without a session; gets `?return_to=<page>`. Default: 401. */
  loginUrl?: string;
}

const KNOWN_OPTIONS = new Set([
  'store',
  'apps',
  'users',
  'tokens',
  'authenticateApp',
  'publicUrl',
  'openidSecret',
  'qrValiditySeconds',
  'testOnlyQrValiditySeconds',
  'codeValiditySeconds',
  'accessTokenLifetimeSeconds',
  'subjectRetentionSeconds',
  'requireSecretOnRefresh',
  'wechatCompatibleStatus',
  'rateLimits',
  'bindingCookieName',
  'loginUrl',
]);
const STATE_SHAPE = /^[A-Za-z0-9._~-]{1,128}$/;
const TRANSITIONS: readonly QrLoginTransition[] = ['scanned', 'confirmed', 'denied'];
const SSE_HEARTBEAT_MS = 15_000;

function fail(message: string): never {
  throw new TypeError(`qrLoginProvider: ${message}`);
}

function integerIn(
  options: QrLoginProviderOptions,
  name: keyof QrLoginProviderOptions,
  fallback: number,
  min: number,
  max: number,
): number {
  const value = options[name];
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    fail(`${String(name)} must be a whole number of seconds from ${min} to ${max}, got ${JSON.stringify(value)}`);
  }
  return value;
}

interface ResolvedOptions {
  validitySeconds: number;
  codeValiditySeconds: number;
  publicOrigin: string | undefined;
  cookieName: string;
  loginUrl: string | undefined;
}

function validate(options: QrLoginProviderOptions): ResolvedOptions {
  if (!options || typeof options !== 'object') fail('options are required: { store, apps, users, tokens }');
  for (const key of Object.keys(options)) if (!KNOWN_OPTIONS.has(key)) fail(`unknown option "${key}"`);
  if (!options.store || typeof options.store.compareAndSet !== 'function') fail('store must be a KeyValueStore (e.g. new RedisStore(url))');
  if (!options.users || typeof options.users.findById !== 'function') fail('users must have findById(id) returning the user or null');
  if (options.users.source !== undefined && sourceProblem(options.users.source) !== undefined) {
    fail(`users.source ${String(sourceProblem(options.users.source))}`);
  }
  const tokens = options.tokens as Partial<QrTokenIssuer> | undefined;
  for (const method of [
    'issueAccessToken',
    'verifyAccessToken',
    'issueRefreshToken',
    'rotateRefreshToken',
    'revokeGrant',
    'isRevoked',
  ] as const) {
    if (!tokens || typeof tokens[method] !== 'function')
      fail(`tokens must implement ${method}() (wrap the TokenService with qrTokenIssuer())`);
  }
  if (options.authenticateApp !== undefined && typeof options.authenticateApp !== 'function') {
    fail('authenticateApp must be a middleware such as requireBearer({ … })');
  }
  let validitySeconds = integerIn(options, 'qrValiditySeconds', 180, 120, 300);
  if (options.testOnlyQrValiditySeconds !== undefined) {
    if (process.env.NODE_ENV === 'production') fail('testOnlyQrValiditySeconds is for tests and is refused when NODE_ENV=production');
    if (options.qrValiditySeconds !== undefined) fail('give qrValiditySeconds or testOnlyQrValiditySeconds, not both');
    validitySeconds = integerIn(options, 'testOnlyQrValiditySeconds', 180, 1, 119);
  }
  const codeValiditySeconds = integerIn(options, 'codeValiditySeconds', 300, 30, 600);
  integerIn(options, 'accessTokenLifetimeSeconds', 7200, 60, 86_400);
  integerIn(options, 'subjectRetentionSeconds', 30 * 86_400, 3600, 365 * 86_400);
  let publicOrigin: string | undefined;
  if (options.publicUrl !== undefined) {
    let url: URL;
    try {
      url = new URL(options.publicUrl);
    } catch {
      fail(`publicUrl must be an absolute URL like "https://idp.example.test", got ${JSON.stringify(options.publicUrl)}`);
    }
    if (url.pathname !== '/' || url.search || url.hash)
      fail('publicUrl must be an origin only, like "https://idp.example.test" (mount paths are taken from the request)');
    publicOrigin = url.origin;
  }
  if (options.openidSecret !== undefined && Buffer.byteLength(options.openidSecret) < 32) {
    fail('openidSecret must be at least 32 bytes (e.g. crypto.randomBytes(32))');
  }
  for (const flag of ['requireSecretOnRefresh', 'wechatCompatibleStatus'] as const) {
    if (options[flag] !== undefined && typeof options[flag] !== 'boolean') fail(`${flag} must be true or false`);
  }
  if (options.rateLimits !== undefined && options.rateLimits !== false) {
    if (typeof options.rateLimits !== 'object') fail('rateLimits must be { qrconnectPerMinute, tokenPerMinute } or false');
    for (const [name, value] of Object.entries(options.rateLimits)) {
      if (name !== 'qrconnectPerMinute' && name !== 'tokenPerMinute') fail(`rateLimits has an unknown limit "${name}"`);
      if (value !== undefined && (typeof value !== 'number' || !Number.isInteger(value) || value < 1))
        fail(`rateLimits.${name} must be a positive whole number`);
    }
  }
  const cookieName = options.bindingCookieName ?? 'qr_binding';
  if (typeof cookieName !== 'string' || !/^[A-Za-z0-9_-]{1,64}$/.test(cookieName))
    fail('bindingCookieName must be a plain cookie name like "qr_binding"');
  if (
    options.loginUrl !== undefined &&
    (typeof options.loginUrl !== 'string' || !options.loginUrl.startsWith('/') || options.loginUrl.startsWith('//'))
  ) {
    fail('loginUrl must be a path on this provider, like "/login"');
  }
  return { validitySeconds, codeValiditySeconds, publicOrigin, cookieName, loginUrl: options.loginUrl };
}

/** The resource representation of a login request on the `/sns/qr-logins` API. */
function representation(record: QrLoginRecord, app: RegisteredQrApp | undefined, now: number) {
  return {
    auth_code: record.authCode,
    status: effectiveStatus(record, now),
    app: { appid: record.appid, name: app?.name ?? record.appid },
    requester: { ip: record.requester.ip, user_agent: record.requester.userAgent },
    created_at: new Date(record.createdAt).toISOString(),
    expires_at: new Date(record.expiresAt).toISOString(),
    ...(record.scannedAt ? { scanned_at: new Date(record.scannedAt).toISOString() } : {}),
    ...(record.decidedAt ? { decided_at: new Date(record.decidedAt).toISOString() } : {}),
  };
}

function sendPage(res: Response, status: number, html: string): void {
  res
    .status(status)
    .set({
      'Content-Security-Policy': QR_PAGE_CSP,
      'X-Frame-Options': 'DENY',
      // same-origin, not no-referrer: under no-referrer Chromium sends `Origin: null` with the page's own form
      // posts, which the same-origin check must refuse. Other sites still get no referrer.
      'Referrer-Policy': 'same-origin',
      'Cache-Control': 'no-store',
      'X-Content-Type-Options': 'nosniff',
    })
    .type('html')
    .send(html);
}

type Handler = (req: Request, res: Response, next: NextFunction) => Promise<void> | void;

/** Lets an async handler's rejection reach `next` (Express 5 does this too; explicit keeps the contract obvious). */
function guarded(handler: Handler): RequestHandler {
  return function guardedHandler(req, res, next) {
    Promise.resolve(handler(req, res, next)).catch(next);
  };
}

/**
 * The QR-login identity provider as an Express router, on WeChat's wire format: `qrconnect` shows the QR page to
 * the browser, the phone app moves the request through `/sns/qr-logins/{auth_code}`, the creating browser (and only
 * it) is redirected to the app with a single-use code, and the app exchanges it at `/sns/oauth2/access_token`.
 *
 * @example
 * idp.use(qrLoginProvider({ store, apps: [{ appid: 'shop', secretHash, name: 'Shop', redirectUris: ['https://shop.example.test/callback/qr'] }],
 *                           users: directory, tokens: qrTokenIssuer(tokenService), authenticateApp: requireBearer({ … }) }));
 */
export function qrLoginProvider(options: QrLoginProviderOptions): Router {
  // eslint-disable-next-line prefer-rest-params
  if (arguments.length === 3 && typeof arguments[2] === 'function') {
    fail('it is a factory; write app.use(qrLoginProvider({ store, apps, users, tokens })), not app.use(qrLoginProvider)');
  }
  const resolved = validate(options);
  const apps = buildAppRegistry(options.apps);
  const store = options.store;
  const requests = new QrLoginRequests(store);
  const { validitySeconds, codeValiditySeconds, cookieName } = resolved;
  const authenticateApp = options.authenticateApp;
  // Only users of the provider's own directory may scan and confirm: a partner IdP's user with the same subject
  // is somebody else.
  const directorySource = options.users.source ?? DEFAULT_DIRECTORY_SOURCE;
  const foreignUser = (): ForbiddenError =>
    new ForbiddenError({ code: 'foreign_identity', detail: 'Sign in with an account of this provider to approve sign-ins.' });

  let openidSecretPromise: Promise<Buffer> | undefined =
    options.openidSecret === undefined ? undefined : Promise.resolve(Buffer.from(options.openidSecret));
  const openidSecret = (): Promise<Buffer> => {
    if (!openidSecretPromise) {
      // Every instance must derive the same openids: the first one to start stores a random secret, the rest read it.
      openidSecretPromise = (async () => {
        await store.setIfAbsent('qr:openid-secret', randomBytes(32).toString('base64url'));
        const value = await store.get('qr:openid-secret');
        if (!value) throw new Error('qrLoginProvider: the openid secret vanished from the store');
        return Buffer.from(value, 'base64url');
      })();
      openidSecretPromise.catch(() => {
        openidSecretPromise = undefined;
      });
    }
    return openidSecretPromise;
  };

  const context: WeChatApiContext = {
    apps,
    requests,
    store,
    tokens: options.tokens,
    users: options.users,
    openidSecret,
    accessTokenLifetimeSeconds: options.accessTokenLifetimeSeconds ?? 7200,
    subjectRetentionSeconds: options.subjectRetentionSeconds ?? 30 * 86_400,
    requireSecretOnRefresh: options.requireSecretOnRefresh ?? true,
    wechatCompatibleStatus: options.wechatCompatibleStatus ?? false,
  };

  const limits = options.rateLimits === false ? undefined : { qrconnectPerMinute: 30, tokenPerMinute: 600, ...options.rateLimits };
  const noLimit: RequestHandler = function noRateLimit(_req, _res, next) {
    next();
  };
  const qrconnectLimiter: RequestHandler = limits
    ? rateLimit({
        windowMs: 60_000,
        limit: limits.qrconnectPerMinute,
        standardHeaders: 'draft-7',
        legacyHeaders: false,
        store: new KeyValueRateLimitStore({ store, prefix: 'rl:qrconnect:' }),
        keyGenerator: (req) => ipKeyGenerator(req.ip ?? 'unknown'),
        handler: (_req, _res, next, used) =>
          next(new TooManyRequestsError(used.windowMs / 1000, { detail: 'Too many QR codes requested. Wait a minute.' })),
      })
    : noLimit;
  const tokenLimiter: RequestHandler = limits
    ? rateLimit({
        windowMs: 60_000,
        limit: limits.tokenPerMinute,
        standardHeaders: 'draft-7',
        legacyHeaders: false,
        store: new KeyValueRateLimitStore({ store, prefix: 'rl:qrtoken:' }),
        // Per appid where one is given, so one app's burst cannot starve another; otherwise per client IP.
        keyGenerator: (req) => {
          const source = (req.method === 'GET' ? req.query : req.body) as Record<string, unknown> | undefined;
          const appid = source?.appid;
          return typeof appid === 'string' && apps.has(appid) ? `app:${appid}` : `ip:${ipKeyGenerator(req.ip ?? 'unknown')}`;
        },
        handler: (_req, _res, next, used) => next(new TooManyRequestsError(used.windowMs / 1000)),
      })
    : noLimit;

  const router = express.Router();
  const formOrJson = [express.urlencoded({ extended: false, limit: '4kb' }), express.json({ limit: '4kb' })];

  const originOf = (req: Request): string => resolved.publicOrigin ?? `${req.protocol}://${req.get('host') ?? 'localhost'}`;
  const requestBase = (req: Request, authCode: string) => `${req.baseUrl}/sns/qr-logins/${authCode}`;

  const scriptPath = '/sns/qr-login/qr-login.js';
  router.get(scriptPath, function qrLoginScript(_req, res) {
    res
      .set({ 'Cache-Control': 'public, max-age=3600', 'X-Content-Type-Options': 'nosniff' })
      .type('application/javascript')
      .send(QR_PAGE_SCRIPT);
  });

  router.get(
    '/sns/oauth2/qrconnect',
    qrconnectLimiter,
    guarded(async function qrConnect(req, res) {
      const query = req.query as Record<string, unknown>;
      const app = typeof query.appid === 'string' ? apps.get(query.appid) : undefined;
      const refuse = (message: string) => sendPage(res, 400, renderMessagePage('This sign-in link is not valid', message));
      // Every refusal is a page on the provider, never a redirect: the redirect_uri is not trusted until it matched.
      if (!app) return refuse('The application asking for sign-in is not registered.');
      if (typeof query.redirect_uri !== 'string' || !app.redirectUris.has(query.redirect_uri)) {
        return refuse('The return address is not registered for this application.');
      }
      if (query.response_type !== 'code') return refuse('response_type must be "code".');
      if (query.scope !== 'snsapi_login') return refuse('scope must be "snsapi_login".');
      if (typeof query.state !== 'string' || !STATE_SHAPE.test(query.state)) {
        return refuse('state must be 1-128 characters of letters, digits, ".", "_", "~" or "-".');
      }

      const base = originOf(req) + req.baseUrl;
      const authCode = randomToken(24);
      const binding = setBindingCookie(res, cookieName, requestBase(req, authCode), validitySeconds + 60);
      const record = await requests.create({
        authCode,
        appid: app.appid,
        redirectUri: query.redirect_uri,
        state: query.state,
        bindingHash: hashBinding(binding),
        requester: { ip: req.ip ?? 'unknown', userAgent: (req.get('user-agent') ?? 'unknown').slice(0, 256) },
        validitySeconds,
      });
      const resourceUrl = `${base}/sns/qr-logins/${record.authCode}`;
      const links = {
        qr_url: `${resourceUrl}/confirmation`,
        expires_in: validitySeconds,
        status_url: `${resourceUrl}/status`,
        events_url: `${resourceUrl}/events`,
        redirection_url: `${resourceUrl}/redirection`,
      };
      res.set('Cache-Control', 'no-store');
      const wantsJson = query.format === 'json' || req.accepts(['text/html', 'application/json']) === 'application/json';
      if (wantsJson) {
        res.status(201).location(resourceUrl).json(links);
        return;
      }
      const html = await renderQrPage({
        appName: app.name,
        qrUrl: links.qr_url,
        expiresAt: record.expiresAt,
        validitySeconds,
        eventsUrl: links.events_url,
        statusUrl: links.status_url,
        redirectionUrl: links.redirection_url,
        retryUrl: req.originalUrl,
        scriptUrl: `${req.baseUrl}${scriptPath}`,
      });
      sendPage(res, 200, html);
    }),
  );

  // Browser side of one request: status, events and the redirect, each only for the browser holding the binding.
  const loadBound = async (req: Request): Promise<QrLoginRecord> => {
    const record = await requests.get(String(req.params.authCode));
    if (!record) throw new NotFoundError({ code: 'qr_login_not_found', detail: 'No such QR login request.' });
    if (!hasBinding(req, cookieName, record.bindingHash)) {
      throw new ForbiddenError({ code: 'qr_binding_mismatch', detail: 'This QR login was started in another browser.' });
    }
    return record;
  };

  router.get(
    '/sns/qr-logins/:authCode/status',
    guarded(async function qrLoginStatus(req, res) {
      const record = await loadBound(req);
      res
        .set('Cache-Control', 'no-store')
        .json({ status: effectiveStatus(record, Date.now()), expires_at: new Date(record.expiresAt).toISOString() });
    }),
  );

  router.get(
    '/sns/qr-logins/:authCode/events',
    guarded(async function qrLoginEvents(req, res) {
      const initial = await loadBound(req);
      const authCode = initial.authCode;
      let closed = false;
      let last: QrLoginStatus | undefined;
      const timers: NodeJS.Timeout[] = [];
      const subscription: { end?: () => Promise<void> } = {};
      const finish = () => {
        if (closed) return;
        closed = true;
        for (const timer of timers) clearTimeout(timer);
        void subscription.end?.().catch(() => undefined);
        res.end();
      };
      const send = (status: QrLoginStatus) => {
        if (closed || status === last) return;
        last = status;
        res.write(`event: status\ndata: ${JSON.stringify({ status })}\n\n`);
        if (isTerminal(status)) finish();
      };
      // Subscribe before reading the current status, so a transition between the two is not lost.
      subscription.end = await requests.subscribe(authCode, (event: QrStatusEvent) => send(event.status));
      req.on('close', finish);
      res.status(200).set({ 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-store', 'X-Accel-Buffering': 'no' });
      res.flushHeaders();
      res.write('retry: 2000\n\n');
      const current = (await requests.get(authCode)) ?? initial;
      send(effectiveStatus(current, Date.now()));
      if (closed) return;
      const untilExpiry = current.expiresAt - Date.now();
      timers.push(
        setTimeout(
          () => void requests.get(authCode).then((latest) => send(latest ? effectiveStatus(latest, Date.now()) : 'expired')),
          Math.max(0, untilExpiry) + 50,
        ),
      );
      const heartbeat = setInterval(() => {
        if (!closed) res.write(': keep-alive\n\n');
      }, SSE_HEARTBEAT_MS);
      timers.push(heartbeat);
    }),
  );

  router.get(
    '/sns/qr-logins/:authCode/redirection',
    guarded(async function qrLoginRedirection(req, res) {
      const record = await requests.get(String(req.params.authCode));
      if (!record)
        return sendPage(
          res,
          404,
          renderMessagePage('Sign-in request not found', 'This sign-in request does not exist or has been cleaned up.'),
        );
      const app = apps.get(record.appid);
      const retryUrl = app
        ? `${req.baseUrl}/sns/oauth2/qrconnect?${new URLSearchParams({ appid: record.appid, redirect_uri: record.redirectUri, response_type: 'code', scope: 'snsapi_login', state: record.state })}`
        : undefined;
      if (!hasBinding(req, cookieName, record.bindingHash)) {
        return sendPage(
          res,
          403,
          renderMessagePage('Wrong browser', 'This sign-in was started in another browser; only that browser can finish it.'),
        );
      }
      const status = effectiveStatus(record, Date.now());
      if (status === 'expired')
        return sendPage(res, 410, renderMessagePage('The code has expired', 'The QR code was not confirmed in time.', retryUrl));
      if (status === 'denied')
        return sendPage(res, 403, renderMessagePage('Sign-in denied', 'The sign-in was denied on the phone.', retryUrl));
      if (status !== 'confirmed' || !record.code) {
        return sendPage(res, 409, renderMessagePage('Not confirmed yet', 'Confirm the sign-in on your phone first.'));
      }
      if (!(await requests.collect(record))) {
        return sendPage(res, 410, renderMessagePage('Already used', 'This sign-in was already completed.', retryUrl));
      }
      const target = new URL(record.redirectUri);
      target.searchParams.set('code', record.code);
      target.searchParams.set('state', record.state);
      res.set({ 'Cache-Control': 'no-store', 'Referrer-Policy': 'no-referrer' }).redirect(302, target.toString());
    }),
  );

  // The confirming side: the phone app's REST resource and the demo web page.
  const identify: RequestHandler = function qrIdentifyAppUser(req, res, next) {
    const sessionUser = req.user;
    if (sessionUser && !req.headers.authorization) {
      if (sessionUser.source !== directorySource) {
        next(foreignUser());
        return;
      }
      res.locals.qrUserId = sessionUser.subject;
      next();
      return;
    }
    const challenge = { 'WWW-Authenticate': 'Bearer realm="qr-login"' };
    if (!authenticateApp) {
      next(new UnauthorizedError({ code: 'login_required', detail: 'Sign in to the provider first.', headers: challenge }));
      return;
    }
    authenticateApp(req, res, (error?: unknown) => {
      if (error) {
        next(error);
        return;
      }
      const subject = req.auth?.claims.sub;
      if (typeof subject !== 'string' || subject === '') {
        next(new UnauthorizedError({ code: 'invalid_token', detail: 'The token names no user.', headers: challenge }));
        return;
      }
      res.locals.qrUserId = subject;
      next();
    });
  };

  const loadForApp = async (req: Request): Promise<QrLoginRecord> => {
    const record = await requests.get(String(req.params.authCode));
    if (!record) throw new NotFoundError({ code: 'qr_login_not_found', detail: 'No such QR login request.' });
    return record;
  };

  const refusal = (reason: string, status?: QrLoginStatus) => {
    if (reason === 'not_found') return new NotFoundError({ code: 'qr_login_not_found', detail: 'No such QR login request.' });
    if (reason === 'expired') return new GoneError({ code: 'qr_login_expired', detail: 'The QR code has expired.' });
    if (reason === 'not_scanner')
      return new ForbiddenError({ code: 'not_scanner', detail: 'Only the user who scanned the code may decide.' });
    return new ConflictError({
      code: 'illegal_transition',
      detail: `The request is ${status ?? 'in another state'}.`,
      extensions: { current_status: status },
    });
  };

  const patchBody = express.json({ limit: '2kb', type: 'application/json' });
  router
    .route('/sns/qr-logins/:authCode')
    .get(
      identify,
      guarded(async function readQrLogin(req, res) {
        const record = await loadForApp(req);
        const now = Date.now();
        if (effectiveStatus(record, now) === 'expired') throw refusal('expired');
        res.set('Cache-Control', 'no-store').json(representation(record, apps.get(record.appid), now));
      }),
    )
    .patch(
      identify,
      function requireJson(req, _res, next) {
        next(
          req.is('application/json')
            ? undefined
            : new BadRequestError({ code: 'body_not_json', detail: 'Send the change as application/json.' }),
        );
      },
      patchBody,
      guarded(async function updateQrLogin(req, res) {
        const body = req.body as unknown;
        const errors: FieldError[] = [];
        if (!body || typeof body !== 'object' || Array.isArray(body)) {
          errors.push({ field: '', message: 'the body must be a JSON object like {"status":"scanned"}' });
        } else {
          const { status, ...rest } = body as Record<string, unknown>;
          if (status === undefined) errors.push({ field: 'status', message: 'is required' });
          else if (!TRANSITIONS.includes(status as QrLoginTransition))
            errors.push({ field: 'status', message: `must be one of ${TRANSITIONS.join(', ')}` });
          for (const field of Object.keys(rest)) errors.push({ field, message: 'is not a field of a QR login request' });
        }
        if (errors.length) throw new UnprocessableEntityError(errors);
        const to = (body as { status: QrLoginTransition }).status;
        const result = await requests.transition(String(req.params.authCode), to, String(res.locals.qrUserId), codeValiditySeconds);
        if (!result.ok) throw refusal(result.reason, result.status);
        res.set('Cache-Control', 'no-store').json(representation(result.record, apps.get(result.record.appid), Date.now()));
      }),
    )
    .all(methodNotAllowed(['GET', 'PATCH']));

  const confirmationForm = express.urlencoded({ extended: false, limit: '1kb' });
  const sameOrigin: RequestHandler = function qrSameOriginCheck(req, _res, next) {
    // The form changes state with the session cookie, so it must come from a page of this provider (CSRF).
    const origin = req.get('origin');
    const fetchSite = req.get('sec-fetch-site');
    const ok = origin !== undefined ? origin === originOf(req) : fetchSite === 'same-origin';
    next(ok ? undefined : new ForbiddenError({ code: 'cross_origin_request', detail: 'The form must be sent from this site.' }));
  };
  const requireSessionUser: RequestHandler = function qrConfirmationSession(req, res, next) {
    const user = req.user;
    if (user) {
      if (user.source !== directorySource) {
        next(foreignUser());
        return;
      }
      res.locals.qrUserId = user.subject;
      next();
      return;
    }
    if (resolved.loginUrl && req.method === 'GET') {
      res.redirect(303, `${resolved.loginUrl}?${new URLSearchParams({ return_to: req.originalUrl })}`);
      return;
    }
    next(new UnauthorizedError({ code: 'login_required', detail: 'Sign in to the provider first.' }));
  };

  router
    .route('/sns/qr-logins/:authCode/confirmation')
    .get(
      requireSessionUser,
      guarded(async function showConfirmation(req, res) {
        const record = await loadForApp(req);
        const app = apps.get(record.appid);
        sendPage(
          res,
          200,
          renderConfirmationPage({
            appName: app?.name ?? record.appid,
            status: effectiveStatus(record, Date.now()),
            requesterIp: record.requester.ip,
            requesterUserAgent: record.requester.userAgent,
            createdAt: record.createdAt,
            actionUrl: req.originalUrl.split('?')[0] ?? req.originalUrl,
            isScanner: record.scannedBy === res.locals.qrUserId,
          }),
        );
      }),
    )
    .post(
      sameOrigin,
      requireSessionUser,
      confirmationForm,
      guarded(async function submitConfirmation(req, res) {
        const to = (req.body as Record<string, unknown> | undefined)?.status;
        if (!TRANSITIONS.includes(to as QrLoginTransition)) {
          throw new UnprocessableEntityError([{ field: 'status', message: `must be one of ${TRANSITIONS.join(', ')}` }]);
        }
        const authCode = String(req.params.authCode);
        const userId = String(res.locals.qrUserId);
        // Viewing this page is the scan: a decision on a pending request records this user as the scanner first,
        // so the page needs one click. The requesting browser still sees scanned, then the decision.
        if (to !== 'scanned') {
          const current = await requests.get(authCode);
          if (current && effectiveStatus(current, Date.now()) === 'pending') {
            const scanned = await requests.transition(authCode, 'scanned', userId, codeValiditySeconds);
            if (!scanned.ok && scanned.reason !== 'illegal_transition') throw refusal(scanned.reason, scanned.status);
          }
        }
        const result = await requests.transition(authCode, to as QrLoginTransition, userId, codeValiditySeconds);
        if (!result.ok) throw refusal(result.reason, result.status);
        res.redirect(303, req.originalUrl);
      }),
    )
    .all(methodNotAllowed(['GET', 'POST']));

  // WeChat-format API, with its own error bodies.
  router.all(['/sns/oauth2/access_token', '/sns/oauth2/refresh_token', '/sns/userinfo'], function markWeChatApi(_req, res, next) {
    res.locals.qrWeChatApi = true;
    next();
  });
  router
    .route('/sns/oauth2/access_token')
    .get(tokenLimiter, guarded(accessTokenEndpoint(context)))
    .post(formOrJson, tokenLimiter, guarded(accessTokenEndpoint(context)));
  router
    .route('/sns/oauth2/refresh_token')
    .get(tokenLimiter, guarded(refreshTokenEndpoint(context)))
    .post(formOrJson, tokenLimiter, guarded(refreshTokenEndpoint(context)));
  router.get('/sns/userinfo', tokenLimiter, guarded(userinfoEndpoint(context)));
  router.all(['/sns/oauth2/access_token', '/sns/oauth2/refresh_token'], methodNotAllowed(['GET', 'POST']));
  router.all('/sns/userinfo', methodNotAllowed(['GET']));
  const renderWeChatError = weChatErrorRenderer(context);
  router.use(function qrWeChatErrors(error: unknown, req: Request, res: Response, next: NextFunction) {
    if (res.locals.qrWeChatApi && (error as { status?: unknown })?.status !== 405) renderWeChatError(error, req, res, next);
    else next(error);
  });
  return router;
}
