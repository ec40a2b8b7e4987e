import express from 'express';
import request from 'supertest';
import { errorHandler, KeySet, requireBearer, TokenService, RefreshTokenError, type RequireBearerOptions } from '../../lib';
import { guarded } from '../../lib/http/handlers';
import { ecPair, loadJose } from '../helpers/jose-tokens';
import { startJwksEndpoint } from '../helpers/jwks-endpoint';
import { expectProblem } from '../helpers/problem';
import { GENERATED_REQUEST_ID, ISO_UTC, recordEvents, type EventRecorder } from '../helpers/event-recorder';
import { testRedisStore } from '../helpers/redis';

const issuer = 'https://auth.example.test';
const audience = 'api';

/** The value of one sample of the metrics text, or 0 when it is absent. */
async function sample(recorder: EventRecorder, line: string): Promise<number> {
  const text = await recorder.events.metrics.registry.metrics();
  const found = text.split('\n').find((candidate) => candidate.startsWith(`${line} `));
  return found === undefined ? 0 : Number(found.slice(line.length + 1));
}

function apiApp(options: RequireBearerOptions) {
  const app = express();
  app.get('/api', requireBearer(options), (req, res) => {
    res.json({ sub: req.auth!.payload.sub });
  });
  app.use(errorHandler({ log: false }));
  return app;
}

describe('token.refused where requireBearer refuses', () => {
  let redis: Awaited<ReturnType<typeof testRedisStore>>;
  let recorder: EventRecorder;
  let tokens: TokenService;
  let app: express.Express;

  beforeAll(async () => {
    redis = await testRedisStore('token-events');
    recorder = recordEvents({ app: 'api' });
    tokens = new TokenService({ keys: KeySet.generate('ES256'), issuer, store: redis.store, events: recorder.events });
    // The events come from the TokenService: requireBearer needs none of its own.
    app = apiApp({ tokenService: tokens, audience, acr: '1fa' });
  });
  afterEach(() => recorder.clear());
  afterAll(async () => {
    await recorder.events.close();
    await redis.cleanup();
  });

  it('records a request without a token as missing, with the request id the answer carries', async () => {
    const res = await request(app).get('/api').set('Accept', 'application/json');
    expectProblem(res, 401, 'token_required');
    const event = await recorder.only('token.refused');
    expect(event).toMatchObject({ type: 'token.refused', outcome: 'failure', reason: 'missing', app: 'api', network: expect.any(String) });
    expect(event.time).toMatch(ISO_UTC);
    expect(event.requestId).toMatch(GENERATED_REQUEST_ID);
    expect(res.headers['x-request-id']).toBe(event.requestId);
    expect(res.body.request_id).toBe(event.requestId);
  });

  it('records dpop.proof_refused (token_not_bound) for an unbound token sent as DPoP, without the token', async () => {
    const dpopApp = apiApp({ tokenService: tokens, audience, dpop: 'required' });
    const { token } = tokens.issueAccessToken({ subject: 'dora', audience, clientId: 'shop' });
    const res = await request(dpopApp).get('/api').set('Authorization', `DPoP ${token}`);
    expect(res.status).toBe(401);
    const event = await recorder.only('dpop.proof_refused');
    expect(event).toMatchObject({ type: 'dpop.proof_refused', outcome: 'failure', reason: 'token_not_bound', app: 'api' });
    expect(event.requestId).toMatch(GENERATED_REQUEST_ID);
    expect(recorder.ofType('token.refused')).toHaveLength(0);
    expect(JSON.stringify(event)).not.toContain(token.split('.')[2]!);
  });

  it('records a malformed Authorization header as invalid_request', async () => {
    expectProblem(await request(app).get('/api').set('Authorization', 'Bearer a b'), 400, 'invalid_request');
    expect(await recorder.only('token.refused')).toMatchObject({ reason: 'invalid_request' });
  });

  it('records a tampered token as bad_signature, without the token', async () => {
    const { token } = tokens.issueAccessToken({ subject: 'alice', audience, clientId: 'shop' });
    const tampered = `${token.slice(0, -6)}AAAAAA`;
    expectProblem(await request(app).get('/api').set('Authorization', `Bearer ${tampered}`), 401, 'invalid_token');
    const event = await recorder.only('token.refused');
    expect(event.reason).toBe('bad_signature');
    expect(JSON.stringify(event)).not.toContain(tampered.split('.')[2]!);
  });

  it("records a token of a revoked grant as revoked, with the token's user and client", async () => {
    const { accessToken } = await tokens.issueTokens({ subject: 'bob', audience, clientId: 'shop' });
    expect((await request(app).get('/api').set('Authorization', `Bearer ${accessToken.token}`)).status).toBe(200);
    const { gid } = JSON.parse(Buffer.from(accessToken.token.split('.')[1]!, 'base64url').toString()) as { gid: string };
    await tokens.revokeGrant(gid);
    expectProblem(await request(app).get('/api').set('Authorization', `Bearer ${accessToken.token}`), 401, 'invalid_token');
    expect(await recorder.only('token.refused')).toMatchObject({ reason: 'revoked', userId: 'bob', clientId: 'shop' });
  });

  it('records a token below the required level as insufficient_authentication', async () => {
    const strict = apiApp({ tokenService: tokens, audience, acr: '2fa' });
    const { token } = tokens.issueAccessToken({ subject: 'carol', audience, clientId: 'shop' });
    expect((await request(strict).get('/api').set('Authorization', `Bearer ${token}`)).status).toBe(401);
    expect(await recorder.only('token.refused')).toMatchObject({ reason: 'insufficient_authentication', userId: 'carol' });
  });

  it('records nothing for accepted tokens, and times only tokens it had to verify', async () => {
    const { token } = tokens.issueAccessToken({ subject: 'dan', audience, clientId: 'shop' });
    const fresh = apiApp({ tokenService: tokens, audience });
    const before = await sample(recorder, 'sso_token_verification_duration_seconds_count{outcome="success"}');
    for (let i = 0; i < 3; i += 1) expect((await request(fresh).get('/api').set('Authorization', `Bearer ${token}`)).status).toBe(200);
    expect(await recorder.settled()).toEqual([]);
    expect(await sample(recorder, 'sso_token_verification_duration_seconds_count{outcome="success"}')).toBe(before + 1);
  });
});

describe('refresh_token.reused where RefreshTokens detects the reuse', () => {
  let redis: Awaited<ReturnType<typeof testRedisStore>>;
  let recorder: EventRecorder;
  let tokens: TokenService;
  let app: express.Express;

  beforeAll(async () => {
    redis = await testRedisStore('refresh-events');
    recorder = recordEvents();
    tokens = new TokenService({ keys: KeySet.generate('ES256'), issuer, store: redis.store, events: recorder.events });
    app = express();
    app.set('trust proxy', 'loopback');
    app.use(express.urlencoded({ extended: false }));
    app.post(
      '/token',
      guarded(async (req, res) => {
        const body = req.body as { refresh_token: string; client_id: string };
        try {
          const next = await tokens.redeemRefreshToken(body.refresh_token, { clientId: body.client_id, audience, request: req });
          res.json({ refresh_token: next.refreshToken.token });
        } catch (error) {
          if (error instanceof RefreshTokenError) res.status(400).json({ error: 'invalid_grant' });
          else throw error;
        }
      }),
    );
  });
  afterEach(() => recorder.clear());
  afterAll(async () => {
    await recorder.events.close();
    await redis.cleanup();
  });

  it('records a rotated token presented again as reused, with the presenting request, and its grant is revoked', async () => {
    const { refreshToken } = await tokens.issueTokens({ subject: 'erin', audience, clientId: 'shop' });
    const first = await request(app).post('/token').type('form').send({ refresh_token: refreshToken.token, client_id: 'shop' });
    expect(first.status).toBe(200);
    expect(await recorder.settled()).toEqual([]);
    const replay = await request(app)
      .post('/token')
      .set('X-Forwarded-For', '203.0.113.9')
      .type('form')
      .send({ refresh_token: refreshToken.token, client_id: 'shop' });
    expect(replay.status).toBe(400);
    const event = await recorder.only('refresh_token.reused');
    expect(event).toMatchObject({ outcome: 'failure', reason: 'reused', clientId: 'shop', network: '203.0.113.9/32' });
    expect(event.requestId).toMatch(GENERATED_REQUEST_ID);
    expect(JSON.stringify(event)).not.toContain(refreshToken.token);
    // The successor minted by the first rotation died with the grant.
    const successor = (first.body as { refresh_token: string }).refresh_token;
    expect((await request(app).post('/token').type('form').send({ refresh_token: successor, client_id: 'shop' })).status).toBe(400);
  });

  it("records another client's presentation as client_mismatch, with the token's user", async () => {
    const { refreshToken } = await tokens.issueTokens({ subject: 'finn', audience, clientId: 'shop' });
    const stolen = await request(app).post('/token').type('form').send({ refresh_token: refreshToken.token, client_id: 'evil' });
    expect(stolen.status).toBe(400);
    expect(await recorder.only('refresh_token.reused')).toMatchObject({ reason: 'client_mismatch', clientId: 'evil', userId: 'finn' });
  });
});

describe('JWKS refreshes counted', () => {
  it('counts each fetch of the key set of requireBearer({ jwksUri }) by outcome', async () => {
    const jose = await loadJose();
    const { privateKey, publicKey } = ecPair();
    const jwk = { ...publicKey.export({ format: 'jwk' }), kid: 'k1', alg: 'ES256', use: 'sig' };
    const endpoint = await startJwksEndpoint([jwk]);
    const recorder = recordEvents();
    try {
      const app = apiApp({ jwksUri: endpoint.jwksUri, algorithms: ['ES256'], issuer, audience, events: recorder.events });
      const token = await new jose.SignJWT({})
        .setProtectedHeader({ alg: 'ES256', kid: 'k1', typ: 'at+jwt' })
        .setIssuer(issuer)
        .setAudience(audience)
        .setSubject('gil')
        .setIssuedAt()
        .setExpirationTime('5m')
        .sign(privateKey);
      expect((await request(app).get('/api').set('Authorization', `Bearer ${token}`)).status).toBe(200);
      expect(await sample(recorder, 'sso_jwks_refreshes_total{outcome="success"}')).toBe(1);
      endpoint.mode = 'down';
      const unknownKid = await new jose.SignJWT({})
        .setProtectedHeader({ alg: 'ES256', kid: 'k2', typ: 'at+jwt' })
        .setIssuer(issuer)
        .setAudience(audience)
        .setIssuedAt()
        .setExpirationTime('5m')
        .sign(privateKey);
      expect((await request(app).get('/api').set('Authorization', `Bearer ${unknownKid}`)).status).toBe(401);
      expect(await sample(recorder, 'sso_jwks_refreshes_total{outcome="failure"}')).toBe(1);
      expect(await recorder.only('token.refused')).toMatchObject({ reason: 'unknown_kid' });
    } finally {
      await recorder.events.close();
      await endpoint.close();
    }
  });
});
