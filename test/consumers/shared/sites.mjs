// The two sites every JavaScript consumer runs, given the kit as that consumer imported it (ESM import or require):
// auth.example.test logs the user in, shop.example.test reads the shared session. The test drives them over HTTP.
export async function startSites({ express, kit, label }) {
  const { RedisStore, ssoSession, establishLogin, requireSession, sessionsResource, errorHandler } = kit;
  const store = new RedisStore(process.env.REDIS_URL, { prefix: process.env.STORE_PREFIX });
  const site = () => {
    const app = express();
    // TLS ends at a proxy on this machine (the test sends X-Forwarded-Proto), so Secure cookies see req.secure.
    app.set('trust proxy', 'loopback');
    app.use(express.urlencoded({ extended: false }));
    app.use(
      ssoSession({ store, cookieDomain: 'example.test', secret: process.env.SESSION_SECRET, loginUrl: 'https://auth.example.test/login' }),
    );
    return app;
  };

  const auth = site();
  auth.post('/login', async (req, res, next) => {
    try {
      await establishLogin(req, { source: 'directory:consumers', subject: 'u-1', name: 'Ada', roles: ['admin'], method: 'password' });
      res.redirect(303, req.sso.redirects.sanitize(req.body.return_to));
    } catch (err) {
      next(err);
    }
  });
  const shop = site();
  shop.get('/me', requireSession(), (req, res) => res.json({ id: req.user.id, name: req.user.name, consumer: label }));
  // The kit's own async routes: a refusal must reach the error handler on Express 4 as on 5.
  shop.use('/account', sessionsResource());

  const servers = [auth, shop].map((app) => app.use(errorHandler()).listen(0, '127.0.0.1'));
  await Promise.all(servers.map((server) => new Promise((resolve) => server.once('listening', resolve))));
  console.log(JSON.stringify({ auth: servers[0].address().port, shop: servers[1].address().port }));
  process.once('SIGTERM', () => {
    servers.forEach((server) => server.close());
    store.close().finally(() => process.exit(0));
  });
}
