import type { SecurityEvents } from '../events/security-events';
import type { RequestHandler } from 'express';
import type { KeyValueStore } from '../store/port';
import type { QrAppRegistration } from './app-registry';
import type { QrTokenIssuer, QrUserDirectory } from './provider-ports';

/** Rate limits of what a stranger can reach, per minute. */
export interface QrRateLimits {
  /** QR login requests one client IP (an IPv6 /56) may create per minute. Default 30. */
  qrconnectPerMinute?: number;
  /** Token, refresh and userinfo calls per appid per minute. Default 600. */
  tokenPerMinute?: number;
}

/** Options of `qrLoginProvider`. */
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
   * `req.auth.payload.sub` of a token issued by `appTokenIssuer`. Without it only the provider's own session
   * (`req.user` of the directory's source) is accepted.
   */
  authenticateApp?: RequestHandler;
  /**
   * The issuer (`iss`) of the phone app's tokens, whose subjects are the ids of `users`. Required with
   * `authenticateApp`: a token of any other issuer names somebody else, whatever its `sub` (403 `foreign_identity`).
   */
  appTokenIssuer?: string;
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
  /** How long a QR code can be scanned and confirmed, 120–300 s (WeChat's QR codes live 2–5 minutes). Default 180. */
  qrLifetimeSeconds?: number;
  /**
   * TESTS ONLY: a validity of 1–119 s, so a test can watch a code expire. Refused when NODE_ENV is `production`.
   */
  testOnlyQrLifetimeSeconds?: number;
  /** How long the authorization code in the redirect can be redeemed, 30–600 s. Default 300. */
  codeLifetimeSeconds?: number;
  /** Lifetime of issued access tokens. Default 7200, WeChat's `expires_in`. */
  accessTokenLifetimeSeconds?: number;
  /** How long the openid → user mapping for userinfo is kept after an exchange or refresh. Default 30 days. */
  subjectLifetimeSeconds?: number;
  /** Require the app secret on refresh_token. WeChat does not; the kit does by default. Default true. */
  requireSecretOnRefresh?: boolean;
  /** Answer errcode bodies with HTTP 200 as WeChat does. Default false (4xx/5xx statuses as in docs/qr-login.md). */
  wechatCompatibleStatus?: boolean;
  /** Limits per minute, or false to turn limiting off (e.g. behind a gateway that limits). */
  rateLimits?: QrRateLimits | false;
  /** Name of the browser-binding cookie. Default `qr_binding`. */
  bindingCookieName?: string;
  /** Where the web confirmation page sends a visitor without a session; gets `?return_to=<page>`. Default: 401. */
  loginUrl?: string;
  /**
   * Where scans, confirmations, denials and refused decisions are recorded (and, for the app's `errorHandler`, the
   * provider's outages). Default the events of `ssoSession` when the provider runs after it.
   */
  events?: SecurityEvents;
}

/** The provider's settings once validated, with every default applied. */
export interface ResolvedProviderOptions {
  qrLifetimeSeconds: number;
  codeLifetimeSeconds: number;
  accessTokenLifetimeSeconds: number;
  subjectLifetimeSeconds: number;
  requireSecretOnRefresh: boolean;
  wechatCompatibleStatus: boolean;
  /** Undefined when limiting is off. */
  rateLimits: Required<QrRateLimits> | undefined;
  publicOrigin: string | undefined;
  cookieName: string;
  loginUrl: string | undefined;
  /** The identity source of the provider's users: only they may scan and confirm. */
  directorySource: string;
  /** The issuer of the phone app's tokens, when `authenticateApp` is given. */
  appTokenIssuer: string | undefined;
  events: SecurityEvents | undefined;
}
