import { randomBytes } from 'node:crypto';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import type Provider from 'oidc-provider' with { 'resolution-mode': 'import' };
import { errorHandler } from '../../lib/http';
import { oidc } from '../../lib/oidc';
import { ssoSession } from '../../lib/session';
import { resolveDemoDomain } from '../../example-app/common/demo-dns';
import { TestUserAgent } from '../helpers/http-user-agent';
import { startProviderPortal, type ProviderPortal } from '../helpers/openid-provider-harness';
import { testRedisStore } from '../helpers/redis';

// The kit's own relying party (`oidc()`) on another domain, wiki.localhost, signing in through the portal's provider.
// Both sides run in this process; their server-side calls reach the *.localhost names on loopback.
const SECRET = `wiki-secret-${randomBytes(16).toString('hex')}`;

describe("the kit's oidc() relying party against the portal provider", () => {
  let redis: Awaited<ReturnType<typeof testRedisStore>>;
  let portal: ProviderPortal;
  let wiki: Server;
  let wikiOrigin: string;
  const backchannelAnswers: ((status: number) => void)[] = [];
  let undoLookup: () => void = () => undefined;

  beforeAll(async () => {
    // *.localhost is loopback (RFC 6761), which this machine's resolver does not know; the demo teaches Node the same.
    undoLookup = resolveDemoDomain('localhost', '127.0.0.1');
    redis = await testRedisStore('op-kit-rp');
    const app = express();
    wiki = app.listen(0, '127.0.0.1');
    await new Promise<void>((resolve) => wiki.once('listening', () => resolve()));
    const wikiPort = (wiki.address() as AddressInfo).port;
    wikiOrigin = `http://wiki.localhost:${wikiPort}`;
    portal = await startProviderPortal({
      store: redis.store,
      browserHost: 'auth.sso.localhost',
      clients: [
        {
          clientId: 'wiki',
          clientSecret: SECRET,
          redirectUris: [`${wikiOrigin}/callback/portal`],
          backchannelLogoutUri: `http://127.0.0.1:${wikiPort}/backchannel-logout/portal`,
        },
      ],
    });
    app.use('/backchannel-logout/portal', (_req, res, next) => {
      res.on('finish', () => backchannelAnswers.shift()?.(res.statusCode));
      next();
    });
    app.use(
      ssoSession({
        store: redis.store,
        sessionPrefix: 'wiki-sess:',
        cookieDomain: 'wiki.localhost',
        cookieName: 'wiki.sid',
        secret: `wiki-session-${randomBytes(16).toString('hex')}`,
        loginUrl: `${wikiOrigin}/login/portal`,
        allowInsecureLocalDevelopment: true,
        allowedRedirectPorts: [wikiPort],
      }),
    );
    app.use(
      oidc({
        name: 'portal',
        issuer: portal.issuer,
        clientId: 'wiki',
        clientSecret: SECRET,
        baseUrl: wikiOrigin,
        idTokenSigningAlg: 'ES256',
        rolesClaim: 'roles',
        // The provider keeps profile claims out of the ID token (OpenID Connect Core §5.4): they come from userinfo.
        fetchUserinfo: true,
        store: redis.store,
        allowInsecureLocalDevelopment: true,
      }),
    );
    app.get('/me', (req, res) => {
      if (!req.user) res.status(401).json({ user: null });
      else res.json({ user: req.user });
    });
    app.post('/refresh', async (req, res) => {
      await req.oidc?.refresh();
      res.json({ refreshed: true });
    });
    app.use(errorHandler({ log: false }));
  });

  afterAll(async () => {
    undoLookup();
    await portal?.close();
    wiki?.closeAllConnections();
    await new Promise<void>((resolve) => (wiki ? wiki.close(() => resolve()) : resolve()));
    await redis?.cleanup();
  });

  async function signedInAtWiki(): Promise<TestUserAgent> {
    const agent = new TestUserAgent('localhost');
    const login = await agent.follow(`${portal.issuer}/login`, {
      form: { username: 'alice', password: portal.passwords.alice!, return_to: '' },
    });
    expect(login[0]!.status).toBe(302);
    const chain = await agent.follow(`${wikiOrigin}/login/portal`);
    expect(chain.some((answer) => answer.url.startsWith(`${portal.issuer}/login`))).toBe(false);
    return agent;
  }

  it('signs a portal user in to the wiki without a password, with the provider identity and roles', async () => {
    const agent = await signedInAtWiki();
    const me = await agent.request(`${wikiOrigin}/me`);
    expect(me.status).toBe(200);
    const { user } = JSON.parse(me.body) as { user: { id: string; roles: string[]; authentication?: { acr: string } } };
    expect(user.id).toBe(`oidc:${portal.issuer}|directory:local|alice`);
    expect(user.roles).toEqual(['editor']);
  });

  it('refreshes its tokens at the provider', async () => {
    const agent = await signedInAtWiki();
    const provider = await portal.op.provider<Provider>();
    const grants: string[] = [];
    provider.on('grant.success', (ctx) => grants.push(String(ctx.oidc.params?.grant_type)));
    const refreshed = await agent.request(`${wikiOrigin}/refresh`, { method: 'POST' });
    expect(refreshed.status).toBe(200);
    expect(grants).toEqual(['refresh_token']);
  });

  it('is logged out by back-channel when the portal session ends', async () => {
    const agent = await signedInAtWiki();
    expect((await agent.request(`${wikiOrigin}/me`)).status).toBe(200);
    const handled = new Promise<number>((resolve) => backchannelAnswers.push(resolve));
    const ended = await agent.request(`${portal.issuer}/logout-everywhere`, { method: 'POST' });
    expect(ended.status).toBe(200);
    expect(await handled).toBe(200);
    // Earlier tests signed alice in to the wiki too, so logging out everywhere sends one logout token per portal
    // session, in no set order: the first answer may be another session's. This session's arrives soon after.
    const deadline = Date.now() + 5000;
    let status = (await agent.request(`${wikiOrigin}/me`)).status;
    while (status === 200 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      status = (await agent.request(`${wikiOrigin}/me`)).status;
    }
    expect(status).toBe(401);
  });
});
