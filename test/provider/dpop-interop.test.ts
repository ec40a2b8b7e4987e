import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express, { type Request, type Response } from 'express';
import type * as OpenidClient from 'openid-client' with { 'resolution-mode': 'import' };
import type * as OAuth from 'oauth4webapi' with { 'resolution-mode': 'import' };
import { errorHandler } from '../../lib/http';
import { requireBearer } from '../../lib/tokens';
import { startProviderPortal, TestBrowser, type ProviderPortal } from '../helpers/openid-provider-harness';
import { clientKey, type ClientKey } from '../helpers/provider-level-three';
import { testRedisStore } from '../helpers/redis';

const REDIRECT = 'https://partner.test/callback';
const NOTES = 'https://notes.example.test/api';

let redis: Awaited<ReturnType<typeof testRedisStore>>;
let portal: ProviderPortal;
let key: ClientKey;
let api: { server: Server; url: string };

beforeAll(async () => {
  redis = await testRedisStore('op-dpop-interop');
  key = await clientKey('ES256');
  // One profile switch: PAR, PKCE S256, DPoP and private_key_jwt for every client.
  portal = await startProviderPortal({
    store: redis.store,
    clients: [{ clientId: 'partner', jwks: { keys: [key.publicJwk] }, redirectUris: [REDIRECT], scopes: ['notes:read'] }],
    provider: { profile: 'fapi2', resources: [{ indicator: NOTES, scopes: ['notes:read', 'notes:write'] }] },
  });
  // The Notes API: the kit's requireBearer, trusting the provider's keys for its own resource indicator only.
  const app = express();
  app.get(
    '/notes',
    requireBearer({
      jwksUri: `${portal.issuer}/oidc/jwks`,
      algorithms: ['ES256'],
      issuer: portal.issuer,
      audience: NOTES,
      dpop: { mode: 'required', replayStore: redis.store },
    }),
    (req: Request, res: Response) => {
      res.json({ sub: req.auth?.payload.sub, scope: req.auth?.payload.scope });
    },
  );
  app.use(errorHandler({ log: false }));
  const server = app.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  api = { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/notes` };
});

afterAll(async () => {
  api?.server.closeAllConnections();
  await new Promise<void>((resolve) => (api ? api.server.close(() => resolve()) : resolve()));
  await portal?.close();
  await redis?.cleanup();
});

async function signedIn(): Promise<TestBrowser> {
  const browser = new TestBrowser(portal);
  await browser.signIn('alice');
  return browser;
}

describe("a partner app on the provider's FAPI 2.0 profile, then at the kit's API", () => {
  it('openid-client 6: PAR + private_key_jwt + DPoP, and its DPoP-bound token reaches requireBearer', async () => {
    const client: typeof OpenidClient = await import('openid-client');
    const config = await client.discovery(
      new URL(portal.issuer),
      'partner',
      undefined,
      client.PrivateKeyJwt({ key: key.privateKey as never, kid: key.kid }),
      {
        execute: [client.allowInsecureRequests],
      },
    );
    const dpop = client.getDPoPHandle(config, await client.randomDPoPKeyPair('ES256'));
    const verifier = client.randomPKCECodeVerifier();
    const state = client.randomState();
    const url = await client.buildAuthorizationUrlWithPAR(
      config,
      {
        redirect_uri: REDIRECT,
        scope: 'openid notes:read',
        code_challenge: await client.calculatePKCECodeChallenge(verifier),
        code_challenge_method: 'S256',
        state,
      },
      { DPoP: dpop },
    );
    expect(url.searchParams.get('request_uri')).toMatch(/^urn:ietf:params:oauth:request_uri:/);
    const { location } = await (await signedIn()).follow(url.href);
    const tokens = await client.authorizationCodeGrant(
      config,
      new URL(location),
      { pkceCodeVerifier: verifier, expectedState: state },
      undefined,
      {
        DPoP: dpop,
      },
    );
    expect(tokens.token_type.toLowerCase()).toBe('dpop');
    const response = await client.fetchProtectedResource(config, tokens.access_token, new URL(api.url), 'GET', undefined, undefined, {
      DPoP: dpop,
    });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ sub: 'directory:local|alice', scope: 'notes:read' });
    // The same token without its proof, as a stolen Bearer token, is refused.
    const stolen = await fetch(api.url, { headers: { authorization: `Bearer ${tokens.access_token}` } });
    expect(stolen.status).toBe(401);
  });

  it('oauth4webapi: PAR + private_key_jwt + DPoP, and its DPoP-bound token reaches requireBearer', async () => {
    const oauth: typeof OAuth = await import('oauth4webapi');
    const insecure = { [oauth.allowInsecureRequests]: true };
    const issuer = new URL(portal.issuer);
    const as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, insecure));
    const client = { client_id: 'partner' };
    const clientAuth = oauth.PrivateKeyJwt({ key: key.privateKey as never, kid: key.kid });
    const DPoP = oauth.DPoP({}, await oauth.generateKeyPair('ES256'));
    const verifier = oauth.generateRandomCodeVerifier();
    const state = oauth.generateRandomState();
    const pushed = await oauth.pushedAuthorizationRequest(
      as,
      client,
      clientAuth,
      {
        response_type: 'code',
        redirect_uri: REDIRECT,
        scope: 'openid notes:read',
        code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
        code_challenge_method: 'S256',
        state,
      },
      { DPoP, ...insecure },
    );
    const { request_uri: requestUri } = await oauth.processPushedAuthorizationResponse(as, client, pushed);
    const authorize = new URL(as.authorization_endpoint!);
    authorize.search = new URLSearchParams({ client_id: 'partner', request_uri: requestUri }).toString();
    const { location } = await (await signedIn()).follow(authorize.href);
    const params = oauth.validateAuthResponse(as, client, new URL(location), state);
    const response = await oauth.authorizationCodeGrantRequest(as, client, clientAuth, params, REDIRECT, verifier, { DPoP, ...insecure });
    const tokens = await oauth.processAuthorizationCodeResponse(as, client, response);
    expect(tokens.token_type).toBe('dpop');
    const notes = await oauth.protectedResourceRequest(tokens.access_token, 'GET', new URL(api.url), undefined, undefined, {
      DPoP,
      ...insecure,
    });
    expect(notes.status).toBe(200);
    expect(await notes.json()).toEqual({ sub: 'directory:local|alice', scope: 'notes:read' });
  });
});
