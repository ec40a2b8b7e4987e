import { randomBytes } from 'node:crypto';
import type { Server } from 'node:http';
import express, { type NextFunction, type Request, type Response } from 'express';
import request from 'supertest';
import { BadRequestError, errorHandler, HttpError } from '../../../lib/http';
import {
  DpopError,
  dpopTokenError,
  DpopVerifier,
  KeySet,
  RefreshTokenError,
  requireBearer,
  tokenRequestProof,
  TokenService,
  type IssuedTokens,
} from '../../../lib/tokens';
import { dpopHeader } from '../../../lib/tokens/dpop/dpop-request';
import { ProofClient } from '../../helpers/dpop-proofs';
import { loadJose } from '../../helpers/jose-tokens';
import { LoopbackServers } from '../../helpers/loopback-servers';
import { expectProblem } from '../../helpers/problem';
import { testRedisStore } from '../../helpers/redis';

const issuer = 'https://auth.example.test';
const audience = 'orders-api';

let redis: Awaited<ReturnType<typeof testRedisStore>>;
let tokens: TokenService;
const servers = new LoopbackServers();
let server: Server;
let base: string;

/** RFC 6749 §5.2: OAuth clients read token endpoint errors as application/json with an `error` member. */
function oauthError(res: Response, error: HttpError): void {
  res.status(error.status).set(error.headers).set('Cache-Control', 'no-store').json({ error: error.code, error_description: error.detail });
}

/**
 * A token endpoint of the kit's building blocks: a "login" grant standing for any grant that starts a family, and
 * the refresh grant; `spa` is a public client, `backend` a confidential one (its authentication left out here).
 */
function tokenEndpoint(dpop: DpopVerifier) {
  return async (req: Request, res: Response, next: NextFunction) => {
    try {
      const clientId = String(req.body.client_id);
      const proof = await tokenRequestProof(req, dpop, { required: tokens.publicClients.has(clientId) });
      const dpopJkt = proof?.jkt;
      let issued: IssuedTokens;
      if (req.body.grant_type === 'urn:example:login') {
        issued = await tokens.issueTokens({ subject: 'alice', audience, clientId, scope: 'orders:read', ...(dpopJkt ? { dpopJkt } : {}) });
      } else if (req.body.grant_type === 'refresh_token') {
        issued = await tokens.redeemRefreshToken(String(req.body.refresh_token), { clientId, audience, ...(dpopJkt ? { dpopJkt } : {}) });
      } else throw new BadRequestError({ code: 'unsupported_grant_type' });
      res.set('Cache-Control', 'no-store').json({
        access_token: issued.accessToken.token,
        token_type: issued.accessToken.tokenType,
        expires_in: issued.accessToken.expiresIn,
        refresh_token: issued.refreshToken.token,
      });
    } catch (error) {
      const answer =
        error instanceof DpopError
          ? dpopTokenError(error)
          : error instanceof RefreshTokenError
            ? new BadRequestError({ code: 'invalid_grant' })
            : error;
      if (answer instanceof HttpError && answer.status < 500) oauthError(res, answer);
      else next(answer);
    }
  };
}

beforeAll(async () => {
  redis = await testRedisStore('dpop-token-endpoint');
  tokens = new TokenService({ keys: KeySet.generate('ES256'), issuer, store: redis.store, publicClients: ['spa'] });
  const dpop = new DpopVerifier({ replayStore: redis.store, nonce: { secret: randomBytes(32) } });
  const app = express();
  app.post('/token', express.urlencoded({ extended: false }), tokenEndpoint(dpop));
  app.use('/api', requireBearer({ tokenService: tokens, audience, dpop: 'allowed' }));
  app.get('/api/orders', (req, res) => {
    res.json({ sub: req.auth?.payload.sub });
  });
  app.use(errorHandler({ log: false }));
  ({ server, base } = await servers.listen(app));
});

afterAll(async () => {
  await servers.closeAll();
  await redis.cleanup();
});

async function openidClient(clientId: string) {
  const oidc = await import('openid-client');
  const config = new oidc.Configuration({ issuer, token_endpoint: `${base}/token` }, clientId, undefined, oidc.None());
  oidc.allowInsecureRequests(config);
  const keyPair = await oidc.randomDPoPKeyPair('ES256', { extractable: true });
  const jose = await loadJose();
  const jkt = await jose.calculateJwkThumbprint(await jose.exportJWK(keyPair.publicKey));
  return { oidc, config, handle: oidc.getDPoPHandle(config, keyPair), jkt };
}

/** A token request signed by `signer` (a fresh nonce fetched first, as a client does after use_dpop_nonce). */
async function tokenRequest(signer: ProofClient | undefined, body: Record<string, string>) {
  const call = request(server).post('/token').type('form').send(body);
  if (signer === undefined) return call;
  const asked = await request(server)
    .post('/token')
    .type('form')
    .set('DPoP', await signer.proof({ htm: 'POST', htu: `${base}/token` }))
    .send(body);
  const nonce = asked.headers['dpop-nonce'] as string;
  return request(server)
    .post('/token')
    .type('form')
    .set('DPoP', await signer.proof({ htm: 'POST', htu: `${base}/token`, nonce }))
    .send(body);
}

describe('a token endpoint with tokenRequestProof and TokenService, driven by openid-client 6', () => {
  it('issues a DPoP-bound pair after the nonce round trip, which the API accepts only with proofs of that key, and refreshes it with the same key', async () => {
    const { oidc, config, handle, jkt } = await openidClient('spa');
    const issued = await oidc.genericGrantRequest(config, 'urn:example:login', {}, { DPoP: handle });
    expect(issued.token_type).toBe('dpop');
    const jose = await loadJose();
    expect(jose.decodeJwt(issued.access_token).cnf).toEqual({ jkt });
    const orders = new URL(`${base}/api/orders`);
    const res = await oidc.fetchProtectedResource(config, issued.access_token, orders, 'GET', undefined, undefined, { DPoP: handle });
    expect(await res.json()).toEqual({ sub: 'alice' });
    const stolen = await request(server).get('/api/orders').set('Authorization', `Bearer ${issued.access_token}`);
    expectProblem(stolen, 401, 'invalid_token');

    const refreshed = await oidc.refreshTokenGrant(config, issued.refresh_token!, {}, { DPoP: handle });
    expect(refreshed.token_type).toBe('dpop');
    expect(jose.decodeJwt(refreshed.access_token).cnf).toEqual({ jkt });
    expect(
      (await oidc.fetchProtectedResource(config, refreshed.access_token, orders, 'GET', undefined, undefined, { DPoP: handle })).status,
    ).toBe(200);
  });

  it('refuses to refresh a bound family with a proof of another key, and revokes its grant', async () => {
    const { oidc, config, handle } = await openidClient('spa');
    const issued = await oidc.genericGrantRequest(config, 'urn:example:login', {}, { DPoP: handle });
    const thief = await ProofClient.create('ES256');
    const res = await tokenRequest(thief, { grant_type: 'refresh_token', refresh_token: issued.refresh_token!, client_id: 'spa' });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_grant');
    // The token leaked: its grant, the owner's access token with it, is over.
    const after = await oidc
      .fetchProtectedResource(config, issued.access_token, new URL(`${base}/api/orders`), 'GET', undefined, undefined, { DPoP: handle })
      .then(
        (response) => response.status,
        (error: { status?: number; cause?: { status?: number } }) => error.status ?? error.cause?.status,
      );
    expect(after).toBe(401);
  });
});

describe('public and confidential clients', () => {
  it('refuses a token request of a public client without a proof (invalid_dpop_proof), at the endpoint and in TokenService itself', async () => {
    const res = await tokenRequest(undefined, { grant_type: 'urn:example:login', client_id: 'spa' });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ error: 'invalid_dpop_proof' });
    await expect(tokens.issueTokens({ subject: 'alice', audience, clientId: 'spa' })).rejects.toMatchObject({ reason: 'proof_missing' });
    const client = await ProofClient.create('ES256');
    const bound = await tokens.issueTokens({ subject: 'alice', audience, clientId: 'spa', dpopJkt: client.jkt });
    await expect(tokens.redeemRefreshToken(bound.refreshToken.token, { clientId: 'spa', audience })).rejects.toMatchObject({
      reason: 'proof_missing',
    });
    // The refusal came before the token was consumed: with the proof it still rotates.
    await expect(
      tokens.redeemRefreshToken(bound.refreshToken.token, { clientId: 'spa', audience, dpopJkt: client.jkt }),
    ).resolves.toBeDefined();
  });

  it('gives a confidential client without a proof a Bearer pair, and binds its next access token when a refresh carries a proof', async () => {
    const issued = await tokenRequest(undefined, { grant_type: 'urn:example:login', client_id: 'backend' });
    expect(issued.status).toBe(200);
    expect(issued.body.token_type).toBe('Bearer');
    const client = await ProofClient.create('EdDSA');
    const refreshed = await tokenRequest(client, {
      grant_type: 'refresh_token',
      refresh_token: issued.body.refresh_token,
      client_id: 'backend',
    });
    expect(refreshed.body.token_type).toBe('DPoP');
    const jose = await loadJose();
    expect(jose.decodeJwt(refreshed.body.access_token).cnf).toEqual({ jkt: client.jkt });
    // The family itself stays unbound: the next refresh needs no proof.
    const again = await tokenRequest(undefined, {
      grant_type: 'refresh_token',
      refresh_token: refreshed.body.refresh_token,
      client_id: 'backend',
    });
    expect(again.body.token_type).toBe('Bearer');
  });

  it('binds the family of a confidential client that sent a proof: a refresh without one is refused', async () => {
    const client = await ProofClient.create('ES256');
    const issued = await tokenRequest(client, { grant_type: 'urn:example:login', client_id: 'backend' });
    expect(issued.body.token_type).toBe('DPoP');
    const bare = await tokenRequest(undefined, {
      grant_type: 'refresh_token',
      refresh_token: issued.body.refresh_token,
      client_id: 'backend',
    });
    expect(bare.body).toMatchObject({ error: 'invalid_grant' });
  });
});

describe('tokenRequestProof', () => {
  it('answers a bad proof with 400 invalid_dpop_proof and a missing nonce with 400 use_dpop_nonce and the nonce', async () => {
    const client = await ProofClient.create('ES256');
    const noNonce = await request(server)
      .post('/token')
      .type('form')
      .set('DPoP', await client.proof({ htm: 'POST', htu: `${base}/token` }))
      .send({ grant_type: 'urn:example:login', client_id: 'spa' });
    expect(noNonce.status).toBe(400);
    expect(noNonce.body).toEqual({ error: 'use_dpop_nonce', error_description: expect.any(String) });
    const nonce = noNonce.headers['dpop-nonce'] as string;
    expect(nonce).toBeTruthy();
    for (const shape of [
      { htm: 'GET', htu: `${base}/token` },
      { htm: 'POST', htu: `${base}/other` },
    ]) {
      const res = await request(server)
        .post('/token')
        .type('form')
        .set('DPoP', await client.proof({ ...shape, nonce }))
        .send({ grant_type: 'urn:example:login', client_id: 'spa' });
      expect([res.status, res.body.error]).toEqual([400, 'invalid_dpop_proof']);
    }
    const proof = await client.proof({ htm: 'POST', htu: `${base}/token`, nonce });
    const send = () =>
      request(server).post('/token').type('form').set('DPoP', proof).send({ grant_type: 'urn:example:login', client_id: 'spa' });
    expect((await send()).status).toBe(200);
    expect((await send()).body.error).toBe('invalid_dpop_proof');
  });

  it('counts DPoP headers in the raw request: two are proof_multiple (RFC 9449 §4.3 check 1), whatever Node joined them into', async () => {
    const seen: Request[] = [];
    const { server: probe } = await servers.listen((req, res) => {
      seen.push(req as Request);
      res.end();
    });
    const client = await ProofClient.create('ES256');
    const proof = await client.proof({ htm: 'GET', htu: 'http://127.0.0.1/' });
    await request(probe)
      .get('/')
      .set('DPoP', [proof, proof] as never);
    await request(probe).get('/').set('DPoP', proof);
    expect(() => dpopHeader(seen[0]!)).toThrow(expect.objectContaining({ reason: 'proof_multiple', code: 'invalid_dpop_proof' }));
    expect(dpopHeader(seen[1]!)).toBe(proof);
  });

  it('refuses options it does not know', async () => {
    const dpop = new DpopVerifier({ replayStore: redis.store });
    await expect(tokenRequestProof({ headers: {} } as Request, dpop, { require: true } as never)).rejects.toThrow(
      /did you mean "required"/,
    );
  });
});

describe('TokenService binding', () => {
  it('signs cnf.jkt into a bound access token, types it DPoP, and refuses a dpopJkt that is no thumbprint', async () => {
    const client = await ProofClient.create('ES256');
    const jose = await loadJose();
    const bound = tokens.issueAccessToken({ subject: 'alice', audience, clientId: 'backend', dpopJkt: client.jkt });
    expect(bound.tokenType).toBe('DPoP');
    expect(jose.decodeProtectedHeader(bound.token).typ).toBe('at+jwt');
    expect(jose.decodeJwt(bound.token).cnf).toEqual({ jkt: client.jkt });
    expect(tokens.issueAccessToken({ subject: 'alice', audience, clientId: 'backend' }).tokenType).toBe('Bearer');
    expect(() => tokens.issueAccessToken({ subject: 'alice', audience, clientId: 'backend', dpopJkt: 'not-a-thumbprint' })).toThrow(
      /RFC 7638/,
    );
    expect(() => tokens.issueIdToken({ subject: 'alice', audience: 'shop', claims: { cnf: { jkt: client.jkt } } })).toThrow(/cnf/);
  });

  it('keeps the family bound across rotations: every refresh needs the same key', async () => {
    const client = await ProofClient.create('ES256');
    let pair = await tokens.issueTokens({ subject: 'alice', audience, clientId: 'backend', dpopJkt: client.jkt });
    for (let rotation = 0; rotation < 3; rotation += 1) {
      pair = await tokens.redeemRefreshToken(pair.refreshToken.token, { clientId: 'backend', audience, dpopJkt: client.jkt });
      expect(pair.refreshToken.record.jkt).toBe(client.jkt);
    }
    const other = await ProofClient.create('ES256');
    await expect(
      tokens.redeemRefreshToken(pair.refreshToken.token, { clientId: 'backend', audience, dpopJkt: other.jkt }),
    ).rejects.toMatchObject({
      reason: 'key_mismatch',
      code: 'invalid_grant',
    });
    expect(await tokens.isRevoked({ gid: pair.refreshToken.record.grantId })).toBe(true);
  });
});
