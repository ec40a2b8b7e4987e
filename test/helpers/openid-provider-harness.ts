import { randomBytes } from 'node:crypto';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { errorHandler, securityHeaders } from '../../lib/http';
import { fileUserDirectory, hashPassword, loginPortal, type LoginPortalOptions } from '../../lib/portal';
import { openidProvider, type OpenidProviderOptions, type OpenidProviderRouter, type ProviderClient } from '../../lib/provider';
import { logoutEverywhere, requireSession, ssoSession, type SsoSessionMiddleware } from '../../lib/session';
import type { KeyValueStore } from '../../lib/store';
import { KeySet } from '../../lib/tokens';

/** The portal host named in the session's login URL. */
export const PORTAL_HOST = 'auth.example.test';
const FAST_SCRYPT = { N: 1024, r: 8, p: 1 };
/** The portal's session secret: other apps of the parent domain share it (and the store) to share the session. */
export const SESSION_SECRET = `session-secret-${randomBytes(16).toString('hex')}`;

/** The portal with its OpenID provider, listening on 127.0.0.1 (the issuer is `http://127.0.0.1:<port>`). */
export interface ProviderPortal {
  issuer: string;
  port: number;
  op: OpenidProviderRouter;
  sessions: SsoSessionMiddleware;
  keys: KeySet;
  passwords: Record<string, string>;
  close(): Promise<void>;
}

export interface ProviderPortalOptions {
  store: KeyValueStore;
  clients: ProviderClient[];
  provider?: Partial<OpenidProviderOptions>;
  keys?: KeySet;
  /**
   * Serve the portal as `http://<host>:<port>` for a real browser (a `*.sso.localhost` name, plain http for local
   * development, the session cookie on `sso.localhost`). Default: the issuer is `http://127.0.0.1:<port>` behind a
   * pretend TLS proxy.
   */
  browserHost?: string;
  /** With `browserHost`: ports of other apps of the parent domain that `return_to` may name. */
  appPorts?: number[];
  /** More options of the portal (e.g. `twoFactor`). */
  portal?: Partial<LoginPortalOptions>;
  /** Send the provider's step-ups to the portal's own `/step-up` page (needs `portal.twoFactor`). */
  stepUpAtPortal?: boolean;
}

/**
 * Starts the portal (sessions, password login, `POST /logout-everywhere`) with `openidProvider` mounted, on a real
 * server, for the provider tests.
 *
 * @example
 * const portal = await startProviderPortal({ store, clients: [{ clientId: 'partner', clientSecret, redirectUris }] });
 */
export async function startProviderPortal(options: ProviderPortalOptions): Promise<ProviderPortal> {
  const passwords = { alice: `alice-${randomBytes(9).toString('hex')}`, bob: `bob-${randomBytes(9).toString('hex')}` };
  const users = fileUserDirectory([
    { id: 'alice', username: 'alice', name: 'Alice', roles: ['editor'], passwordHash: await hashPassword(passwords.alice, FAST_SCRYPT) },
    { id: 'bob', username: 'bob', name: 'Bob', roles: [], passwordHash: await hashPassword(passwords.bob, FAST_SCRYPT) },
  ]);
  const app = express();
  const server: Server = app.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  const port = (server.address() as AddressInfo).port;
  const host = options.browserHost;
  const issuer = `http://${host ?? '127.0.0.1'}:${port}`;
  const keys = options.keys ?? KeySet.generate('ES256', 'op-1');
  const sessions = ssoSession({
    store: options.store,
    secret: SESSION_SECRET,
    ...(host
      ? {
          cookieDomain: 'sso.localhost',
          loginUrl: `${issuer}/login`,
          allowInsecureLocalDevelopment: true,
          allowedRedirectPorts: [port, ...(options.appPorts ?? [])],
        }
      : { cookieDomain: 'example.test', loginUrl: `https://${PORTAL_HOST}/login` }),
  });
  const op = openidProvider({
    issuer,
    keys,
    store: options.store,
    sessions,
    clients: options.clients,
    cookieSecrets: [`cookie-secret-${randomBytes(16).toString('hex')}`],
    // The test clients' back-channel endpoints listen on loopback; backchannel-fetch.test.ts covers the default.
    allowPrivateNetworkBackchannel: true,
    ...(options.stepUpAtPortal ? { stepUpUrl: `${issuer}/step-up` } : {}),
    ...options.provider,
  });
  app.set('trust proxy', 'loopback');
  app.use(securityHeaders());
  app.use(sessions);
  app.use(op);
  app.use(loginPortal({ users, store: options.store, ...options.portal }));
  app.post('/logout-everywhere', requireSession(), async (req, res) => {
    res.json({ ended: await logoutEverywhere(req) });
  });
  app.get('/account', requireSession(), (req, res) => {
    res
      .type('html')
      .send(
        `<!doctype html><title>Account</title><p id="who">${req.user!.id}</p>` +
          '<form method="post" action="/logout-everywhere"><button type="submit">Sign out everywhere</button></form>',
      );
  });
  app.use(errorHandler({ log: false }));
  await op.ready;
  return {
    issuer,
    port,
    op,
    sessions,
    keys,
    passwords,
    async close() {
      await op.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * A minimal browser for protocol tests: one cookie jar (every cookie sent to every URL of the portal, which is
 * enough for one login at a time), redirects followed by hand so a test sees each hop.
 */
export class TestBrowser {
  readonly cookies = new Map<string, string>();

  constructor(private readonly portal: ProviderPortal) {}

  private cookieHeader(): string {
    return [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; ');
  }

  private remember(response: Response): void {
    for (const line of response.headers.getSetCookie()) {
      const [pair = ''] = line.split(';');
      const eq = pair.indexOf('=');
      const name = pair.slice(0, eq);
      const value = pair.slice(eq + 1);
      const expired = /expires=Thu, 01 Jan 1970/i.test(line) || /max-age=0/i.test(line);
      if (expired || value === '') this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }

  /** One request to the portal as a browser would send it (behind the portal's TLS proxy). */
  async request(url: string, init: { method?: string; form?: Record<string, string> } = {}): Promise<Response> {
    const headers: Record<string, string> = { cookie: this.cookieHeader(), 'user-agent': 'TestBrowser' };
    let body: string | undefined;
    if (init.form) {
      headers['content-type'] = 'application/x-www-form-urlencoded';
      body = new URLSearchParams(init.form).toString();
    }
    // As behind the TLS proxy of the portal host: the request's own origin is https on the same host and port.
    headers['x-forwarded-proto'] = 'https';
    if ((init.method ?? 'GET') !== 'GET') headers.origin = new URL(url).origin.replace(/^http:/, 'https:');
    const response = await fetch(url, { method: init.method ?? 'GET', headers, redirect: 'manual', ...(body ? { body } : {}) });
    this.remember(response);
    return response;
  }

  /** Signs in on the portal with a password (the shared parent-domain session). */
  async signIn(username: string): Promise<void> {
    const response = await this.request(`${this.portal.issuer}/login`, {
      method: 'POST',
      form: { username, password: this.portal.passwords[username] ?? '', return_to: '' },
    });
    if (response.status !== 302 && response.status !== 303) throw new Error(`sign-in failed: ${response.status} ${await response.text()}`);
  }

  /**
   * Follows redirects from `url` while they stay on the portal; returns the first URL elsewhere (the client's
   * redirect URI with the code, or the portal login page) and the last response.
   */
  async follow(
    url: string,
    init: { method?: string; form?: Record<string, string> } = {},
  ): Promise<{ location: string; response: Response }> {
    let response = await this.request(url, init);
    let location = url;
    for (let hop = 0; hop < 10; hop += 1) {
      const next = response.headers.get('location');
      if (!next || response.status < 300 || response.status >= 400) return { location, response };
      // The TLS proxy's https URLs of the portal are this server's http ones.
      location = new URL(next, location).href.replace(this.portal.issuer.replace(/^http:/, 'https:'), this.portal.issuer);
      if (!location.startsWith(this.portal.issuer)) return { location, response };
      response = await this.request(location);
    }
    throw new Error('too many redirects');
  }
}
