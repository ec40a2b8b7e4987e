import { randomBytes } from 'node:crypto';
import type { Server } from 'node:http';
import express from 'express';
import request, { type Test } from 'supertest';
import { errorHandler } from '../../lib/http';
import { generateAppSecret, hashAppSecret } from '../../lib/qr/app-registry';
import { qrLoginProvider, type QrLoginProviderOptions } from '../../lib/qr/qr-login-provider';
import { qrTokenIssuer } from '../../lib/qr/qr-token-issuer';
import { establishLogin, ssoSession } from '../../lib/session';
import type { KeyValueStore } from '../../lib/store';
import { KeySet } from '../../lib/tokens/key-set';
import { cookiePair, PHONE_ISSUER, phoneAppBearer, qrTokenService, SHOP_REDIRECT, USERS } from './qr-harness';

/** The provider's public origin; requests reach it through a loopback proxy that says https. */
export const IDP_ORIGIN = 'https://idp.example.test';
/** A partner's token issuer that the phone-app gateway also accepts (its subjects are not the directory's). */
export const PARTNER_ISSUER = 'https://partner.example.test';

/** A QR-login provider wired as README and docs/qr-login.md show, on listen(0). */
export interface SsoWiredProvider {
  url: string;
  shopSecret: string;
  /** A request as a browser or phone at `https://idp.example.test` sends it (Host, forwarded https, same Origin). */
  call(method: 'get' | 'post' | 'patch' | 'head', path: string): Test;
  /**
   * Signs `subject` of `source` in on the shared session, as the parent domain's login portal does, and returns the
   * session cookie pair.
   */
  signIn(subject: string, source?: string): Promise<string>;
  close(): Promise<void>;
}

/**
 * `ssoSession` (the parent domain's shared session), `qrLoginProvider` with the phone app's bearer authentication
 * and `errorHandler()`, behind `trust proxy`. The phone-app gateway accepts tokens of the phone app's issuer and of
 * a partner ({@link PARTNER_ISSUER}); only the former name directory users (`appTokenIssuer`).
 */
export async function startSsoWiredProvider(
  store: KeyValueStore,
  overrides: Partial<QrLoginProviderOptions> = {},
): Promise<SsoWiredProvider> {
  const shopSecret = generateAppSecret();
  const tokenService = qrTokenService(store, KeySet.generate('ES256'), IDP_ORIGIN);
  const app = express();
  app.set('trust proxy', 'loopback');
  app.use(
    ssoSession({
      store,
      cookieDomain: 'example.test',
      secret: randomBytes(32).toString('base64'),
      loginUrl: 'https://auth.example.test/login',
    }),
  );
  // Stands in for the login portal of the parent domain: it signs users of any source in on the shared session.
  app.post('/test/portal-login', express.json(), async (req, res, next) => {
    try {
      const { subject, source } = req.body as { subject: string; source: string };
      await establishLogin(req, { source, subject, name: subject, roles: [], method: 'password' });
      res.sendStatus(204);
    } catch (error) {
      next(error);
    }
  });
  app.use(
    qrLoginProvider({
      store,
      apps: [{ appid: 'shop', secretHash: hashAppSecret(shopSecret), name: 'Shop', redirectUris: [SHOP_REDIRECT] }],
      users: { findById: async (id) => USERS[id] ?? null },
      tokens: qrTokenIssuer(tokenService),
      authenticateApp: phoneAppBearer([PHONE_ISSUER, PARTNER_ISSUER]),
      appTokenIssuer: PHONE_ISSUER,
      publicUrl: IDP_ORIGIN,
      rateLimits: false,
      ...overrides,
    }),
  );
  app.use(errorHandler({ log: false }));
  const server = await new Promise<Server>((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  const call = (method: 'get' | 'post' | 'patch' | 'head', path: string): Test =>
    request(url)[method](path).set('Host', 'idp.example.test').set('X-Forwarded-Proto', 'https').set('Origin', IDP_ORIGIN);
  return {
    url,
    shopSecret,
    call,
    async signIn(subject, source = 'directory:local') {
      const res = await call('post', '/test/portal-login').send({ subject, source });
      if (res.status !== 204) throw new Error(`portal login answered ${res.status}: ${res.text}`);
      const cookie = cookiePair(res.headers['set-cookie'], '__Secure-sso.sid');
      if (!cookie) throw new Error('the portal login set no session cookie');
      return cookie;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
