import { ssoSession } from '../../lib';
import { debugLines } from '../helpers/debug-lines';
import { expectProblem } from '../helpers/problem';
import { testRedisStore } from '../helpers/redis';
import { loginAs, sessionSetCookieLine, SESSION_COOKIE, ssoOptions, startSsoApp, userId, via } from '../helpers/sso-apps';

/**
 * Cookie tossing: a sibling subdomain (or a page that can set cookies on one) plants a second session cookie for the
 * parent domain with a narrower Path or host, which the browser then sends before the real one (RFC 6265 §5.4
 * orders longer paths first). Whichever cookie the server picks, someone else chose it; so a name sent twice with
 * two values authenticates nobody.
 */
let redis: Awaited<ReturnType<typeof testRedisStore>>;
let shop: Awaited<ReturnType<typeof startSsoApp>>;
let victim: string;
let attacker: string;

beforeAll(async () => {
  redis = await testRedisStore('cookie-tossing');
  shop = await startSsoApp(ssoSession(ssoOptions({ store: redis.store })));
  victim = await loginAs(shop.server, 'shop.example.test', { id: 'victim' });
  attacker = await loginAs(shop.server, 'shop.example.test', { id: 'mallory' });
});
afterAll(async () => {
  await shop.close();
  await redis.cleanup();
});

const valueOf = (pair: string): string => pair.slice(pair.indexOf('=') + 1);
const me = (cookieHeader: string) => via(shop.server, 'shop.example.test', 'get', '/me', cookieHeader).set('Accept', 'application/json');

describe('cookie tossing from a sibling subdomain', () => {
  it('answers as signed out when the attacker cookie comes first (a narrower Path, sent first)', async () => {
    expectProblem(await me(`${attacker}; ${victim}`), 401, 'session_required');
  });

  it('answers as signed out when the attacker cookie comes second', async () => {
    expectProblem(await me(`${victim}; theme=dark; ${attacker}`), 401, 'session_required');
  });

  it('answers as signed out when the tossed value is not even a signed session', async () => {
    expectProblem(await me(`${victim}; ${SESSION_COOKIE}=s%3Aplanted.value`), 401, 'session_required');
  });

  it('leaves both sessions intact: each still works alone', async () => {
    await me(`${attacker}; ${victim}`);
    expect((await me(victim)).body.id).toBe(userId('victim'));
    expect((await me(attacker)).body.id).toBe(userId('mallory'));
  });

  it("says why on the session debug channel, without either cookie's value", async () => {
    const lines = await debugLines('session', () => me(`${attacker}; ${victim}`));
    expect(lines.join('\n')).toMatch(/sent twice with different values/);
    for (const secret of [valueOf(victim), decodeURIComponent(valueOf(victim)), valueOf(attacker), decodeURIComponent(valueOf(attacker))]) {
      expect(lines.join('\n')).not.toContain(secret);
    }
  });
});

describe('a tossed cookie on a state-changing request', () => {
  it('authenticates nobody: the POST is answered 401, neither as the victim nor as the attacker', async () => {
    const res = await via(shop.server, 'shop.example.test', 'post', '/orders', `${attacker}; ${victim}`).set('Accept', 'application/json');
    expectProblem(res, 401, 'session_required');
  });

  it('cannot be used to log the victim out: logout sees no session and the victim stays signed in', async () => {
    const res = await via(shop.server, 'shop.example.test', 'post', '/logout-everywhere', `${attacker}; ${victim}`).set(
      'Accept',
      'application/json',
    );
    expectProblem(res, 401, 'session_required');
    expect((await me(victim)).status).toBe(200);
  });
});

describe('the cookie name is matched exactly, as the cookie package parses the header', () => {
  it('does not take a cookie whose name only ends with the session cookie name', async () => {
    expectProblem(await me(`x${attacker}`), 401, 'session_required');
    expect((await me(`x${attacker}; ${victim}`)).body.id).toBe(userId('victim'));
  });

  it("does not take the session cookie name inside another cookie's value", async () => {
    expectProblem(await me(`note="hello ${attacker}"`), 401, 'session_required');
    expectProblem(await me(`note=${attacker}`), 401, 'session_required');
    expect((await me(`note="hello ${attacker}"; ${victim}`)).body.id).toBe(userId('victim'));
    expect((await me(`note=${attacker}; ${victim}`)).body.id).toBe(userId('victim'));
  });

  it('accepts the same cookie twice with the same value (a browser holding one cookie under two paths)', async () => {
    expect((await me(`${victim}; ${victim}`)).body.id).toBe(userId('victim'));
    const decoded = `${SESSION_COOKIE}=${decodeURIComponent(valueOf(victim))}`;
    expect((await me(`${victim}; ${decoded}`)).body.id).toBe(userId('victim'));
  });
});

describe('the __Secure- prefix', () => {
  it('names the Secure session cookie __Secure-sso.sid, which browsers accept only from https pages', async () => {
    const res = await via(shop.server, 'shop.example.test', 'post', '/login').send({
      id: 'prefix',
      name: 'P',
      roles: [],
      method: 'password',
    });
    const line = sessionSetCookieLine(res)!;
    expect(line.startsWith('__Secure-sso.sid=')).toBe(true);
    expect(line).toMatch(/; Secure/);
  });

  it('ignores a session cookie under the unprefixed name, the one a plain-http sibling could set', async () => {
    expectProblem(await me(`sso.sid=${valueOf(victim)}`), 401, 'session_required');
  });
});
