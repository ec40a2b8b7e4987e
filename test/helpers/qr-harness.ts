import type { Server } from 'node:http';
import express from 'express';
import session from 'express-session';
import { errorHandler } from '../../lib/http';
import type { KeyValueStore } from '../../lib/store';
import { hashAppSecret, generateAppSecret } from '../../lib/qr/app-registry';
import { qrLoginProvider, type QrLoginProviderOptions } from '../../lib/qr/qr-login-provider';
import { qrTokenIssuer } from '../../lib/qr/qr-token-issuer';
import type { QrDirectoryUser } from '../../lib/qr/provider-ports';
import { KeySet } from '../../lib/tokens/key-set';
import { requireBearer } from '../../lib/tokens/require-bearer';
import { TokenService } from '../../lib/tokens/token-service';

type Jose = typeof import('jose', { with: { 'resolution-mode': 'import' } });
let josePromise: Promise<Jose> | undefined;
/** jose is ESM-only; a dynamic import loads it under our Jest setup. */
export function loadJose(): Promise<Jose> {
  josePromise ??= import('jose');
  return josePromise;
}

/** The HS256 secret the test "phone app" tokens are signed with (minted by jose, verified by requireBearer). */
const PHONE_SECRET = Buffer.from('qr-harness-phone-app-secret-of-32+bytes!!', 'utf8');
export const PHONE_ISSUER = 'https://idp.example.test';

/**
 * The phone app's authentication as `requireBearer` checks it: HS256 tokens of `issuers` for the audience
 * `phone-app`. A gateway that also accepts a partner's tokens passes both issuers.
 */
export function phoneAppBearer(issuers: string | string[] = PHONE_ISSUER) {
  return requireBearer({ secret: PHONE_SECRET, algorithms: ['HS256'], issuer: issuers, audience: 'phone-app' });
}

export const SHOP_REDIRECT = 'https://shop.example.test/callback/qr';
export const ADMIN_REDIRECT = 'https://admin.example.test/callback/qr';

/** The identity source of the provider's users: the default directory source. */
export const QR_DIRECTORY_SOURCE = 'directory:local';

export const USERS: Record<string, QrDirectoryUser> = {
  alice: {
    id: 'alice',
    name: 'Alice',
    sex: 2,
    city: 'Hangzhou',
    province: 'Zhejiang',
    country: 'CN',
    headimgurl: 'https://img.example.test/a.png',
  },
  bob: { id: 'bob', name: 'Bob', attributes: { city: 'Lyon', country: 'FR' } },
};

/**
 * The provider's TokenService: keys, the issuer, a store, and access tokens that live as long as QR access tokens
 * (7200 s), so revocation marks outlive them. The one place the QR tests name the TokenService's lifetime option.
 */
export function qrTokenService(store: KeyValueStore, keys: KeySet = KeySet.generate('ES256'), issuer = PHONE_ISSUER): TokenService {
  return new TokenService({ keys, issuer, store, accessTokenLifetimeSeconds: 7200 });
}

/** A QR-login provider on listen(0) with real Redis, a real TokenService and requireBearer for the phone app. */
export interface ProviderHarness {
  url: string;
  origin: string;
  server: Server;
  tokenService: TokenService;
  keys: KeySet;
  shopSecret: string;
  adminSecret: string;
  close(): Promise<void>;
}

export async function startProvider(
  store: KeyValueStore,
  overrides: Partial<QrLoginProviderOptions> = {},
  shared?: { keys: KeySet; shopSecret: string; adminSecret: string },
): Promise<ProviderHarness> {
  const keys = shared?.keys ?? KeySet.generate('ES256');
  const shopSecret = shared?.shopSecret ?? generateAppSecret();
  const adminSecret = shared?.adminSecret ?? generateAppSecret();
  const tokenService = qrTokenService(store, keys);
  const app = express();
  app.use(session({ secret: 'qr-harness-session-secret', resave: false, saveUninitialized: false, name: 'idp.sid' }));
  // What ssoSession does for a live session: its user becomes req.user, the only user the provider reads.
  app.use((req, _res, next) => {
    req.user = req.session.user;
    next();
  });
  // The provider's own login, reduced to what the demo confirmation page needs: a session with a user of the
  // directory's source, or of the source named by `?source=` (a user who signed in elsewhere).
  app.post('/test/login/:userId', (req, res) => {
    const source = typeof req.query.source === 'string' ? req.query.source : QR_DIRECTORY_SOURCE;
    req.session.user = {
      id: `${source}|${String(req.params.userId)}`,
      source,
      subject: String(req.params.userId),
      name: String(req.params.userId),
      roles: [],
      method: 'password',
      authenticatedAt: Date.now(),
    };
    res.sendStatus(204);
  });
  app.use(
    qrLoginProvider({
      store,
      apps: [
        { appid: 'shop', secretHash: hashAppSecret(shopSecret), name: 'Shop', redirectUris: [SHOP_REDIRECT] },
        { appid: 'admin', secretHash: hashAppSecret(adminSecret), name: 'Admin', redirectUris: [ADMIN_REDIRECT] },
      ],
      users: { findById: async (id) => USERS[id] ?? null },
      tokens: qrTokenIssuer(tokenService),
      authenticateApp: phoneAppBearer(),
      appTokenIssuer: PHONE_ISSUER,
      ...overrides,
    }),
  );
  app.use(errorHandler({ log: false }));
  const server = await new Promise<Server>((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  const url = `http://127.0.0.1:${port}`;
  return {
    url,
    origin: url,
    server,
    tokenService,
    keys,
    shopSecret,
    adminSecret,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A Bearer token of the phone app for `userId` (issued by `issuer`, the phone app's own by default), minted with jose. */
export async function phoneToken(userId: string, issuer = PHONE_ISSUER): Promise<string> {
  const { SignJWT } = await loadJose();
  return new SignJWT({})
    .setProtectedHeader({ alg: 'HS256', typ: 'at+jwt' })
    .setIssuer(issuer)
    .setAudience('phone-app')
    .setSubject(userId)
    .setIssuedAt()
    .setExpirationTime('5m')
    .sign(PHONE_SECRET);
}

/** The `name=value` of a Set-Cookie header, for sending back as Cookie (tests run over http, so Secure cookies are replayed by hand). */
export function cookiePair(setCookie: string | string[] | undefined, name: string): string | undefined {
  const list = Array.isArray(setCookie) ? setCookie : setCookie ? [setCookie] : [];
  const line = list.find((value) => value.startsWith(`${name}=`));
  return line?.split(';')[0];
}

/** What a browser gets from qrconnect's JSON variant, plus its binding cookie. */
export interface CreatedLogin {
  authCode: string;
  binding: string;
  setCookie: string;
  qrUrl: string;
  statusUrl: string;
  eventsUrl: string;
  redirectionUrl: string;
}

export function qrconnectQuery(overrides: Record<string, string> = {}): string {
  return new URLSearchParams({
    appid: 'shop',
    redirect_uri: SHOP_REDIRECT,
    response_type: 'code',
    scope: 'snsapi_login',
    state: 'st-123',
    format: 'json',
    ...overrides,
  }).toString();
}

export async function createLogin(baseUrl: string, overrides: Record<string, string> = {}): Promise<CreatedLogin> {
  const res = await fetch(`${baseUrl}/sns/oauth2/qrconnect?${qrconnectQuery(overrides)}`, {
    headers: { 'user-agent': 'HarnessBrowser/1.0' },
  });
  if (res.status !== 201) throw new Error(`qrconnect answered ${res.status}: ${await res.text()}`);
  const body = (await res.json()) as { qr_url: string; status_url: string; events_url: string; redirection_url: string };
  const setCookie = res.headers.get('set-cookie') ?? '';
  const binding = cookiePair(setCookie, 'qr_binding');
  if (!binding) throw new Error('qrconnect set no binding cookie');
  const authCode = /\/sns\/qr-logins\/([^/]+)\/confirmation$/.exec(body.qr_url)?.[1];
  if (!authCode) throw new Error(`unexpected qr_url ${body.qr_url}`);
  return {
    authCode,
    binding,
    setCookie,
    qrUrl: body.qr_url,
    statusUrl: body.status_url,
    eventsUrl: body.events_url,
    redirectionUrl: body.redirection_url,
  };
}

/** PATCHes a login request's status as the phone app of `userId`. */
export async function patchStatus(baseUrl: string, authCode: string, status: string, userId: string): Promise<Response> {
  return fetch(`${baseUrl}/sns/qr-logins/${authCode}`, {
    method: 'PATCH',
    headers: { authorization: `Bearer ${await phoneToken(userId)}`, 'content-type': 'application/json' },
    body: JSON.stringify({ status }),
  });
}

/** Scans and confirms as `userId`, collects the redirect with the binding cookie, and returns the code. */
export async function confirmAndCollect(baseUrl: string, login: CreatedLogin, userId = 'alice'): Promise<{ code: string; state: string }> {
  for (const status of ['scanned', 'confirmed']) {
    const res = await patchStatus(baseUrl, login.authCode, status, userId);
    if (res.status !== 200) throw new Error(`PATCH ${status} answered ${res.status}`);
  }
  const res = await fetch(login.redirectionUrl, { headers: { cookie: login.binding }, redirect: 'manual' });
  if (res.status !== 302) throw new Error(`redirection answered ${res.status}`);
  const location = new URL(res.headers.get('location') ?? '');
  return { code: location.searchParams.get('code') ?? '', state: location.searchParams.get('state') ?? '' };
}

/** Exchanges a code at the token endpoint (form body). */
export async function exchange(
  baseUrl: string,
  params: Record<string, string>,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${baseUrl}/sns/oauth2/access_token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'authorization_code', ...params }).toString(),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}
