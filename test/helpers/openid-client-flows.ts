import type * as OpenidClient from 'openid-client' with { 'resolution-mode': 'import' };
import type { ProviderPortal, TestBrowser } from './openid-provider-harness';

/** The token response openid-client returns, with its `claims()` helper. */
export type TokenResult = OpenidClient.TokenEndpointResponse & OpenidClient.TokenEndpointResponseHelpers;

/** An authorization request openid-client built, with what its callback must be checked against. */
export interface StartedLogin {
  url: URL;
  verifier: string;
  state: string;
  nonce: string;
}

/**
 * openid-client v6 (an independent relying party) pointed at the test portal's provider: discovery, authorization
 * URLs with PKCE S256, and the code exchange after a {@link TestBrowser} followed the redirects.
 *
 * @example
 * const flows = await OpenidClientFlows.load(portal);
 * const { tokens } = await flows.login(await flows.config('partner', secret), browser, redirectUri);
 */
export class OpenidClientFlows {
  private constructor(
    readonly client: typeof OpenidClient,
    private readonly portal: ProviderPortal,
  ) {}

  static async load(portal: ProviderPortal): Promise<OpenidClientFlows> {
    return new OpenidClientFlows(await import('openid-client'), portal);
  }

  async config(clientId: string, secret?: string): Promise<OpenidClient.Configuration> {
    const { client } = this;
    // openid-client sends a secret in the form body unless told otherwise; the provider takes it in the Basic header only.
    const authentication = secret ? client.ClientSecretBasic(secret) : client.None();
    return client.discovery(new URL(this.portal.issuer), clientId, undefined, authentication, {
      execute: [client.allowInsecureRequests],
    });
  }

  async start(config: OpenidClient.Configuration, redirectUri: string, extra: Record<string, string> = {}): Promise<StartedLogin> {
    const { client } = this;
    const verifier = client.randomPKCECodeVerifier();
    const state = client.randomState();
    const nonce = client.randomNonce();
    const url = client.buildAuthorizationUrl(config, {
      redirect_uri: redirectUri,
      scope: 'openid profile email',
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
      nonce,
      ...extra,
    });
    return { url, verifier, state, nonce };
  }

  /** Follows the authorization request in `browser` to the redirect URI; throws when it stops elsewhere. */
  async authorize(browser: TestBrowser, started: StartedLogin, redirectUri: string): Promise<URL> {
    const { location, response } = await browser.follow(started.url.href);
    if (!location.startsWith(redirectUri)) throw new Error(`stopped at ${location}: ${response.status} ${await response.text()}`);
    return new URL(location);
  }

  async exchange(config: OpenidClient.Configuration, callback: URL, started: StartedLogin): Promise<TokenResult> {
    return this.client.authorizationCodeGrant(config, callback, {
      pkceCodeVerifier: started.verifier,
      expectedState: started.state,
      expectedNonce: started.nonce,
    });
  }

  /** The whole code flow: start, follow in the browser, exchange the code. */
  async login(
    config: OpenidClient.Configuration,
    browser: TestBrowser,
    redirectUri: string,
  ): Promise<{ tokens: TokenResult; callback: URL; started: StartedLogin }> {
    const started = await this.start(config, redirectUri);
    const callback = await this.authorize(browser, started, redirectUri);
    const tokens = await this.exchange(config, callback, started);
    return { tokens, callback, started };
  }
}
