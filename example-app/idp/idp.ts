/**
 * The demo identity provider, playing "a corporate IdP": a separate OpenID provider (`oidc-provider`) with its own
 * password page, on `idp.<domain>`. Its users are the demo directory's accounts; the portal signs them in through
 * OpenID Connect, and the shared `linkAccount` (common/config.ts) maps them onto those accounts.
 */
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import express, { type Express, type NextFunction, type Request, type Response } from 'express';
import { errorHandler, LoginThrottle, type KeyValueStore, type SecurityEvents } from 'express-sso-kit';
import { demoDirectory } from '../common/accounts';
import { origin, portalOidcClient, secretFor, type DemoConfig } from '../common/config';
import { runSite } from '../common/run-site';
import { idpGuards } from './idp-guards';
import { IDP_RP_LOGOUT, IDP_STYLESHEET, IDP_STYLESHEET_PATH, idpNotFound, renderIdpError, renderIdpLoginPage } from './idp-pages';

/**
 * The identity provider's app.
 *
 * @example
 * const idp = await createIdp(readDemoConfig(process.env), new RedisStore(process.env.REDIS_URL!));
 */
export async function createIdp(config: DemoConfig, store: KeyValueStore, events?: SecurityEvents): Promise<Express> {
  const { default: Provider } = await import('oidc-provider');
  const users = demoDirectory();
  const throttle = new LoginThrottle(store, { namespace: 'idp-login-throttle', deviceTokenSecret: secretFor(config, 'idp-device-tokens') });
  const auth = origin(config, 'auth');
  const client = portalOidcClient(config);
  // Made at start-up: a restarted provider has a new key, which the portal's key cache fetches on the next login.
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const signingKey = { ...privateKey.export({ format: 'jwk' }), kid: `demo-${randomBytes(4).toString('hex')}`, alg: 'RS256', use: 'sig' };

  const provider = new Provider(origin(config, 'idp'), {
    clients: [
      {
        client_id: client.clientId,
        client_secret: client.clientSecret,
        redirect_uris: [`${auth}/callback/demo-idp`],
        post_logout_redirect_uris: [`${auth}/login`],
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_basic',
        backchannel_logout_uri: `${auth}/backchannel-logout/demo-idp`,
        backchannel_logout_session_required: true,
      },
    ],
    jwks: { keys: [signingKey as never] },
    cookies: { keys: [secretFor(config, 'idp-cookies')] },
    conformIdTokenClaims: false,
    claims: { openid: ['sub'], profile: ['name', 'preferred_username'] },
    features: { devInteractions: { enabled: false }, backchannelLogout: { enabled: true }, rpInitiatedLogout: IDP_RP_LOGOUT },
    renderError: renderIdpError,
    issueRefreshToken: async (_ctx, registered) => registered.grantTypeAllowed('refresh_token'),
    // A first-party client: the requested scopes are granted without a consent screen.
    loadExistingGrant: async (ctx) => {
      const grantId = ctx.oidc.result?.consent?.grantId || ctx.oidc.session!.grantIdFor(ctx.oidc.client!.clientId);
      if (grantId) return ctx.oidc.provider.Grant.find(grantId);
      const grant = new ctx.oidc.provider.Grant({ clientId: ctx.oidc.client!.clientId, accountId: ctx.oidc.session!.accountId! });
      grant.addOIDCScope([...ctx.oidc.requestParamScopes].join(' '));
      await grant.save();
      return grant;
    },
    findAccount: async (_ctx, sub) => {
      const user = await users.findById(sub);
      if (!user) return undefined;
      return { accountId: sub, claims: async () => ({ sub, name: user.name, preferred_username: sub }) };
    },
    interactions: { url: async (_ctx, interaction) => `/interaction/${interaction.uid}` },
  });
  provider.proxy = true; // behind the front door, which sets X-Forwarded-Proto
  provider.use(idpNotFound);

  const app = express();
  app.set('trust proxy', 'loopback, uniquelocal');
  app.use(idpGuards(origin(config, 'idp'), auth));
  app.get(IDP_STYLESHEET_PATH, function idpStylesheet(_req: Request, res: Response) {
    res.type('text/css').set('Cache-Control', 'public, max-age=3600').send(IDP_STYLESHEET);
  });
  // Express 4 does not pass on a rejected promise (the request would hang, then Node end the process): do it here.
  const caught = (handler: (req: Request, res: Response) => Promise<void>) => (req: Request, res: Response, next: NextFunction) =>
    void handler(req, res).catch(next);
  app.get(
    '/interaction/:uid',
    caught(async function showIdpLogin(req: Request, res: Response) {
      const details = await provider.interactionDetails(req, res);
      res
        .set('Cache-Control', 'no-store')
        .type('html')
        .send(renderIdpLoginPage({ uid: details.uid, clientName: 'the SSO portal' }));
    }),
  );
  app.post(
    '/interaction/:uid/login',
    express.urlencoded({ extended: false, limit: '4kb' }),
    caught(async function submitIdpLogin(req: Request, res: Response) {
      const details = await provider.interactionDetails(req, res);
      const username = typeof req.body?.username === 'string' ? req.body.username : '';
      const password = typeof req.body?.password === 'string' ? req.body.password : '';
      const page = (status: number, error: string) =>
        res
          .status(status)
          .set('Cache-Control', 'no-store')
          .type('html')
          .send(renderIdpLoginPage({ uid: details.uid, clientName: 'the SSO portal', error, username }));
      // Counted before the password is checked, with the portal's policy and counters of its own.
      const decision = await throttle.attempt({ username, address: req.ip ?? '' });
      if (!decision.allowed) {
        res.set('Retry-After', String(decision.retryAfterSeconds));
        page(429, 'Too many failed attempts. Try again later.');
        return;
      }
      const user = await users.verifyPassword(username, password);
      if (!user) {
        page(401, 'Wrong username or password');
        return;
      }
      await throttle.recordSuccess(decision);
      await provider.interactionFinished(req, res, { login: { accountId: user.id } }, { mergeWithLastSubmission: false });
    }),
  );
  app.use(provider.callback());
  // The interaction routes' own failures (an unknown or expired interaction is a 400 of oidc-provider).
  app.use(errorHandler({ html: true, homeUrl: `${auth}/login`, stylesheetUrl: IDP_STYLESHEET_PATH, ...(events ? { events } : {}) }));
  return app;
}

if (require.main === module) runSite('idp', createIdp);
