import type { Request, RequestHandler, Response } from 'express';
import { MethodNotAllowedError } from '../http/errors';
import { requestOrigin, routedOrigin } from '../util/request-origin';
import type { KeyValueStore } from '../store/port';
import type { RegisteredQrApp } from './app-registry';
import type { QrLoginRequests } from './qr-login-requests';
import { QR_PAGE_CSP } from './qr-pages';
import type { ResolvedProviderOptions } from './provider-options';
import type { QrTokenIssuer, QrUserDirectory } from './provider-ports';

/** What every part of the provider shares, built once by `qrLoginProvider`. */
export interface QrProviderContext {
  readonly settings: ResolvedProviderOptions;
  readonly store: KeyValueStore;
  readonly apps: ReadonlyMap<string, RegisteredQrApp>;
  readonly requests: QrLoginRequests;
  readonly tokens: QrTokenIssuer;
  readonly users: QrUserDirectory;
  /** Authenticates the phone app's user on the `/sns/qr-logins` API; undefined when only sessions are accepted. */
  readonly authenticateApp: RequestHandler | undefined;
  /** The key of the openid HMAC, the same on every instance. */
  readonly openidSecret: () => Promise<Buffer>;
}

/**
 * Sends one of the provider's HTML pages with its strict CSP, never framed and never cached.
 *
 * @example
 * sendPage(res, 410, renderMessagePage('The code has expired', 'The QR code was not confirmed in time.'));
 */
export function sendPage(res: Response, status: number, html: string): void {
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

/**
 * The provider's public origin, to build its URLs with: `publicUrl` when set, otherwise the request's own
 * (`requestOrigin`: the Host header, or X-Forwarded-Host behind a trusted proxy). Undefined for a request without a
 * usable host.
 *
 * @example
 * const qrUrl = `${providerOrigin(context, req)}${req.baseUrl}/sns/qr-logins/${authCode}/confirmation`;
 */
export function providerOrigin(context: QrProviderContext, req: Request): string | undefined {
  return context.settings.publicOrigin ?? requestOrigin(req);
}

/**
 * The origin a state-changing form of the provider must come from: `publicUrl` when set, otherwise the origin the
 * request was routed to (`routedOrigin`: its Host header, never `X-Forwarded-Host`, which a client can set).
 *
 * @example
 * const ok = req.get('origin') === providerOwnOrigin(context, req);
 */
export function providerOwnOrigin(context: QrProviderContext, req: Request): string | undefined {
  return context.settings.publicOrigin ?? routedOrigin(req);
}

/**
 * Answers HEAD with 405 on a GET route whose GET changes state (collects a redirect, redeems a code, rotates a
 * refresh token): Express would otherwise run the GET handler for HEAD, and a prefetcher's HEAD would spend them.
 *
 * @example
 * router.head('/sns/oauth2/access_token', headNotAllowed(['GET', 'POST']));
 */
export function headNotAllowed(allowed: readonly string[]): RequestHandler {
  const methods = [...allowed, 'OPTIONS'];
  return function qrHeadNotAllowed(_req, _res, next) {
    next(new MethodNotAllowedError(methods));
  };
}
