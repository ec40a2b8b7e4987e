import type { Request } from 'express';
import { redirectPolicyOf, reloadSession, requireSessionSupport, sessionManagerOf } from '../../lib/oidc/session-bridge';

const request = (fields: Record<string, unknown>) => fields as unknown as Request;

describe("the OIDC middlewares' view of the session module", () => {
  it('names ssoSession when no session is mounted', () => {
    expect(() => requireSessionSupport(request({}), 'oidcLogin')).toThrow(/mount ssoSession\(\) before oidcLogin/);
  });

  it('refuses plain http when the session cookie is Secure with 403 https_required (a client error, not a 500)', () => {
    const req = request({ session: {}, secure: false, protocol: 'http', sso: { cookie: { secure: true } } });
    expect(() => requireSessionSupport(req, 'oidcCallback')).toThrow(expect.objectContaining({ status: 403, code: 'https_required' }));
    expect(() =>
      requireSessionSupport(request({ session: {}, secure: true, sso: { cookie: { secure: true } } }), 'oidcCallback'),
    ).not.toThrow();
  });

  it('prefers an explicit redirect policy and otherwise needs the one of ssoSession', () => {
    const explicit = { sanitize: () => '/', isSafe: () => true, defaultUrl: '/' };
    expect(redirectPolicyOf(request({}), explicit, 'oidcLogin')).toBe(explicit);
    expect(() => redirectPolicyOf(request({}), undefined, 'oidcLogin')).toThrow(/no redirect policy/);
  });

  it('needs a session manager for back-channel logout', () => {
    expect(() => sessionManagerOf(request({}), undefined, 'backchannelLogout')).toThrow(/no session manager/);
  });

  it('reports a session that disappeared during a reload as 401 session_ended, and passes other errors on', async () => {
    const gone = request({ session: { reload: (done: (error?: unknown) => void) => done(new Error('failed to load session')) } });
    await expect(reloadSession(gone)).rejects.toMatchObject({ status: 401, code: 'session_ended' });
    const outage = new Error('connection lost');
    const down = request({ session: { reload: (done: (error?: unknown) => void) => done(outage) } });
    await expect(reloadSession(down)).rejects.toBe(outage);
  });
});
