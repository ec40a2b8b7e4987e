import { loginAuthentication } from '../../lib/session/authentication';
import { sessionShortfall } from '../../lib/provider/interaction-routes';
import { raiseAuthentication } from '../../lib/session/step-up';
import type { SessionUser } from '../../lib/session/types';

const NOW = 1_800_000_000;

function user(amr: string[], authTime = NOW - 60): SessionUser {
  return {
    id: 'directory:local|alice',
    source: 'directory:local',
    subject: 'alice',
    name: 'Alice',
    roles: [],
    method: 'password',
    authenticatedAt: authTime * 1000,
    authentication: loginAuthentication('password', { amr }, authTime),
  };
}

const interaction = (params: Record<string, unknown>, reasons: string[] = []) => ({ params, prompt: { reasons } }) as never;
const clock = { nowSeconds: NOW, reauthenticationAskedAt: undefined };

describe('sessionShortfall: what a provider login asks of the portal session', () => {
  it('orders levels: a session at or above the weakest kit level asked meets acr_values', () => {
    expect(sessionShortfall(user(['pwd']), interaction({ acr_values: '2fa' }), clock)).toBe('acr');
    expect(sessionShortfall(user(['pwd', 'otp']), interaction({ acr_values: '2fa' }), clock)).toBeUndefined();
    expect(sessionShortfall(user(['hwk']), interaction({ acr_values: '2fa phr' }), clock)).toBeUndefined();
    expect(sessionShortfall(user(['pwd', 'otp']), interaction({ acr_values: 'phr' }), clock)).toBe('acr');
    // A value that is not one of the kit's is met only exactly.
    expect(sessionShortfall(user(['pwd', 'otp']), interaction({ acr_values: 'urn:gold' }), clock)).toBe('acr');
  });

  it('asks a fresh authentication for max_age older than the session’s last factor', () => {
    expect(sessionShortfall(user(['pwd'], NOW - 600), interaction({ max_age: '300' }), clock)).toBe('fresh');
    expect(sessionShortfall(user(['pwd'], NOW - 100), interaction({ max_age: '300' }), clock)).toBeUndefined();
  });

  it('counts a factor presented at the step-up page after prompt=login asked as the fresh sign-in', () => {
    const asked = (NOW - 10) * 1000;
    const before = user(['pwd'], NOW - 60);
    expect(sessionShortfall(before, interaction({}, ['login_prompt']), { nowSeconds: NOW, reauthenticationAskedAt: asked })).toBe('fresh');
    const steppedUp = { ...before, authentication: raiseAuthentication(before.authentication!, 'pwd', NOW - 5) };
    expect(
      sessionShortfall(steppedUp, interaction({}, ['login_prompt']), { nowSeconds: NOW, reauthenticationAskedAt: asked }),
    ).toBeUndefined();
  });

  it('answers login without a session', () => {
    expect(sessionShortfall(undefined, interaction({}), clock)).toBe('login');
  });
});
