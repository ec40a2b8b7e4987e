import { randomBytes } from 'node:crypto';
import express from 'express';
import request from 'supertest';
import { errorHandler } from '../../lib/http';
import { jwksHandler, KeySet, TokenService } from '../../lib/tokens';
import { ecPair, loadJose, rsaPair } from '../helpers/jose-tokens';
import { expectProblem } from '../helpers/problem';

const issuer = 'https://auth.example.test';

function appFor(keys: KeySet, maxAgeSeconds?: number) {
  const app = express();
  app.all('/.well-known/jwks.json', jwksHandler(keys, maxAgeSeconds === undefined ? {} : { maxAgeSeconds }));
  app.use(errorHandler({ log: false }));
  return app;
}

describe('jwksHandler', () => {
  const rsa = rsaPair();
  const secret = randomBytes(32);
  const keys = new KeySet(
    [
      { kid: 'rs-new', alg: 'RS256', privateKey: rsa.privateKey },
      { kid: 'es-old', alg: 'ES256', publicKey: ecPair().publicKey },
      { kid: 'hs', alg: 'HS256', secret },
    ],
    { activeKid: 'rs-new' },
  );

  it('publishes a key set that jose createLocalJWKSet uses to verify our tokens', async () => {
    const jose = await loadJose();
    const res = await request(appFor(keys)).get('/.well-known/jwks.json').expect(200);
    const jwks = jose.createLocalJWKSet(res.body);
    const { token } = new TokenService({ keys, issuer }).issueAccessToken({ subject: 'alice', audience: 'api', clientId: 'shop' });
    const { payload } = await jose.jwtVerify(token, jwks, { issuer, audience: 'api', algorithms: ['RS256'] });
    expect(payload.sub).toBe('alice');
  });

  it('serves application/jwk-set+json with Cache-Control public, max-age', async () => {
    const res = await request(appFor(keys, 300)).get('/.well-known/jwks.json').expect(200);
    expect(res.headers['content-type']).toMatch(/^application\/jwk-set\+json/);
    expect(res.headers['cache-control']).toBe('public, max-age=300');
    const fallback = await request(appFor(keys)).get('/.well-known/jwks.json');
    expect(fallback.headers['cache-control']).toBe('public, max-age=600');
  });

  it('publishes only public members and never the HS secret', async () => {
    const res = await request(appFor(keys))
      .get('/.well-known/jwks.json')
      .buffer(true)
      .parse((r, cb) => {
        let text = '';
        r.on('data', (chunk: Buffer) => (text += chunk.toString()));
        r.on('end', () => cb(null, text));
      });
    const text = res.body as string;
    expect(JSON.parse(text).keys.map((key: { kid: string }) => key.kid)).toEqual(['rs-new', 'es-old']);
    expect(text).not.toMatch(/"(d|p|q|dp|dq|qi|k)"/);
    expect(text).not.toContain(secret.toString('base64url'));
  });

  it('answers other methods with 405 and Allow', async () => {
    const res = await request(appFor(keys)).post('/.well-known/jwks.json');
    expectProblem(res, 405);
    expect(res.headers.allow).toBe('GET, HEAD');
  });

  it('validates its arguments when created', () => {
    expect(() => jwksHandler({} as never)).toThrow(/must be a KeySet/);
    expect(() => jwksHandler(keys, { maxAgeSeconds: -1 })).toThrow(/maxAgeSeconds/);
    expect(jwksHandler(keys).name).toBe('jwksHandlerMiddleware');
  });
});
