import type { Server } from 'node:http';
import express, { type Request, type Response } from 'express';
import type { JwtPayload } from 'jsonwebtoken';
import request from 'supertest';
import { errorHandler } from '../../lib/http';
import { claimCheck, claimEquals, claimIncludes, requireBearer, requiredScopes } from '../../lib/tokens';
import { loadJose, nowSeconds, rsaPair } from '../helpers/jose-tokens';
import { startJwksEndpoint, type JwksEndpoint } from '../helpers/jwks-endpoint';
import { expectProblem } from '../helpers/problem';

const issuer = 'https://auth.example.test';
const audience = 'shop-api';
const pair = rsaPair();

async function mint(claims: Record<string, unknown>): Promise<string> {
  const jose = await loadJose();
  const now = nowSeconds();
  return new jose.SignJWT({ iss: issuer, aud: audience, sub: 'alice', iat: now, exp: now + 600, ...claims })
    .setProtectedHeader({ alg: 'RS256', kid: 'k1', typ: 'at+jwt' })
    .sign(pair.privateKey);
}

const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });
const echo = (req: Request, res: Response) => {
  res.json({ sub: req.auth?.payload.sub, typ: req.auth?.header.typ, keys: Object.keys(req.auth ?? {}).sort() });
};

describe('requiredScopes, claimCheck, claimEquals, claimIncludes after one requireBearer', () => {
  let endpoint: JwksEndpoint;
  let server: Server;

  beforeAll(async () => {
    endpoint = await startJwksEndpoint([{ ...pair.publicKey.export({ format: 'jwk' }), kid: 'k1', alg: 'RS256' }]);
    const app = express();
    // One requireBearer, one JWKS cache, many per-route rules: the shape of express-oauth2-jwt-bearer.
    app.use('/api', requireBearer({ jwksUri: endpoint.jwksUri, algorithms: ['RS256'], issuer, audience, realm: 'shop' }));
    app.get('/api/orders', requiredScopes('orders:read'), echo);
    app.delete('/api/orders', requiredScopes(['orders:read', 'orders:write']), echo);
    app.get('/api/billing', claimEquals('org_id', 'acme'), echo);
    app.get('/api/reports', claimIncludes('roles', 'analyst', 'viewer'), echo);
    app.get(
      '/api/verified',
      claimCheck((payload) => payload.email_verified === true),
      echo,
    );
    // A check written async returns a Promise, which is truthy: it must not let everyone through.
    app.get('/api/async', claimCheck((async (payload: JwtPayload) => payload.admin === true) as never), echo);
    app.get('/api/chained', requiredScopes('orders:read'), claimEquals('org_id', 'acme'), echo);
    // Mounted without requireBearer in front: a wiring mistake.
    app.get('/unguarded', requiredScopes('orders:read'), echo);
    app.use(errorHandler({ log: false }));
    server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    await endpoint.close();
  });

  it('sets req.auth to exactly { payload, header, token }, as express-oauth2-jwt-bearer does', async () => {
    const res = await request(server)
      .get('/api/orders')
      .set(bearer(await mint({ scope: 'orders:read' })))
      .expect(200);
    expect(res.body).toEqual({ sub: 'alice', typ: 'at+jwt', keys: ['header', 'payload', 'token'] });
  });

  it('lets a token with every required scope through, from scope or from scp', async () => {
    await request(server)
      .delete('/api/orders')
      .set(bearer(await mint({ scope: 'profile orders:write orders:read' })))
      .expect(200);
    await request(server)
      .delete('/api/orders')
      .set(bearer(await mint({ scp: ['orders:read', 'orders:write'] })))
      .expect(200);
  });

  it('answers a missing scope with 403 insufficient_scope and the RFC 6750 challenge of the realm', async () => {
    const res = await request(server)
      .delete('/api/orders')
      .set(bearer(await mint({ scope: 'orders:read' })));
    expectProblem(res, 403, 'insufficient_scope');
    expect(res.headers['www-authenticate']).toBe(
      'Bearer realm="shop", error="insufficient_scope", error_description="The access token lacks a required scope", scope="orders:read orders:write"',
    );
    expect(res.body.scope).toBe('orders:read orders:write');
  });

  it('does not read a scope out of a longer word or another claim', async () => {
    expectProblem(
      await request(server)
        .get('/api/orders')
        .set(bearer(await mint({ scope: 'orders:reader', orders: 'orders:read' }))),
      403,
      'insufficient_scope',
    );
  });

  it('checks claims by equality, inclusion and a function; a failed check is 403 insufficient_claims', async () => {
    await request(server)
      .get('/api/billing')
      .set(bearer(await mint({ org_id: 'acme' })))
      .expect(200);
    expectProblem(
      await request(server)
        .get('/api/billing')
        .set(bearer(await mint({ org_id: 'globex' }))),
      403,
      'insufficient_claims',
    );
    expectProblem(
      await request(server)
        .get('/api/billing')
        .set(bearer(await mint({}))),
      403,
      'insufficient_claims',
    );
    await request(server)
      .get('/api/reports')
      .set(bearer(await mint({ roles: ['viewer', 'analyst', 'admin'] })))
      .expect(200);
    await request(server)
      .get('/api/reports')
      .set(bearer(await mint({ roles: 'analyst viewer' })))
      .expect(200);
    expectProblem(
      await request(server)
        .get('/api/reports')
        .set(bearer(await mint({ roles: ['viewer'] }))),
      403,
      'insufficient_claims',
    );
    await request(server)
      .get('/api/verified')
      .set(bearer(await mint({ email_verified: true })))
      .expect(200);
    expectProblem(
      await request(server)
        .get('/api/verified')
        .set(bearer(await mint({ email_verified: 'true' }))),
      403,
      'insufficient_claims',
    );
    expectProblem(
      await request(server)
        .get('/api/async')
        .set(bearer(await mint({ admin: false }))),
      403,
      'insufficient_claims',
    );
  });

  it('chains checks on one route', async () => {
    await request(server)
      .get('/api/chained')
      .set(bearer(await mint({ scope: 'orders:read', org_id: 'acme' })))
      .expect(200);
    expectProblem(
      await request(server)
        .get('/api/chained')
        .set(bearer(await mint({ org_id: 'acme' }))),
      403,
      'insufficient_scope',
    );
  });

  it('still answers 401 for a bad token before any route check', async () => {
    const token = await mint({ scope: 'orders:read' });
    expectProblem(
      await request(server)
        .get('/api/orders')
        .set(bearer(`${token.slice(0, -3)}AAA`)),
      401,
      'invalid_token',
    );
  });

  it('fetched the key set once for every route', () => {
    expect(endpoint.fetches).toBe(1);
  });

  it('answers 401 naming requireBearer when no requireBearer ran before the check', async () => {
    const res = await request(server)
      .get('/unguarded')
      .set(bearer(await mint({ scope: 'orders:read' })));
    expectProblem(res, 401, 'token_required');
    expect(res.body.detail).toMatch(/mount requireBearer\(\) before requiredScopes/);
    expect(res.headers['www-authenticate']).toBe('Bearer realm="api"');
  });
});

describe('claim check factories', () => {
  it.each([
    ['an empty scope list', () => requiredScopes('')],
    ['a scope with a quote', () => requiredScopes(['a"b'])],
    ['a scope that is not a string', () => requiredScopes([1] as never)],
    ['claimCheck without a function', () => claimCheck('admin' as never)],
    ['claimEquals with an object', () => claimEquals('org', {} as never)],
    ['claimEquals without a claim name', () => claimEquals('', 'x')],
    ['claimIncludes without values', () => claimIncludes('roles')],
  ])('refuses %s', (_name, build) => {
    expect(build).toThrow(expect.objectContaining({ code: 'invalid_options' }));
  });

  it('detects a check mounted without being called', () => {
    const call = requiredScopes as unknown as (req: unknown, res: unknown, next: unknown) => void;
    expect(() => call({ headers: {} }, {}, () => undefined)).toThrow(/it is a factory/);
  });
});
