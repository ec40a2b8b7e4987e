import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { errorHandler, oidc, ssoSession } from '../../lib';
import { TestUserAgent } from '../helpers/http-user-agent';
import { GENERATED_REQUEST_ID, recordEvents, type EventRecorder } from '../helpers/event-recorder';
import { startTestIdp, type TestIdp } from '../helpers/oidc-provider';
import { testRedisStore } from '../helpers/redis';

const CLIENT_SECRET = 'corp-client-secret-0123456789abcdef';

describe('OpenID Connect sign-in events', () => {
  let redis: Awaited<ReturnType<typeof testRedisStore>>;
  let recorder: EventRecorder;
  let idp: TestIdp;
  let server: Server;
  let origin: string;
  let idpClosed = false;

  beforeAll(async () => {
    redis = await testRedisStore('oidc-events');
    recorder = recordEvents({ app: 'auth' });
    const app = express();
    server = app.listen(0, '127.0.0.1');
    await new Promise<void>((resolve) => server.once('listening', () => resolve()));
    const port = (server.address() as AddressInfo).port;
    origin = `https://auth.example.test:${port}`;
    idp = await startTestIdp({
      clients: [
        {
          clientId: 'shop',
          clientSecret: CLIENT_SECRET,
          redirectUris: [`${origin}/callback/corp`],
          backchannelLogoutUri: `http://127.0.0.1:${port}/backchannel-logout/corp`,
        },
      ],
    });
    app.set('trust proxy', 'loopback');
    // No events on the session: those of oidc() are the ones its routes record in.
    app.use(
      ssoSession({
        store: redis.store,
        cookieDomain: 'example.test',
        secret: 'oidc-events-secret-0123456789-abcdefghijkl',
        loginUrl: `${origin}/login`,
        allowedRedirectPorts: [port],
      }),
    );
    app.use(
      oidc({
        name: 'corp',
        issuer: idp.issuer,
        clientId: 'shop',
        clientSecret: CLIENT_SECRET,
        baseUrl: origin,
        store: redis.store,
        allowInsecureLocalDevelopment: true,
        events: recorder.events,
      }),
    );
    app.get('/me', (req, res) => {
      res.json({ user: req.user?.id ?? null });
    });
    app.use(errorHandler({ log: false }));
  });
  afterEach(() => recorder.clear());
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    if (!idpClosed) await idp.close();
    await recorder.events.close();
    await redis.cleanup();
  });

  it('records signin.succeeded with the provider, the user and the session of the callback', async () => {
    idp.loginAs('alice');
    const ua = new TestUserAgent();
    const chain = await ua.follow(`${origin}/login/corp?return_to=${encodeURIComponent(`${origin}/me`)}`);
    expect(chain[chain.length - 1]!.status).toBe(200);
    const event = await recorder.only('signin.succeeded');
    expect(event).toMatchObject({
      outcome: 'success',
      reason: 'authenticated',
      method: 'oidc',
      provider: 'corp',
      userId: `oidc:${idp.issuer}|alice`,
      app: 'auth',
      sessionHandle: expect.any(String),
    });
    expect(event.requestId).toMatch(GENERATED_REQUEST_ID);
    const callback = chain.find((answer) => answer.url.startsWith(`${origin}/callback/corp`))!;
    const code = new URL(callback.url).searchParams.get('code')!;
    expect(JSON.stringify(recorder.recorded)).not.toContain(code);
  });

  it('records signin.failed (state_mismatch) for a callback no login of this browser started', async () => {
    const res = await new TestUserAgent().request(`${origin}/callback/corp?code=forged-code&state=forged-state`, {
      headers: { Accept: 'application/json' },
    });
    expect(res.status).toBe(400);
    expect(await recorder.only('signin.failed')).toMatchObject({ reason: 'state_mismatch', method: 'oidc', provider: 'corp' });
  });

  it('records signin.failed (provider_denied) when the provider answers access_denied', async () => {
    const ua = new TestUserAgent();
    const start = await ua.request(`${origin}/login/corp`);
    const state = new URL(start.location!).searchParams.get('state')!;
    const res = await ua.request(`${origin}/callback/corp?error=access_denied&state=${state}`, { headers: { Accept: 'application/json' } });
    expect(res.status).toBe(403);
    expect(await recorder.only('signin.failed')).toMatchObject({ reason: 'provider_denied', provider: 'corp' });
  });

  it('records session.ended (backchannel) when the provider logs the user out', async () => {
    idp.loginAs('bob');
    const ua = new TestUserAgent();
    await ua.follow(`${origin}/login/corp`);
    await recorder.clear();
    const confirm = await ua.request(`${idp.issuer}/session/end`);
    const xsrf = /name="xsrf" value="([^"]+)"/.exec(confirm.body)?.[1];
    expect((await ua.request(`${idp.issuer}/session/end/confirm`, { form: { xsrf: xsrf!, logout: 'yes' } })).status).toBeLessThan(400);
    expect(await recorder.only('session.ended')).toMatchObject({ reason: 'backchannel', provider: 'corp', count: 1 });
  });

  // Last: it stops the provider.
  it('records signin.failed (provider_unavailable) when the provider stops answering during a login', async () => {
    idp.loginAs('alice');
    const ua = new TestUserAgent();
    const start = await ua.request(`${origin}/login/corp`);
    const authorize = await ua.request(start.location!);
    // The provider signs alice in and sends the browser back; the browser holds that answer while the provider goes down.
    let answer = authorize;
    while (answer.location !== undefined && !answer.location.startsWith(`${origin}/callback/corp`))
      answer = await ua.request(answer.location);
    const callback = answer.location!;
    await idp.close();
    idpClosed = true;
    await recorder.clear();
    const res = await ua.request(callback, { headers: { Accept: 'application/json' } });
    expect(res.status).toBe(503);
    expect(await recorder.only('signin.failed')).toMatchObject({ reason: 'provider_unavailable', method: 'oidc', provider: 'corp' });
    expect(recorder.ofType('signin.succeeded')).toHaveLength(0);
  });
});
