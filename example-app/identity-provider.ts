import { generateKeyPairSync, randomBytes } from 'node:crypto';
import express, { type NextFunction, type Request, type Response, Router } from 'express';
import type Provider from 'oidc-provider' with { 'resolution-mode': 'import' };
import type { LoginThrottle } from '../lib/portal/login-throttle';
import { escapeHtml } from '../lib/portal/portal-pages';
import type { UserDirectory } from '../lib/portal/user-directory';

/** A relying party registered at the demo identity provider. */
export interface DemoOidcClient {
  clientId: string;
  clientSecret: string;
  redirectUris: string[];
  postLogoutRedirectUris?: string[];
  backchannelLogoutUri?: string;
}

/** Options of {@link createDemoIdentityProvider}. */
export interface DemoIdentityProviderOptions {
  /** `http://idp.<domain>:<port>`, the URL browsers use; also the `iss` of its tokens. */
  issuer: string;
  users: UserDirectory;
  /** Brute-force throttling of the provider's password page (the portal's policy, its own counters). */
  throttle: LoginThrottle;
  clients: DemoOidcClient[];
  /** Origins the provider may send the browser back to after its login form (the relying parties' callbacks). */
  formActionSources: string[];
  /** The proxy in front sets X-Forwarded-*; trust it. */
  behindProxy?: boolean;
}

/** The demo's OpenID provider: `oidc-provider` with a small password login page (the portal's user directory). */
export interface DemoIdentityProvider {
  provider: Provider;
  router: Router;
}

const PAGE_CSS = `body { font-family: system-ui, sans-serif; background: #1f2937; color: #111827; margin: 0; }
main { max-width: 26rem; margin: 4rem auto; background: #fff; padding: 2rem; border-radius: 0.5rem; }
label { display: block; font-weight: 600; margin-top: 1rem; }
input { width: 100%; box-sizing: border-box; padding: 0.5rem; font-size: 1rem; }
button { margin-top: 1.2rem; padding: 0.55rem 1.1rem; font-size: 1rem; background: #7c3aed; color: #fff; border: 0; border-radius: 0.25rem; }
:focus-visible { outline: 3px solid #f59e0b; outline-offset: 2px; }
.alert { background: #fee2e2; color: #7f1d1d; padding: 0.75rem; }
`;

function loginPage(uid: string, clientId: string, error?: string, username = ''): string {
  const invalid = error ? ' aria-invalid="true" aria-describedby="idp-error"' : '';
  return (
    '<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">' +
    '<title>Demo identity provider</title><link rel="stylesheet" href="/idp-assets/idp.css"></head><body><main>' +
    `<h1>Demo identity provider</h1><p>Sign in to continue to <strong>${escapeHtml(clientId)}</strong>.</p>` +
    (error ? `<p class="alert" role="alert" id="idp-error">${escapeHtml(error)}</p>` : '') +
    `<form method="post" action="/interaction/${escapeHtml(uid)}/login">` +
    `<label for="idp-username">Username</label><input id="idp-username" name="username" autocomplete="username" required value="${escapeHtml(username)}"${invalid}>` +
    `<label for="idp-password">Password</label><input id="idp-password" name="password" type="password" autocomplete="current-password" required${invalid}>` +
    '<button type="submit">Sign in at the identity provider</button></form></main></body></html>\n'
  );
}

/**
 * Builds the demo identity provider. Its Router serves the provider's endpoints and the login interaction; mount it
 * on the `idp.<domain>` host.
 *
 * @example
 * const idp = await createDemoIdentityProvider({ issuer: 'http://idp.sso.localhost:8080', users, clients, formActionSources });
 */
export async function createDemoIdentityProvider(options: DemoIdentityProviderOptions): Promise<DemoIdentityProvider> {
  const { default: ProviderClass } = await import('oidc-provider');
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const signingKey = { ...privateKey.export({ format: 'jwk' }), kid: `demo-${randomBytes(4).toString('hex')}`, alg: 'RS256', use: 'sig' };
  const users = options.users;

  const provider = new ProviderClass(options.issuer, {
    clients: options.clients.map((client) => ({
      client_id: client.clientId,
      client_secret: client.clientSecret,
      redirect_uris: client.redirectUris,
      post_logout_redirect_uris: client.postLogoutRedirectUris ?? [],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_basic',
      ...(client.backchannelLogoutUri
        ? { backchannel_logout_uri: client.backchannelLogoutUri, backchannel_logout_session_required: true }
        : {}),
    })),
    jwks: { keys: [signingKey as never] },
    cookies: { keys: [randomBytes(32).toString('base64url')] },
    conformIdTokenClaims: false,
    claims: { openid: ['sub'], profile: ['name', 'preferred_username', 'roles'] },
    features: {
      devInteractions: { enabled: false },
      backchannelLogout: { enabled: true },
      rpInitiatedLogout: { enabled: true },
    },
    issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
    // First-party demo clients: the requested scopes are granted without a consent screen.
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
      return { accountId: sub, claims: async () => ({ sub, name: user.name, preferred_username: sub, roles: user.roles }) };
    },
    interactions: { url: async (_ctx, interaction) => `/interaction/${interaction.uid}` },
  });
  provider.proxy = options.behindProxy ?? false;

  const router = Router();
  const formAction = ["'self'", ...options.formActionSources].join(' ');
  router.use(function idpPageHeaders(_req: Request, res: Response, next: NextFunction) {
    // The login form posts here, and the provider then redirects the browser to the relying party's callback;
    // Chrome checks form-action on that whole redirect chain, so the callback origins are listed.
    res.setHeader(
      'Content-Security-Policy',
      `default-src 'self'; style-src 'self'; script-src 'self'; form-action ${formAction}; frame-ancestors 'none'; base-uri 'none'; object-src 'none'`,
    );
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.setHeader('Referrer-Policy', 'same-origin');
    next();
  });
  router.get('/idp-assets/idp.css', function idpStylesheet(_req: Request, res: Response) {
    res.type('text/css').setHeader('Cache-Control', 'public, max-age=3600');
    res.send(PAGE_CSS);
  });
  router.get('/interaction/:uid', async function showIdpLogin(req: Request, res: Response) {
    const details = await provider.interactionDetails(req, res);
    res.setHeader('Cache-Control', 'no-store');
    res.type('html').send(loginPage(details.uid, String(details.params.client_id ?? '')));
  });
  router.post(
    '/interaction/:uid/login',
    express.urlencoded({ extended: false, limit: '4kb' }),
    async function submitIdpLogin(req: Request, res: Response) {
      const details = await provider.interactionDetails(req, res);
      const username = typeof req.body?.username === 'string' ? req.body.username : '';
      const password = typeof req.body?.password === 'string' ? req.body.password : '';
      const decision = await options.throttle.attempt({ username, address: req.ip ?? '' });
      if (!decision.allowed) {
        res.status(429).set({ 'Cache-Control': 'no-store', 'Retry-After': String(decision.retryAfterSeconds) });
        res
          .type('html')
          .send(loginPage(details.uid, String(details.params.client_id ?? ''), 'Too many failed attempts. Try again later.', username));
        return;
      }
      const user = await users.verifyPassword(username, password);
      if (!user) {
        res.status(401).setHeader('Cache-Control', 'no-store');
        res.type('html').send(loginPage(details.uid, String(details.params.client_id ?? ''), 'Wrong username or password', username));
        return;
      }
      await options.throttle.recordSuccess(decision);
      await provider.interactionFinished(req, res, { login: { accountId: user.id } }, { mergeWithLastSubmission: false });
    },
  );
  router.use(provider.callback());
  return { provider, router };
}
