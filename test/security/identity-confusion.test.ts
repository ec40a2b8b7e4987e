import { randomBytes } from 'node:crypto';
import request from 'supertest';
import { startIdentityApps, type IdentityApps } from '../helpers/identity-apps';
import { TestUserAgent } from '../helpers/http-user-agent';
import { loadJose } from '../helpers/jose-tokens';
import type { TestIdp } from '../helpers/oidc-provider';
import { BACKCHANNEL_LOGOUT_EVENT } from '../../lib/oidc';

/**
 * Identity confusion: two sources (two OpenID providers, the portal's password directory, the QR provider's users)
 * may use the same subject for different people. An identity is (source, subject); whoever holds one must never act
 * as the other — see their sessions, end them, inherit their roles, or approve QR logins in their name.
 */
describe('identity confusion across sources', () => {
  let kit: IdentityApps;

  beforeAll(async () => {
    kit = await startIdentityApps();
  });
  afterAll(async () => {
    await kit.close();
  });

  interface SessionView {
    id: string;
    current: boolean;
  }

  const json = (ua: TestUserAgent, url: string) => ua.request(url, { headers: { Accept: 'application/json' } });
  /** A state-changing request as a browser on the app's own origin sends it. */
  const post = (ua: TestUserAgent, origin: string, path: string, method = 'POST') =>
    ua.request(`${origin}${path}`, { method, headers: { Origin: origin, Accept: 'application/json' } });

  async function userOf(ua: TestUserAgent, origin = kit.shop.origin): Promise<Record<string, unknown> | null> {
    const answer = await json(ua, `${origin}/me`);
    return answer.status === 200 ? JSON.parse(answer.body).user : null;
  }

  async function sessionsOf(ua: TestUserAgent, origin = kit.auth.origin): Promise<SessionView[]> {
    const answer = await json(ua, `${origin}/account/sessions`);
    expect(answer.status).toBe(200);
    return JSON.parse(answer.body) as SessionView[];
  }

  /** A browser logged in through provider `name` as `sub`, at `app` (`auth` or `link`). */
  async function oidcLogin(idp: TestIdp, name: 'corp' | 'partner', sub = 'alice', app = kit.auth): Promise<TestUserAgent> {
    const ua = new TestUserAgent();
    idp.loginAs(sub);
    await ua.follow(`${app.origin}/login/${name}?login_hint=${sub}`);
    return ua;
  }

  /** A browser logged in with the portal's password form. */
  async function passwordLogin(username: string): Promise<TestUserAgent> {
    const ua = new TestUserAgent();
    const answer = await ua.request(`${kit.auth.origin}/login`, {
      form: { username, password: `${username}-password`, return_to: '' },
      headers: { Origin: kit.auth.origin },
    });
    expect(answer.status).toBeGreaterThanOrEqual(300);
    expect(answer.status).toBeLessThan(400);
    return ua;
  }

  describe('two OpenID providers issuing the same sub to two people', () => {
    it('makes them two users, each the identity (oidc:<issuer>, sub)', async () => {
      const corpAlice = await oidcLogin(kit.corp, 'corp');
      const partnerAlice = await oidcLogin(kit.partner, 'partner');
      expect(await userOf(corpAlice)).toMatchObject({
        id: `oidc:${kit.corp.issuer}|alice`,
        source: `oidc:${kit.corp.issuer}`,
        subject: 'alice',
      });
      expect(await userOf(partnerAlice)).toMatchObject({
        id: `oidc:${kit.partner.issuer}|alice`,
        source: `oidc:${kit.partner.issuer}`,
        subject: 'alice',
      });
    });

    it("lists only one's own sessions", async () => {
      const corpAlice = await oidcLogin(kit.corp, 'corp');
      const partnerAlice = await oidcLogin(kit.partner, 'partner');
      const corpSessions = await sessionsOf(corpAlice);
      const partnerSessions = await sessionsOf(partnerAlice);
      expect(partnerSessions.every((session) => !corpSessions.some((other) => other.id === session.id))).toBe(true);
      expect(partnerSessions.filter((session) => session.current)).toHaveLength(1);
      // Every session partner's alice sees is partner's alice's: ending them leaves corp's alice logged in.
      for (const session of partnerSessions)
        expect((await post(partnerAlice, kit.auth.origin, `/account/sessions/${session.id}`, 'DELETE')).status).toBe(204);
      expect(await userOf(corpAlice)).not.toBeNull();
    });

    it("cannot revoke the other's session (404, the session lives on)", async () => {
      const corpAlice = await oidcLogin(kit.corp, 'corp');
      const partnerAlice = await oidcLogin(kit.partner, 'partner');
      const target = (await sessionsOf(corpAlice)).find((session) => session.current)!;
      const answer = await post(partnerAlice, kit.auth.origin, `/account/sessions/${target.id}`, 'DELETE');
      expect(answer.status).toBe(404);
      expect(await userOf(corpAlice)).not.toBeNull();
    });

    it('logs out everywhere only the identity that asked', async () => {
      const corpAlice = await oidcLogin(kit.corp, 'corp');
      const partnerAlice = await oidcLogin(kit.partner, 'partner');
      expect((await post(partnerAlice, kit.auth.origin, '/logout/everywhere')).status).toBe(204);
      expect(await userOf(partnerAlice)).toBeNull();
      expect(await userOf(corpAlice)).not.toBeNull();
    });

    it('grants the roles a provider trusted for roles asserts, and none of a partner provider claiming admin', async () => {
      const corpAlice = await oidcLogin(kit.corp, 'corp');
      const partnerAlice = await oidcLogin(kit.partner, 'partner');
      expect(await userOf(corpAlice)).toMatchObject({ roles: ['admin'] });
      expect(await userOf(partnerAlice)).toMatchObject({ roles: [] });
      expect((await json(corpAlice, `${kit.auth.origin}/reports`)).status).toBe(200);
      const refused = await json(partnerAlice, `${kit.auth.origin}/reports`);
      expect(refused.status).toBe(403);
    });
  });

  describe('back-channel logout from the other provider', () => {
    async function logoutToken(idp: TestIdp, claims: Record<string, unknown>): Promise<string> {
      const jose = await loadJose();
      const key = await jose.importJWK(idp.signingKey, 'RS256');
      const now = Math.floor(Date.now() / 1000);
      return new jose.SignJWT({
        iss: idp.issuer,
        aud: 'portal',
        iat: now,
        exp: now + 120,
        jti: randomBytes(12).toString('hex'),
        events: { [BACKCHANNEL_LOGOUT_EVENT]: {} },
        ...claims,
      })
        .setProtectedHeader({ alg: 'RS256', kid: idp.signingKey.kid, typ: 'logout+jwt' })
        .sign(key);
    }

    const deliver = (name: 'corp' | 'partner', token: string) =>
      new TestUserAgent().request(kit.backchannelUri(name), { form: { logout_token: token }, headers: { Accept: 'application/json' } });

    it("ends by sub only that provider's user: partner's sub-only token does not reach corp's alice", async () => {
      const corpAlice = await oidcLogin(kit.corp, 'corp');
      const partnerAlice = await oidcLogin(kit.partner, 'partner');
      expect((await deliver('partner', await logoutToken(kit.partner, { sub: 'alice' }))).status).toBe(200);
      expect(await userOf(partnerAlice)).toBeNull();
      expect(await userOf(corpAlice)).not.toBeNull();
    });

    it("cannot end corp's session by its sid: partner's token naming that sid ends nothing of corp's", async () => {
      const corpAlice = await oidcLogin(kit.corp, 'corp');
      const sid = ((await userOf(corpAlice))!.attributes as Record<string, string>).sid!;
      expect(sid).toBeTruthy();
      expect((await deliver('partner', await logoutToken(kit.partner, { sid }))).status).toBe(200);
      expect(await userOf(corpAlice)).not.toBeNull();
      // The same sid from corp itself does end it.
      expect((await deliver('corp', await logoutToken(kit.corp, { sid }))).status).toBe(200);
      expect(await userOf(corpAlice)).toBeNull();
    });

    it("refuses partner's token claiming corp's issuer, at corp's endpoint (400, nobody logged out)", async () => {
      const corpAlice = await oidcLogin(kit.corp, 'corp');
      const forged = await logoutToken(kit.partner, { iss: kit.corp.issuer, sub: 'alice' });
      const answer = await deliver('corp', forged);
      expect(answer.status).toBe(400);
      expect(JSON.parse(answer.body)).toMatchObject({ code: 'invalid_logout_token', error: 'invalid_request' });
      expect(await userOf(corpAlice)).not.toBeNull();
    });

    it("refuses partner's token at corp's endpoint (400, nobody logged out)", async () => {
      const corpAlice = await oidcLogin(kit.corp, 'corp');
      const answer = await deliver('corp', await logoutToken(kit.partner, { sub: 'alice' }));
      expect(answer.status).toBe(400);
      expect(await userOf(corpAlice)).not.toBeNull();
    });

    it('ends only its own sessions when a user logs out at the partner provider itself', async () => {
      const corpAlice = await oidcLogin(kit.corp, 'corp');
      const partnerAlice = await oidcLogin(kit.partner, 'partner');
      const confirm = await partnerAlice.request(`${kit.partner.issuer}/session/end`);
      const xsrf = /name="xsrf" value="([^"]+)"/.exec(confirm.body)?.[1];
      const done = await partnerAlice.request(`${kit.partner.issuer}/session/end/confirm`, { form: { xsrf: xsrf!, logout: 'yes' } });
      expect(done.status).toBeLessThan(400);
      expect(await userOf(partnerAlice)).toBeNull();
      expect(await userOf(corpAlice)).not.toBeNull();
    });
  });

  describe("the portal directory's alice and an OpenID user with sub alice", () => {
    it('are two users who cannot see or end each other’s sessions', async () => {
      const directoryAlice = await passwordLogin('alice');
      const corpAlice = await oidcLogin(kit.corp, 'corp');
      expect(await userOf(directoryAlice)).toMatchObject({ id: 'directory:local|alice', source: 'directory:local', subject: 'alice' });
      expect(await userOf(corpAlice)).toMatchObject({ id: `oidc:${kit.corp.issuer}|alice` });
      expect((await post(corpAlice, kit.auth.origin, '/logout/everywhere')).status).toBe(204);
      expect(await userOf(directoryAlice)).not.toBeNull();
      const corpAgain = await oidcLogin(kit.corp, 'corp');
      const directorySessions = await sessionsOf(directoryAlice);
      const corpSessions = await sessionsOf(corpAgain);
      expect(directorySessions.some((session) => corpSessions.some((other) => other.id === session.id))).toBe(false);
    });
  });

  describe('the QR provider', () => {
    /** A login request shown as a QR code to the desktop browser; returns its confirmation URL and status URL. */
    async function qrRequest(desktop: TestUserAgent): Promise<{ confirmation: string; status: string; authCode: string }> {
      const query = new URLSearchParams({
        appid: kit.qrApp.appid,
        redirect_uri: kit.qrApp.redirectUri,
        response_type: 'code',
        scope: 'snsapi_login',
        state: 'qr-state-1',
      });
      const answer = await json(desktop, `${kit.idp.origin}/sns/oauth2/qrconnect?${query}`);
      expect(answer.status).toBe(201);
      const body = JSON.parse(answer.body) as { qr_url: string; status_url: string };
      const confirmation = new URL(body.qr_url, kit.idp.origin).href;
      const authCode = /\/sns\/qr-logins\/([^/]+)\//.exec(confirmation)![1]!;
      return { confirmation, status: new URL(body.status_url, kit.idp.origin).href, authCode };
    }

    /** PATCH /sns/qr-logins/{auth_code} with a JSON body, carrying the browser's cookies. */
    function patchLogin(ua: TestUserAgent, authCode: string, body: Record<string, string>) {
      const url = `${kit.idp.origin}/sns/qr-logins/${authCode}`;
      const cookie = ua
        .cookiesFor(url)
        .map((jar) => `${jar.name}=${jar.value}`)
        .join('; ');
      return request(kit.idp.app)
        .patch(`/sns/qr-logins/${authCode}`)
        .set('Host', new URL(url).host)
        .set('X-Forwarded-Proto', 'https')
        .set('Origin', kit.idp.origin)
        .set('Cookie', cookie)
        .send(body);
    }

    const statusOf = async (desktop: TestUserAgent, url: string): Promise<string> => JSON.parse((await json(desktop, url)).body).status;

    it.each<['corp' | 'partner']>([['partner'], ['corp']])(
      "refuses %s's alice, whose sub is a directory user's id, to scan or confirm in that user's name (403 foreign_identity)",
      async (name) => {
        const desktop = new TestUserAgent();
        const { confirmation, status, authCode } = await qrRequest(desktop);
        const impostor = await oidcLogin(name === 'corp' ? kit.corp : kit.partner, name);
        const page = await json(impostor, confirmation);
        expect(page.status).toBe(403);
        expect(JSON.parse(page.body).code).toBe('foreign_identity');
        const confirm = await impostor.request(confirmation, {
          form: { status: 'confirmed' },
          headers: { Origin: kit.idp.origin, Accept: 'application/json' },
        });
        expect(confirm.status).toBe(403);
        expect(JSON.parse(confirm.body).code).toBe('foreign_identity');
        // The phone app's resource refuses the same session.
        const patched = await patchLogin(impostor, authCode, { status: 'scanned' });
        expect(patched.status).toBe(403);
        expect(patched.body.code).toBe('foreign_identity');
        expect(await statusOf(desktop, status)).toBe('pending');
      },
    );

    it("lets the directory's alice confirm (the same request shape succeeds for the right identity)", async () => {
      const desktop = new TestUserAgent();
      const { confirmation, status } = await qrRequest(desktop);
      const directoryAlice = await passwordLogin('alice');
      expect((await json(directoryAlice, confirmation)).status).toBe(200);
      const confirm = await directoryAlice.request(confirmation, { form: { status: 'confirmed' }, headers: { Origin: kit.idp.origin } });
      expect(confirm.status).toBe(303);
      expect(await statusOf(desktop, status)).toBe('confirmed');
    });
  });

  describe('linking two sources: only through ssoSession({ linkAccount })', () => {
    it('without linkAccount, corp’s alice stays her own user', async () => {
      const corpAlice = await oidcLogin(kit.corp, 'corp', 'alice', kit.auth);
      const user = await userOf(corpAlice);
      expect(user).toMatchObject({ id: `oidc:${kit.corp.issuer}|alice` });
      expect(user).not.toHaveProperty('linkedFrom');
    });

    it("with linkAccount, corp's alice logs in as the directory's alice: one account, linkedFrom set", async () => {
      const directoryAlice = await passwordLogin('alice');
      const linkedAlice = await oidcLogin(kit.corp, 'corp', 'alice', kit.link);
      expect(await userOf(linkedAlice)).toMatchObject({
        id: 'directory:local|alice',
        source: 'directory:local',
        subject: 'alice',
        name: 'Alice Directory',
        roles: ['admin'],
        linkedFrom: { source: `oidc:${kit.corp.issuer}`, subject: 'alice' },
      });
      // One account: each browser sees the other's session in its list.
      const fromPassword = await sessionsOf(directoryAlice);
      const fromLinked = await sessionsOf(linkedAlice, kit.link.origin);
      const linkedCurrent = fromLinked.find((session) => session.current)!;
      expect(fromPassword.some((session) => session.id === linkedCurrent.id)).toBe(true);
    });

    it('refuses a login the hook returns null for (403 account_not_linked), and logs nobody in', async () => {
      const ua = new TestUserAgent();
      kit.partner.loginAs('alice');
      const chain = await ua.follow(`${kit.link.origin}/login/partner`, { headers: { Accept: 'application/json' } });
      const last = chain[chain.length - 1]!;
      expect(last.status).toBe(403);
      expect(JSON.parse(last.body).code).toBe('account_not_linked');
      expect(await userOf(ua)).toBeNull();
    });

    it('refuses a corp user the directory does not know (the hook returns null)', async () => {
      const ua = new TestUserAgent();
      kit.corp.loginAs('carol');
      const chain = await ua.follow(`${kit.link.origin}/login/corp`, { headers: { Accept: 'application/json' } });
      expect(chain[chain.length - 1]!.status).toBe(403);
      expect(await userOf(ua)).toBeNull();
    });
  });
});
