import { createHash, randomBytes } from 'node:crypto';
import { loadJose, nowSeconds } from './jose-tokens';
import { ProofClient } from './dpop-proofs';
import type { ProviderPortal, TestBrowser } from './openid-provider-harness';

/** Plain data of another realm rebuilt as this realm's objects and arrays. */
function inThisRealm(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(inThisRealm);
  if (
    value !== null &&
    typeof value === 'object' &&
    Object.getPrototypeOf(Object.getPrototypeOf(value)) === null &&
    value.constructor?.name === 'Object'
  ) {
    return Object.fromEntries(Object.entries(value).map(([key, member]) => [key, inThisRealm(member)]));
  }
  return value;
}

// Jest runs each test file in a vm context whose structuredClone is the outer realm's: oidc-provider clones its static
// clients with it and then accepts only JWKs that are plain objects of its own realm (`constructor === Object`).
// Outside Jest there is one realm and nothing to do.
const outerStructuredClone = globalThis.structuredClone;
if (outerStructuredClone({}).constructor !== Object) {
  globalThis.structuredClone = ((value: unknown, options?: Parameters<typeof structuredClone>[1]) =>
    inThisRealm(outerStructuredClone(value, options))) as typeof structuredClone;
}

type JoseKey = Awaited<ReturnType<Awaited<ReturnType<typeof loadJose>>['generateKeyPair']>>['privateKey'];

/** A client's `private_key_jwt` key pair: the private key signs assertions, the public JWK is registered. */
export interface ClientKey {
  alg: 'ES256' | 'PS256' | 'EdDSA';
  kid: string;
  privateKey: JoseKey;
  publicJwk: Record<string, unknown>;
}

export async function clientKey(alg: ClientKey['alg'] = 'ES256'): Promise<ClientKey> {
  const jose = await loadJose();
  const { privateKey, publicKey } = await jose.generateKeyPair(alg, { extractable: true });
  const kid = randomBytes(6).toString('hex');
  return { alg, kid, privateKey, publicJwk: { ...(await jose.exportJWK(publicKey)), kid, alg, use: 'sig' } };
}

/** What a client assertion claims besides the defaults (`undefined` removes a claim). */
export type AssertionClaims = Record<string, unknown>;

/** A PKCE verifier and its S256 challenge. */
export function pkcePair(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

/**
 * A client of the provider speaking the protocol by hand (jose-signed assertions, jose-signed DPoP proofs), so a test
 * can bend any member: pushed authorization requests, the browser hop, the token request.
 *
 * @example
 * const client = new HandClient(portal, 'fapi-app', key, await ProofClient.create());
 * const { tokens } = await client.login(browser, REDIRECT);
 */
export class HandClient {
  constructor(
    readonly portal: ProviderPortal,
    readonly clientId: string,
    /** Without a key, a public client (no client authentication). */
    readonly key: ClientKey | undefined,
    readonly dpop?: ProofClient,
  ) {}

  get tokenEndpoint(): string {
    return `${this.portal.issuer}/oidc/token`;
  }

  get parEndpoint(): string {
    return `${this.portal.issuer}/oidc/request`;
  }

  /** A signed client assertion (RFC 7523): iss = sub = client id, aud the issuer, a fresh jti, 60 s. */
  async assertion(claims: AssertionClaims = {}): Promise<string> {
    if (!this.key) throw new Error('a public client has no key');
    const jose = await loadJose();
    const payload: Record<string, unknown> = {
      iss: this.clientId,
      sub: this.clientId,
      aud: this.portal.issuer,
      jti: randomBytes(16).toString('base64url'),
      iat: nowSeconds(),
      exp: nowSeconds() + 60,
      ...claims,
    };
    for (const [name, value] of Object.entries(payload)) if (value === undefined) delete payload[name];
    return new jose.SignJWT(payload).setProtectedHeader({ alg: this.key.alg, kid: this.key.kid }).sign(this.key.privateKey);
  }

  /** POSTs a form to an endpoint of the provider, authenticated with `assertion` (or a fresh one). */
  async post(url: string, form: Record<string, string>, options: { assertion?: string; dpop?: string } = {}): Promise<Response> {
    const body = new URLSearchParams({
      client_id: this.clientId,
      ...(this.key
        ? {
            client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer',
            client_assertion: options.assertion ?? (await this.assertion()),
          }
        : {}),
      ...form,
    });
    return fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...(options.dpop ? { dpop: options.dpop } : {}) },
      body: body.toString(),
    });
  }

  /** A DPoP proof for a POST to `url`, with this client's DPoP key. */
  async proof(url: string, claims: Record<string, unknown> = {}): Promise<string> {
    if (!this.dpop) throw new Error('this client has no DPoP key');
    return this.dpop.proof({ htm: 'POST', htu: url, claims });
  }

  /** Pushes an authorization request; answers the provider's JSON and status. */
  async push(redirectUri: string, extra: Record<string, string> = {}, options: { assertion?: string } = {}) {
    const pkce = pkcePair();
    const response = await this.post(
      this.parEndpoint,
      {
        response_type: 'code',
        redirect_uri: redirectUri,
        scope: 'openid',
        code_challenge: pkce.challenge,
        code_challenge_method: 'S256',
        state: randomBytes(8).toString('hex'),
        ...extra,
      },
      options,
    );
    return { response, body: (await response.json()) as Record<string, unknown>, verifier: pkce.verifier };
  }

  /** The authorization URL of a pushed request. */
  authorizeUrl(requestUri: string, clientId = this.clientId): string {
    return `${this.portal.issuer}/oidc/auth?${new URLSearchParams({ client_id: clientId, request_uri: requestUri })}`;
  }

  /** Pushes, lets the signed-in browser through the authorization endpoint, and returns the code. */
  async code(browser: TestBrowser, redirectUri: string, extra: Record<string, string> = {}) {
    const pushed = await this.push(redirectUri, extra);
    if (pushed.response.status !== 201) throw new Error(`PAR refused: ${JSON.stringify(pushed.body)}`);
    const { location } = await browser.follow(this.authorizeUrl(String(pushed.body.request_uri)));
    const code = new URL(location).searchParams.get('code');
    if (!code) throw new Error(`no code: ${location}`);
    return { code, verifier: pushed.verifier };
  }

  /** The whole login: PAR, browser, code exchange with a DPoP proof (when the client has a key). */
  async login(browser: TestBrowser, redirectUri: string, extra: Record<string, string> = {}) {
    const { code, verifier } = await this.code(browser, redirectUri, extra);
    const response = await this.post(
      this.tokenEndpoint,
      { grant_type: 'authorization_code', code, redirect_uri: redirectUri, code_verifier: verifier },
      this.dpop ? { dpop: await this.proof(this.tokenEndpoint) } : {},
    );
    return { response, tokens: (await response.json()) as Record<string, string> };
  }
}
