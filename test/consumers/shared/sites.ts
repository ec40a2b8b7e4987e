// The two sites every TypeScript consumer runs, type-checked under that consumer's settings: auth.example.test logs
// the user in, shop.example.test reads the shared session. The test drives them over HTTP.
import type { AddressInfo } from 'node:net';
import express, { type Express, type NextFunction, type Request, type Response } from 'express';
import {
  errorHandler,
  establishLogin,
  RedisStore,
  requireSession,
  sessionsResource,
  ssoSession,
  type LoginUser,
  type SessionUser,
  type SsoSessionOptions,
} from 'express-sso-kit';

export interface Sites {
  auth: Express;
  shop: Express;
  /** Listens on free ports, prints them as one JSON line, and closes on SIGTERM. */
  start(): Promise<void>;
}

const ada: LoginUser = { source: 'directory:consumers', subject: 'u-1', name: 'Ada', roles: ['admin'], method: 'password' };

export function sites(label: string): Sites {
  const store = new RedisStore(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', { prefix: process.env.STORE_PREFIX ?? 'consumer:' });
  const options: SsoSessionOptions = {
    store,
    cookieDomain: 'example.test',
    secret: process.env.SESSION_SECRET ?? '',
    loginUrl: 'https://auth.example.test/login',
  };
  const site = (): Express => {
    const app = express();
    // TLS ends at a proxy on this machine (the test sends X-Forwarded-Proto), so Secure cookies see req.secure.
    app.set('trust proxy', 'loopback');
    app.use(express.urlencoded({ extended: false }));
    app.use(ssoSession(options));
    return app;
  };
  const auth = site();
  auth.post('/login', async (req: Request, res: Response, next: NextFunction) => {
    try {
      await establishLogin(req, ada);
      res.redirect(303, req.sso!.redirects.sanitize(req.body.return_to));
    } catch (err) {
      next(err);
    }
  });
  const shop = site();
  shop.get('/me', requireSession(), (req: Request, res: Response) => {
    // req.user is Express.User, which carries the kit's session user fields.
    const user: SessionUser | undefined = req.user;
    res.json({ id: user?.id, name: req.user?.name, consumer: label });
  });
  // The kit's own async routes: a refusal must reach the error handler on Express 4 as on 5.
  shop.use('/account', sessionsResource());

  async function start(): Promise<void> {
    const servers = [auth, shop].map((app) => app.use(errorHandler()).listen(0, '127.0.0.1'));
    await Promise.all(servers.map((server) => new Promise((resolve) => server.once('listening', resolve))));
    const [authPort, shopPort] = servers.map((server) => (server.address() as AddressInfo).port);
    console.log(JSON.stringify({ auth: authPort, shop: shopPort }));
    process.once('SIGTERM', () => {
      servers.forEach((server) => server.close());
      void store.close().finally(() => process.exit(0));
    });
  }
  return { auth, shop, start };
}
