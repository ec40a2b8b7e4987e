import { randomBytes } from 'node:crypto';
import { format } from 'node:util';
import createDebug from 'debug';
import express from 'express';
import request from 'supertest';
import { errorHandler } from '../../lib/http';
import { generateAppSecret } from '../../lib/qr/app-registry';
import { qrLogin } from '../../lib/qr/qr-login';
import { ssoSession } from '../../lib/session';
import { KeySet } from '../../lib/tokens/key-set';
import { expectProblem } from '../helpers/problem';
import {
  confirmAndCollect,
  cookiePair,
  createLogin,
  phoneToken,
  qrconnectQuery,
  SHOP_REDIRECT,
  startProvider,
  type ProviderHarness,
} from '../helpers/qr-harness';
import { PARTNER_ISSUER, startSsoWiredProvider, type SsoWiredProvider } from '../helpers/qr-sso-provider';
import { testRedisStore } from '../helpers/redis';
import { openEventStream, statusIs } from '../helpers/sse-client';

let redis: Awaited<ReturnType<typeof testRedisStore>>;
let idp: SsoWiredProvider;

beforeAll(async () => {
  redis = await testRedisStore('qr-security');
  idp = await startSsoWiredProvider(redis.store);
});

afterAll(async () => {
  await idp.close();
  await redis.cleanup();
});

/** A browser asks the provider for a QR code; returns the auth_code and the browser's binding cookie. */
async function newLogin(provider = idp): Promise<{ authCode: string; binding: string }> {
  const res = await provider.call('get', `/sns/oauth2/qrconnect?${qrconnectQuery()}`);
  expect(res.status).toBe(201);
  const authCode = /\/sns\/qr-logins\/([^/]+)\/confirmation$/.exec(res.body.qr_url as string)![1]!;
  return { authCode, binding: cookiePair(res.headers['set-cookie'], 'qr_binding')! };
}

/** The request exactly as the store holds it, to prove a refused attempt changed nothing. */
function stored(authCode: string): Promise<string | null> {
  return redis.store.get(`qr:{${authCode}}`);
}

async function patchAsPhone(authCode: string, status: string, token: string, provider = idp) {
  return provider.call('patch', `/sns/qr-logins/${authCode}`).set('Authorization', `Bearer ${token}`).send({ status });
}

async function patchWithSession(authCode: string, status: string, cookie: string) {
  return idp.call('patch', `/sns/qr-logins/${authCode}`).set('Cookie', cookie).send({ status });
}

function postConfirmation(authCode: string, status: string, cookie: string) {
  return idp.call('post', `/sns/qr-logins/${authCode}/confirmation`).set('Cookie', cookie).type('form').send({ status });
}

describe('a user of another identity source with the same subject (foreign identity)', () => {
  it('cannot scan, read or open the confirmation page with a partner session for "alice"; nothing changes', async () => {
    const { authCode } = await newLogin();
    const before = await stored(authCode);
    // "alice" who signed in at the portal through a partner OpenID provider is not the directory's alice.
    const partnerAlice = await idp.signIn('alice', 'oidc:https://partner.example.test');
    expectProblem(await patchWithSession(authCode, 'scanned', partnerAlice), 403, 'foreign_identity');
    expectProblem(await idp.call('get', `/sns/qr-logins/${authCode}`).set('Cookie', partnerAlice), 403, 'foreign_identity');
    expectProblem(await idp.call('get', `/sns/qr-logins/${authCode}/confirmation`).set('Cookie', partnerAlice), 403, 'foreign_identity');
    expectProblem(await postConfirmation(authCode, 'confirmed', partnerAlice), 403, 'foreign_identity');
    expect(await stored(authCode)).toBe(before);
  });

  it('cannot confirm or deny what the directory’s alice scanned, by the API or the form; her own decision still works', async () => {
    const { authCode } = await newLogin();
    const alice = await idp.signIn('alice');
    expect((await patchWithSession(authCode, 'scanned', alice)).status).toBe(200);
    const before = await stored(authCode);
    const partnerAlice = await idp.signIn('alice', 'oidc:https://partner.example.test');
    expectProblem(await patchWithSession(authCode, 'confirmed', partnerAlice), 403, 'foreign_identity');
    expectProblem(await patchWithSession(authCode, 'denied', partnerAlice), 403, 'foreign_identity');
    expectProblem(await postConfirmation(authCode, 'denied', partnerAlice), 403, 'foreign_identity');
    expect(await stored(authCode)).toBe(before);
    expect((await postConfirmation(authCode, 'confirmed', alice)).status).toBe(303);
  });

  it('cannot scan, confirm or deny with a phone token of another issuer for "alice", even one the gateway accepts', async () => {
    const { authCode } = await newLogin();
    const partnerToken = await phoneToken('alice', PARTNER_ISSUER);
    const before = await stored(authCode);
    expectProblem(await patchAsPhone(authCode, 'scanned', partnerToken), 403, 'foreign_identity');
    expect(await stored(authCode)).toBe(before);
    expect((await patchAsPhone(authCode, 'scanned', await phoneToken('alice'))).status).toBe(200);
    const scanned = await stored(authCode);
    expectProblem(await patchAsPhone(authCode, 'confirmed', partnerToken), 403, 'foreign_identity');
    expectProblem(await patchAsPhone(authCode, 'denied', partnerToken), 403, 'foreign_identity');
    expect(await stored(authCode)).toBe(scanned);
    expect((await patchAsPhone(authCode, 'confirmed', await phoneToken('alice'))).status).toBe(200);
  });
});

describe('two QR providers that return the same openid (identity confusion on the relying side)', () => {
  it('log in two distinct users, whose sessions are indexed and ended apart', async () => {
    // Two independent providers that happen to derive the same openid for their "alice" (same HMAC key, same appid).
    const openidSecret = randomBytes(32);
    const shared = { keys: KeySet.generate('ES256'), shopSecret: generateAppSecret(), adminSecret: generateAppSecret() };
    const storeA = await testRedisStore('qr-provider-a');
    const storeB = await testRedisStore('qr-provider-b');
    const providerA = await startProvider(storeA.store, { rateLimits: false, openidSecret }, shared);
    const providerB = await startProvider(storeB.store, { rateLimits: false, openidSecret }, shared);
    const sso = ssoSession({
      store: redis.store,
      cookieDomain: 'example.test',
      secret: randomBytes(32).toString('base64'),
      loginUrl: 'https://auth.example.test/login',
    });
    const portal = express();
    portal.set('trust proxy', 'loopback');
    portal.use(sso);
    for (const [name, provider] of [
      ['a', providerA],
      ['b', providerB],
    ] as const) {
      const qr = qrLogin({ providerUrl: provider.url, appid: 'shop', secret: shared.shopSecret, redirectUri: SHOP_REDIRECT });
      portal.get(`/login/${name}`, qr.login);
      portal.get(`/callback/${name}`, qr.callback);
    }
    portal.get('/me', (req, res) => {
      res.json(req.user ?? null);
    });
    portal.use(errorHandler({ log: false }));
    const get = (path: string, cookie?: string) => {
      const req = request(portal).get(path).set('Host', 'auth.example.test').set('X-Forwarded-Proto', 'https');
      return cookie ? req.set('Cookie', cookie) : req;
    };
    const signInThrough = async (name: 'a' | 'b', provider: ProviderHarness) => {
      const start = await get(`/login/${name}`);
      const state = new URL(start.headers.location as string).searchParams.get('state')!;
      const { code } = await confirmAndCollect(provider.url, await createLogin(provider.url, { state }), 'alice');
      const done = await get(
        `/callback/${name}?${new URLSearchParams({ code, state })}`,
        cookiePair(start.headers['set-cookie'], '__Secure-sso.sid'),
      );
      expect(done.status).toBe(302);
      const cookie = cookiePair(done.headers['set-cookie'], '__Secure-sso.sid')!;
      return { cookie, user: (await get('/me', cookie)).body as { id: string; source: string; subject: string } };
    };
    try {
      const viaA = await signInThrough('a', providerA);
      const viaB = await signInThrough('b', providerB);
      expect(viaA.user.subject).toBe(viaB.user.subject);
      expect(viaA.user.source).toBe(`qr:${providerA.url}#shop`);
      expect(viaB.user.source).toBe(`qr:${providerB.url}#shop`);
      expect(viaA.user.id).not.toBe(viaB.user.id);
      expect(await sso.manager.listSessions(viaA.user.id)).toHaveLength(1);
      expect(await sso.manager.listSessions(viaB.user.id)).toHaveLength(1);
      // Ending every session of A's user leaves B's user signed in.
      expect(await sso.manager.logoutEverywhere(viaA.user.id)).toBe(1);
      expect((await get('/me', viaA.cookie)).body).toBeNull();
      expect((await get('/me', viaB.cookie)).body).toMatchObject({ id: viaB.user.id });
    } finally {
      await providerA.close();
      await providerB.close();
      await storeA.cleanup();
      await storeB.cleanup();
    }
  });
});

describe('a second phone, late decisions and replays (the QR request’s state rules)', () => {
  const alice = () => phoneToken('alice');
  const bob = () => phoneToken('bob');

  it('refuses a second phone re-scanning a scanned code (409); the first scanner’s decision still works', async () => {
    const { authCode, binding } = await newLogin();
    expect((await patchAsPhone(authCode, 'scanned', await alice())).status).toBe(200);
    const scanned = await stored(authCode);
    const rescan = await patchAsPhone(authCode, 'scanned', await bob());
    expectProblem(rescan, 409, 'illegal_transition');
    expect(rescan.body.current_status).toBe('scanned');
    expect(await stored(authCode)).toBe(scanned);
    expectProblem(await patchAsPhone(authCode, 'confirmed', await bob()), 403, 'not_scanner');
    expect((await patchAsPhone(authCode, 'confirmed', await alice())).status).toBe(200);
    expect((await idp.call('get', `/sns/qr-logins/${authCode}/redirection`).set('Cookie', binding)).status).toBe(302);
  });

  it('refuses a decision by a phone that did not scan (403 not_scanner) and changes nothing', async () => {
    const { authCode } = await newLogin();
    await patchAsPhone(authCode, 'scanned', await alice());
    const scanned = await stored(authCode);
    expectProblem(await patchAsPhone(authCode, 'confirmed', await bob()), 403, 'not_scanner');
    expectProblem(await patchAsPhone(authCode, 'denied', await bob()), 403, 'not_scanner');
    expect(await stored(authCode)).toBe(scanned);
  });

  it('refuses a second confirmation (409) and keeps the one code it minted', async () => {
    const { authCode } = await newLogin();
    await patchAsPhone(authCode, 'scanned', await alice());
    expect((await patchAsPhone(authCode, 'confirmed', await alice())).status).toBe(200);
    const confirmed = await stored(authCode);
    expectProblem(await patchAsPhone(authCode, 'confirmed', await alice()), 409, 'illegal_transition');
    expect(await stored(authCode)).toBe(confirmed);
  });

  it('refuses confirming after a denial (409); the browser gets no code', async () => {
    const { authCode, binding } = await newLogin();
    await patchAsPhone(authCode, 'scanned', await alice());
    expect((await patchAsPhone(authCode, 'denied', await alice())).status).toBe(200);
    const confirm = await patchAsPhone(authCode, 'confirmed', await alice());
    expectProblem(confirm, 409, 'illegal_transition');
    expect(confirm.body.current_status).toBe('denied');
    const redirection = await idp.call('get', `/sns/qr-logins/${authCode}/redirection`).set('Cookie', binding);
    expect(redirection.status).toBe(403);
    expect(redirection.headers.location).toBeUndefined();
  });

  it('hands the redirect with the code out once: a second collection is 410 without a Location', async () => {
    const { authCode, binding } = await newLogin();
    await patchAsPhone(authCode, 'scanned', await alice());
    await patchAsPhone(authCode, 'confirmed', await alice());
    const redirection = () => idp.call('get', `/sns/qr-logins/${authCode}/redirection`).set('Cookie', binding);
    expect((await redirection()).status).toBe(302);
    const again = await redirection();
    expect(again.status).toBe(410);
    expect(again.headers.location).toBeUndefined();
  });

  it('redeems a code once: the replay is refused (40163) and revokes the tokens the first exchange issued', async () => {
    const { authCode, binding } = await newLogin();
    await patchAsPhone(authCode, 'scanned', await alice());
    await patchAsPhone(authCode, 'confirmed', await alice());
    const location = (await idp.call('get', `/sns/qr-logins/${authCode}/redirection`).set('Cookie', binding)).headers.location as string;
    const code = new URL(location).searchParams.get('code')!;
    const exchange = () =>
      idp
        .call('post', '/sns/oauth2/access_token')
        .type('form')
        .send({ appid: 'shop', secret: idp.shopSecret, code, grant_type: 'authorization_code' });
    const first = await exchange();
    expect(first.status).toBe(200);
    const replay = await exchange();
    expect(replay.status).toBe(400);
    expect(replay.body).toEqual({ errcode: 40163, errmsg: 'code been used' });
    const userinfo = await idp
      .call('get', '/sns/userinfo')
      .query({ openid: first.body.openid as string })
      .set('Authorization', `Bearer ${first.body.access_token as string}`);
    expect(userinfo.status).toBe(401);
  });

  describe('after the QR code expired', () => {
    let shortLived: SsoWiredProvider;
    beforeAll(async () => {
      shortLived = await startSsoWiredProvider(redis.store, { testOnlyQrLifetimeSeconds: 1 });
    });
    afterAll(() => shortLived.close());

    it('refuses every decision (410) and every redirect, and changes nothing', async () => {
      const { authCode, binding } = await newLogin(shortLived);
      expect((await patchAsPhone(authCode, 'scanned', await alice(), shortLived)).status).toBe(200);
      const stream = await openEventStream(`${shortLived.url}/sns/qr-logins/${authCode}/events`, { cookie: binding });
      await stream.next(statusIs('expired'), 4000);
      stream.close();
      const scanned = await stored(authCode);
      expectProblem(await patchAsPhone(authCode, 'confirmed', await alice(), shortLived), 410, 'qr_login_expired');
      expectProblem(await patchAsPhone(authCode, 'denied', await alice(), shortLived), 410, 'qr_login_expired');
      expectProblem(await patchAsPhone(authCode, 'scanned', await bob(), shortLived), 410, 'qr_login_expired');
      expect(await stored(authCode)).toBe(scanned);
      const redirection = await shortLived.call('get', `/sns/qr-logins/${authCode}/redirection`).set('Cookie', binding);
      expect(redirection.status).toBe(410);
      expect(redirection.headers.location).toBeUndefined();
    });
  });
});

describe('what the provider writes to its debug channel (secrets in logs)', () => {
  let lines: string[];
  let previousNamespaces: string;
  const previousLog = createDebug.log;
  beforeAll(() => {
    lines = [];
    previousNamespaces = createDebug.disable();
    // The csrf channel too: a confirmation form from another origin is refused by ssoSession before the provider.
    createDebug.enable('express-sso-kit:qr,express-sso-kit:csrf');
    createDebug.log = (...args: unknown[]) => {
      lines.push(format(...args));
    };
  });
  afterAll(() => {
    createDebug.log = previousLog;
    createDebug.disable();
    if (previousNamespaces) createDebug.enable(previousNamespaces);
  });

  it('says why a scan, decision, redirect or exchange was refused, and never names a code, token, state or cookie', async () => {
    const secrets: string[] = [idp.shopSecret];
    expect((await idp.call('get', `/sns/oauth2/qrconnect?${qrconnectQuery({ redirect_uri: 'https://evil.example/cb' })}`)).status).toBe(
      400,
    );
    const { authCode, binding } = await newLogin();
    secrets.push(authCode, binding.split('=')[1]!, 'st-123');
    const partner = await idp.signIn('alice', 'oidc:https://partner.example.test');
    secrets.push(partner.split('=')[1]!);
    await patchWithSession(authCode, 'scanned', partner);
    const aliceToken = await phoneToken('alice');
    const bobToken = await phoneToken('bob');
    secrets.push(aliceToken, bobToken);
    await patchAsPhone(authCode, 'scanned', aliceToken);
    await patchAsPhone(authCode, 'confirmed', bobToken);
    await patchAsPhone(authCode, 'confirmed', aliceToken);
    await postConfirmation(authCode, 'denied', partner).set('Origin', 'https://evil.example');
    await idp.call('get', `/sns/qr-logins/${authCode}/redirection`);
    const location = (await idp.call('get', `/sns/qr-logins/${authCode}/redirection`).set('Cookie', binding)).headers.location as string;
    await idp.call('get', `/sns/qr-logins/${authCode}/redirection`).set('Cookie', binding);
    const code = new URL(location).searchParams.get('code')!;
    secrets.push(code);
    const query = { appid: 'shop', secret: idp.shopSecret, code, grant_type: 'authorization_code' };
    const tokens = (await idp.call('get', '/sns/oauth2/access_token').query(query)).body as Record<string, string>;
    secrets.push(tokens.access_token!, tokens.refresh_token!);
    await idp.call('get', '/sns/oauth2/access_token').query(query);
    await idp.call('get', '/sns/oauth2/access_token').query({ ...query, secret: 'w'.repeat(32) });
    await idp
      .call('get', '/sns/userinfo')
      .query({ openid: tokens.openid!, access_token: `${tokens.access_token!}x` })
      .set('Authorization', `Bearer ${tokens.access_token!}`);

    const log = lines.join('\n');
    for (const reason of [
      'qrconnect refused for appid "shop": The return address is not registered',
      'the session user is of source "oidc:https://partner.example.test", not the directory "directory:local"',
      'confirmed refused: not_scanner',
      'ssoSession refused POST: origin-not-allowed (from https://evil.example,',
      'redirect refused: the browser does not hold the binding cookie',
      'redirect refused: the redirect was already collected',
      'GET /sns/oauth2/access_token refused: code_used (errcode 40163)',
      'GET /sns/oauth2/access_token refused: invalid_secret (errcode 40125)',
      'GET /sns/userinfo refused: invalid_access_token (errcode 40014)',
    ]) {
      expect(log).toContain(reason);
    }
    for (const secret of secrets) expect(log).not.toContain(secret);
  });
});
