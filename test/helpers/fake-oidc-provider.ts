import { createHash, generateKeyPairSync, randomBytes, type KeyObject } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadJose } from './jose-tokens';

/** A signing key of the fake provider. */
export interface FakeKey {
  kid: string | undefined;
  privateKey: KeyObject;
  publicKey: KeyObject;
}

/** What the token endpoint knows when it mints an ID token. */
export interface MintContext {
  issuer: string;
  clientId: string;
  nonce: string;
  now: number;
  /** Signs claims with a key of the provider (the first by default) and RS256. */
  sign(claims: Record<string, unknown>, options?: { key?: FakeKey; kid?: string | null; alg?: string }): Promise<string>;
  /** Default claims of a good ID token for the login being completed. */
  claims: Record<string, unknown>;
}

/** How the fake token endpoint answers; tests switch it per case. */
export type TokenEndpointMode = 'ok' | 'status500' | 'html' | 'slow' | 'invalid_grant';

/**
 * A small local HTTP server that acts as an OpenID provider whose ID tokens the test controls (minted with jose),
 * for token-level attacks a real provider would never produce. Authorization redirects straight back with a code;
 * the token endpoint checks client_secret_basic, the code and the PKCE verifier, then mints via {@link idToken}.
 *
 * @example
 * const fake = await startFakeIdp({ clientId: 'shop', clientSecret: 's' });
 * fake.idToken = (ctx) => ctx.sign({ ...ctx.claims, nonce: 'other' });
 */
export interface FakeIdp {
  issuer: string;
  keys: FakeKey[];
  /** Keys published at the JWKS endpoint (default: all of {@link keys}). */
  publishedKeys: FakeKey[] | undefined;
  /** Builds the ID token of the next token response. Default: a good token. */
  idToken: (ctx: MintContext) => Promise<string>;
  /** Builds an ID token for refresh answers; default: refresh answers carry none. */
  refreshIdToken: ((ctx: MintContext) => Promise<string>) | undefined;
  /** Extra members of the token response (e.g. refresh_token). */
  tokenResponse: Record<string, unknown>;
  tokenMode: TokenEndpointMode;
  /** The userinfo answer. Default `{ sub }` of the login. */
  userinfo: Record<string, unknown> | undefined;
  /** Overrides members of the discovery document (e.g. a different `issuer`). */
  discovery: Record<string, unknown>;
  /** Adds `iss` to the authorization response (RFC 9207). Default true. */
  sendIss: boolean;
  sub: string;
  /** Issued with every code grant and the only one the refresh grant accepts. Default none. */
  refreshToken: string | undefined;
  /** Counters. */
  hits: { token: number; refresh: number; jwks: number; discovery: number };
  newKey(kid: string | undefined): FakeKey;
  close(): Promise<void>;
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
  });
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'Content-Type': 'application/json', 'Cache-Control': 'no-store' });
  res.end(JSON.stringify(body));
}

export async function startFakeIdp(options: { clientId: string; clientSecret: string }): Promise<FakeIdp> {
  const jose = await loadJose();
  const codes = new Map<string, { nonce: string; challenge: string; redirectUri: string }>();
  let slowTimer: NodeJS.Timeout | undefined;

  const newKey = (kid: string | undefined): FakeKey => {
    const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    return { kid, privateKey, publicKey };
  };

  const fake: FakeIdp = {
    issuer: '',
    keys: [newKey('fake-1')],
    publishedKeys: undefined,
    idToken: (ctx) => ctx.sign(ctx.claims),
    refreshIdToken: undefined,
    tokenResponse: {},
    tokenMode: 'ok',
    userinfo: undefined,
    discovery: {},
    sendIss: true,
    sub: 'user-42',
    refreshToken: undefined,
    hits: { token: 0, refresh: 0, jwks: 0, discovery: 0 },
    newKey,
    close: async () => {
      if (slowTimer) clearTimeout(slowTimer);
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };

  async function sign(
    claims: Record<string, unknown>,
    signOptions: { key?: FakeKey; kid?: string | null; alg?: string } = {},
  ): Promise<string> {
    const key = signOptions.key ?? fake.keys[0]!;
    const alg = signOptions.alg ?? 'RS256';
    const kid = signOptions.kid === null ? undefined : (signOptions.kid ?? key.kid);
    if (alg === 'none') return new jose.UnsecuredJWT(claims).encode();
    if (alg === 'HS256') {
      return new jose.SignJWT(claims)
        .setProtectedHeader({ alg, ...(kid ? { kid } : {}) })
        .sign(new TextEncoder().encode(options.clientSecret));
    }
    return new jose.SignJWT(claims).setProtectedHeader({ alg, typ: 'JWT', ...(kid ? { kid } : {}) }).sign(key.privateKey);
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', fake.issuer);
    if (url.pathname === '/.well-known/openid-configuration') {
      fake.hits.discovery += 1;
      json(res, 200, {
        issuer: fake.issuer,
        authorization_endpoint: `${fake.issuer}/authorize`,
        token_endpoint: `${fake.issuer}/token`,
        jwks_uri: `${fake.issuer}/jwks`,
        userinfo_endpoint: `${fake.issuer}/userinfo`,
        id_token_signing_alg_values_supported: ['RS256'],
        authorization_response_iss_parameter_supported: fake.sendIss,
        ...fake.discovery,
      });
      return;
    }
    if (url.pathname === '/jwks') {
      fake.hits.jwks += 1;
      const keys = (fake.publishedKeys ?? fake.keys).map((key) => ({
        ...key.publicKey.export({ format: 'jwk' }),
        ...(key.kid ? { kid: key.kid } : {}),
        alg: 'RS256',
        use: 'sig',
      }));
      json(res, 200, { keys });
      return;
    }
    if (url.pathname === '/authorize') {
      const params = url.searchParams;
      const code = randomBytes(16).toString('base64url');
      codes.set(code, {
        nonce: params.get('nonce') ?? '',
        challenge: params.get('code_challenge') ?? '',
        redirectUri: params.get('redirect_uri') ?? '',
      });
      const back = new URL(params.get('redirect_uri') ?? '');
      back.searchParams.set('code', code);
      back.searchParams.set('state', params.get('state') ?? '');
      if (fake.sendIss) back.searchParams.set('iss', fake.issuer);
      res.writeHead(302, { Location: back.href });
      res.end();
      return;
    }
    if (url.pathname === '/token' && req.method === 'POST') {
      fake.hits.token += 1;
      const form = new URLSearchParams(await readBody(req));
      if (fake.tokenMode === 'slow') {
        // Never answers within any sane timeout; the connection is closed at teardown.
        slowTimer = setTimeout(() => json(res, 200, {}), 60_000);
        return;
      }
      if (fake.tokenMode === 'status500') return json(res, 500, { error: 'server_error' });
      if (fake.tokenMode === 'html') {
        res.writeHead(200, { 'Content-Type': 'text/html' });
        res.end('<html>maintenance</html>');
        return;
      }
      const expected = `Basic ${Buffer.from(`${encodeURIComponent(options.clientId)}:${encodeURIComponent(options.clientSecret)}`).toString('base64')}`;
      if (req.headers.authorization !== expected) return json(res, 401, { error: 'invalid_client' });
      if (form.get('grant_type') === 'refresh_token') {
        fake.hits.refresh += 1;
        if (fake.tokenMode === 'invalid_grant' || !fake.refreshToken || form.get('refresh_token') !== fake.refreshToken) {
          return json(res, 400, { error: 'invalid_grant' });
        }
        // No refresh_token in the answer: the client must keep using the one it has.
        const now = Math.floor(Date.now() / 1000);
        const claims = { iss: fake.issuer, sub: fake.sub, aud: options.clientId, exp: now + 300, iat: now };
        const idToken = fake.refreshIdToken
          ? await fake.refreshIdToken({ issuer: fake.issuer, clientId: options.clientId, nonce: '', now, sign, claims })
          : undefined;
        return json(res, 200, {
          access_token: randomBytes(8).toString('hex'),
          token_type: 'Bearer',
          expires_in: 300,
          ...(idToken ? { id_token: idToken } : {}),
        });
      }
      const code = codes.get(form.get('code') ?? '');
      codes.delete(form.get('code') ?? '');
      const verifier = form.get('code_verifier') ?? '';
      if (
        fake.tokenMode === 'invalid_grant' ||
        !code ||
        code.redirectUri !== form.get('redirect_uri') ||
        createHash('sha256').update(verifier).digest('base64url') !== code.challenge
      ) {
        return json(res, 400, { error: 'invalid_grant' });
      }
      const now = Math.floor(Date.now() / 1000);
      const claims = {
        iss: fake.issuer,
        sub: fake.sub,
        aud: options.clientId,
        exp: now + 300,
        iat: now,
        nonce: code.nonce,
        name: 'Fake User',
      };
      const idToken = await fake.idToken({ issuer: fake.issuer, clientId: options.clientId, nonce: code.nonce, now, sign, claims });
      json(res, 200, {
        access_token: randomBytes(8).toString('hex'),
        token_type: 'Bearer',
        expires_in: 300,
        id_token: idToken,
        ...(fake.refreshToken ? { refresh_token: fake.refreshToken } : {}),
        ...fake.tokenResponse,
      });
      return;
    }
    if (url.pathname === '/userinfo') {
      json(res, 200, fake.userinfo ?? { sub: fake.sub });
      return;
    }
    res.writeHead(404);
    res.end();
  }

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => json(res, 500, { error: String(error) }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  fake.issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return fake;
}
