import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { generateKeyPairSync, randomBytes, type JsonWebKey } from 'node:crypto';
import type Provider from 'oidc-provider' with { 'resolution-mode': 'import' };

/** A client registered at the test provider. */
export interface TestIdpClient {
  clientId: string;
  clientSecret: string;
  redirectUris: string[];
  postLogoutRedirectUris?: string[];
  backchannelLogoutUri?: string;
  /** Default `client_secret_basic`. */
  tokenEndpointAuthMethod?: 'client_secret_basic' | 'client_secret_post';
}

export interface TestIdpOptions {
  clients: TestIdpClient[];
  /** Accounts by `sub`, with the claims the provider releases (name, email, roles, …). Default: alice and bob. */
  accounts?: Record<string, Record<string, unknown>>;
  /** Access token lifetime in seconds. Default 3600. */
  accessTokenTtlSeconds?: number;
}

export interface TestIdp {
  /** `http://127.0.0.1:<port>` */
  issuer: string;
  /** The running oidc-provider instance (replaced by {@link rotateSigningKey}). */
  provider: Provider;
  /**
   * The account the next interactive logins complete as, and what the provider then says of how the user
   * authenticated (`acr`, `amr` in the ID token); none by default, as many providers send neither.
   */
  loginAs(sub: string, authentication?: { acr?: string; amr?: string[] }): void;
  /** Successful token-endpoint calls so far, by grant type. */
  grants: Record<string, number>;
  /** Delays every token-endpoint request by this many milliseconds (0 by default), to make calls overlap. */
  tokenDelayMs: number;
  /** The current private signing key (RS256), for minting tokens the provider would have minted. */
  signingKey: TestSigningKey;
  /** Replaces the provider by one with a new signing key; returns the new kid. Sessions at the provider are kept. */
  rotateSigningKey(): Promise<string>;
  close(): Promise<void>;
}

const DEFAULT_ACCOUNTS: Record<string, Record<string, unknown>> = {
  alice: { name: 'Alice Example', email: 'alice@example.test', email_verified: true, roles: ['admin', 'editor'] },
  bob: { name: 'Bob Example', email: 'bob@example.test', email_verified: true, roles: ['viewer'] },
};

/** A private RSA signing key as a JWK with a fresh kid. */
export type TestSigningKey = JsonWebKey & { kid: string; alg: 'RS256'; use: 'sig' };

function newSigningKey(): TestSigningKey {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { ...privateKey.export({ format: 'jwk' }), kid: `k-${randomBytes(6).toString('hex')}`, alg: 'RS256', use: 'sig' };
}

/**
 * A real OpenID provider (`oidc-provider` v9) running in-process on 127.0.0.1 for tests and the demo.
 *
 * - No login UI: the interaction route completes the login programmatically as the account chosen with
 *   {@link TestIdp.loginAs} (or the `login_hint`, when it names a known account). Consent is granted automatically.
 * - Refresh tokens are issued on every code grant (no `offline_access` dance).
 * - Back-channel logout is enabled; clients may register `backchannel_logout_uri`.
 * - {@link TestIdp.rotateSigningKey} replaces the provider (same port, same in-memory sessions) with one signing
 *   with a fresh key, as a key rotation looks to a relying party (new `kid`, old one gone from the JWKS).
 * - {@link TestIdp.grants} counts successful token-endpoint calls per grant type.
 *
 * @example
 * const idp = await startTestIdp({ clients: [{ clientId: 'shop', clientSecret: 's3cret', redirectUris: [cb] }] });
 * idp.loginAs('alice');
 * // … drive the login over HTTP …
 * await idp.close();
 */
export async function startTestIdp(options: TestIdpOptions): Promise<TestIdp> {
  const warn = console.warn;
  // oidc-provider warns at load on a Node release outside its LTS lines (Node 26 releases from before 26 became LTS
  // among them); the warning changes nothing in what it does.
  console.warn = () => undefined;
  const { default: ProviderClass } = await import('oidc-provider').finally(() => {
    console.warn = warn;
  });
  const accounts = options.accounts ?? DEFAULT_ACCOUNTS;
  let currentAccount = Object.keys(accounts)[0] ?? 'alice';
  let currentAuthentication: { acr?: string; amr?: string[] } = {};
  const grants: Record<string, number> = {};
  let signingKey = newSigningKey();
  let issuer = '';
  let provider: Provider;
  let callback: (req: IncomingMessage, res: ServerResponse) => void;

  const build = (): void => {
    // The in-memory adapter warning is expected here: this provider lives only as long as a test file.
    const warn = console.warn;
    console.warn = () => undefined;
    try {
      construct();
    } finally {
      console.warn = warn;
    }
  };

  const construct = (): void => {
    provider = new ProviderClass(issuer, {
      clients: options.clients.map((client) => ({
        client_id: client.clientId,
        client_secret: client.clientSecret,
        redirect_uris: client.redirectUris,
        post_logout_redirect_uris: client.postLogoutRedirectUris ?? [],
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        token_endpoint_auth_method: client.tokenEndpointAuthMethod ?? 'client_secret_basic',
        ...(client.backchannelLogoutUri
          ? { backchannel_logout_uri: client.backchannelLogoutUri, backchannel_logout_session_required: true }
          : {}),
      })),
      jwks: { keys: [signingKey] },
      // Profile claims in the ID token too, so the claims mapping works without userinfo.
      conformIdTokenClaims: false,
      claims: {
        // acr and amr are in ID tokens only when a login says them (loginAs(sub, { acr, amr })); by default neither.
        openid: ['sub', 'acr', 'amr'],
        profile: ['name', 'preferred_username', 'roles'],
        email: ['email', 'email_verified'],
      },
      features: {
        devInteractions: { enabled: false },
        backchannelLogout: { enabled: true },
        rpInitiatedLogout: {
          enabled: true,
          // A bare confirmation page: the provider's hidden xsrf form and a button that submits logout=yes.
          logoutSource: async (ctx, form) => {
            ctx.body = `<!doctype html><html><body>${form}<button form="op.logoutForm" name="logout" value="yes">Log out</button></body></html>`;
          },
          postLogoutSuccessSource: async (ctx) => {
            ctx.body = '<!doctype html><html><body>Logged out</body></html>';
          },
        },
      },
      ttl: {
        AccessToken: options.accessTokenTtlSeconds ?? 3600,
        IdToken: 3600,
        RefreshToken: 86400,
        Grant: 86400,
        Session: 86400,
        Interaction: 600,
      },
      issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
      // First-party test clients: every requested scope is granted without a consent screen.
      loadExistingGrant: async (ctx) => {
        const grantId = ctx.oidc.result?.consent?.grantId || ctx.oidc.session!.grantIdFor(ctx.oidc.client!.clientId);
        if (grantId) return ctx.oidc.provider.Grant.find(grantId);
        const grant = new ctx.oidc.provider.Grant({ clientId: ctx.oidc.client!.clientId, accountId: ctx.oidc.session!.accountId! });
        grant.addOIDCScope([...ctx.oidc.requestParamScopes].join(' '));
        await grant.save();
        return grant;
      },
      findAccount: async (_ctx, sub) => {
        const claims = accounts[sub];
        if (!claims) return undefined;
        return { accountId: sub, claims: async () => ({ sub, ...claims }) };
      },
      interactions: { url: async (_ctx, interaction) => `/interaction/${interaction.uid}` },
    });
    provider.on('grant.success', (ctx) => {
      const type = String(ctx.oidc.params?.grant_type ?? 'unknown');
      grants[type] = (grants[type] ?? 0) + 1;
    });
    callback = provider.callback();
  };

  const interaction = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const details = await provider.interactionDetails(req, res);
    const hint = typeof details.params.login_hint === 'string' ? details.params.login_hint : undefined;
    const accountId = hint && accounts[hint] ? hint : currentAccount;
    await provider.interactionFinished(req, res, { login: { accountId, ...currentAuthentication } }, { mergeWithLastSubmission: false });
  };

  const server: Server = createServer((req, res) => {
    if (req.url === '/token' && idp.tokenDelayMs > 0) {
      req.pause();
      setTimeout(() => {
        req.resume();
        callback(req, res);
      }, idp.tokenDelayMs);
      return;
    }
    if (req.url?.startsWith('/interaction/')) {
      interaction(req, res).catch((error: unknown) => {
        res.statusCode = 500;
        res.end(String(error));
      });
      return;
    }
    callback(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  issuer = `http://127.0.0.1:${port}`;
  build();

  const idp: TestIdp = {
    issuer,
    get provider() {
      return provider;
    },
    loginAs(sub: string, authentication = {}) {
      if (!accounts[sub]) throw new Error(`startTestIdp: unknown account ${sub}`);
      currentAccount = sub;
      currentAuthentication = authentication;
    },
    grants,
    tokenDelayMs: 0,
    get signingKey() {
      return signingKey;
    },
    async rotateSigningKey() {
      signingKey = newSigningKey();
      build();
      return signingKey.kid;
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return idp;
}
