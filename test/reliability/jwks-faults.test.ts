import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import express from 'express';
import request from 'supertest';
import { errorHandler, type ErrorLogEntry } from '../../lib/http';
import { requireBearer } from '../../lib/tokens';
import { heapAfterGc } from '../helpers/fault-probes';

type JwksMode = 'ok' | 'down' | 'slow' | 'broken';

/**
 * The identity provider's JWKS endpoint, switchable between answering, refusing connections (the socket is
 * destroyed, as when the process is gone), answering only after 3 s, and answering 200 with an HTML page.
 */
async function startJwksServer(
  keys: unknown,
): Promise<{ uri: string; issuer: string; mode: JwksMode; fetches: number; close(): Promise<void> }> {
  const state = { mode: 'ok' as JwksMode, fetches: 0 };
  const app = express();
  const timers = new Set<NodeJS.Timeout>();
  app.get('/jwks.json', (req, res) => {
    state.fetches += 1;
    if (state.mode === 'down') {
      req.socket.destroy();
      return;
    }
    if (state.mode === 'broken') {
      // A captive portal or a misrouted proxy: success status, unusable body.
      res.status(200).type('html').send('<h1>Welcome to the network</h1>');
      return;
    }
    const answer = () => res.json({ keys });
    if (state.mode === 'slow') {
      const timer = setTimeout(() => {
        timers.delete(timer);
        if (!res.writableEnded && !res.destroyed) answer();
      }, 3000);
      timers.add(timer);
      return;
    }
    answer();
  });
  const server = await new Promise<Server>((resolve) => {
    const created = app.listen(0, '127.0.0.1', () => resolve(created));
  });
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return Object.assign(state, {
    uri: `${base}/jwks.json`,
    issuer: `${base}/`,
    close: async () => {
      for (const timer of timers) clearTimeout(timer);
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  });
}

describe('requireBearer when the JWKS endpoint fails', () => {
  let jwks: Awaited<ReturnType<typeof startJwksServer>>;
  let mint: (subject: string) => Promise<string>;
  const logged: ErrorLogEntry[] = [];

  beforeAll(async () => {
    const { exportJWK, generateKeyPair, SignJWT } = await import('jose');
    const { privateKey, publicKey } = await generateKeyPair('RS256');
    jwks = await startJwksServer([{ ...(await exportJWK(publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' }]);
    mint = (subject) =>
      new SignJWT({})
        .setProtectedHeader({ alg: 'RS256', kid: 'k1', typ: 'at+jwt' })
        .setIssuer(jwks.issuer)
        .setAudience('api')
        .setSubject(subject)
        .setIssuedAt()
        .setExpirationTime('10m')
        .sign(privateKey);
  });

  afterAll(async () => {
    await jwks?.close();
  });

  /** A fresh API per case, so no case starts with keys another one fetched. */
  function api() {
    const app = express();
    app.use(
      requireBearer({
        jwksUri: jwks.uri,
        algorithms: ['RS256'],
        issuer: jwks.issuer,
        audience: 'api',
        cacheSize: 0,
        jwks: { timeoutSeconds: 1, cooldownSeconds: 0.2 },
      }),
    );
    app.get('/me', (req, res) => {
      res.json({ sub: req.auth!.payload.sub });
    });
    app.use(errorHandler({ log: (entry) => logged.push(entry) }));
    return app;
  }

  async function timed(app: express.Express, token: string) {
    const started = Date.now();
    const res = await request(app).get('/me').set('authorization', `Bearer ${token}`);
    return { res, ms: Date.now() - started };
  }

  afterEach(() => {
    jwks.mode = 'ok';
  });

  it('answers 503 with Retry-After, not 401 or 500, while the JWKS endpoint is unreachable, then recovers', async () => {
    const app = api();
    const token = await mint('alice');
    jwks.mode = 'down';
    const { res, ms } = await timed(app, token);
    expect({ status: res.status, retryAfter: typeof res.headers['retry-after'], type: res.type }).toEqual({
      status: 503,
      retryAfter: 'string',
      type: 'application/problem+json',
    });
    expect(ms).toBeLessThan(2000);
    jwks.mode = 'ok';
    // The cache may hold off refetching for its cooldown (200 ms here); poll instead of guessing.
    const deadline = Date.now() + 5000;
    let last = res;
    while (Date.now() < deadline && last.status !== 200) last = (await timed(app, token)).res;
    expect(last.status).toBe(200);
    expect(last.body.sub).toBe('alice');
  });

  it('answers 503 within its fetch timeout while the JWKS endpoint hangs', async () => {
    const app = api();
    jwks.mode = 'slow';
    const { res, ms } = await timed(app, await mint('bob'));
    expect(res.status).toBe(503);
    expect(res.headers['retry-after']).toBeDefined();
    // timeoutSeconds is 1; the endpoint would answer only after 3 s.
    expect(ms).toBeLessThan(2500);
  });

  it('answers 502 with Retry-After when the JWKS endpoint answers something that is not a key set', async () => {
    const app = api();
    jwks.mode = 'broken';
    const { res } = await timed(app, await mint('carol'));
    expect(res.status).toBe(502);
    expect(res.headers['retry-after']).toBeDefined();
    expect(res.type).toBe('application/problem+json');
  });

  it('does not grow the heap over repeated JWKS outages', async () => {
    const token = await mint('dave');
    // Once keys are fetched an outage no longer matters (they are cached), so each cycle is a fresh API whose
    // first fetch meets the outage, as after a deploy during an identity-provider incident.
    const cycle = async () => {
      const app = api();
      jwks.mode = 'down';
      for (let index = 0; index < 10; index += 1) expect((await timed(app, token)).res.status).toBe(503);
      jwks.mode = 'ok';
      const deadline = Date.now() + 5000;
      let status = 0;
      while (Date.now() < deadline && status !== 200) status = (await timed(app, token)).res.status;
      expect(status).toBe(200);
    };
    await cycle();
    const baseline = heapAfterGc();
    for (let round = 0; round < 5; round += 1) await cycle();
    const growth = heapAfterGc() - baseline;
    console.log(`jwks outages: heap after GC grew ${(growth / 1024).toFixed(0)} KiB over 5 cycles; ${jwks.fetches} JWKS fetches in all`);
    expect(growth).toBeLessThan(8 * 1024 * 1024);
  }, 60_000);

  it('never logs anything but 502 and 503 during the faults', () => {
    expect(logged.filter((entry) => entry.status !== 502 && entry.status !== 503)).toEqual([]);
  });
});
