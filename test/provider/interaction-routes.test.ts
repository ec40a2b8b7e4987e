import { sessionShortfall } from '../../lib/provider/interaction-routes';
import { loginAuthentication } from '../../lib/session/authentication';
import { raiseAuthentication } from '../../lib/session/step-up';
import type { SessionUser } from '../../lib/session/types';

// When the portal session may answer a provider login as it is, and when the user must sign in again or step up.
// sessionShortfall is pure: the clock is given, so a session's age is a number here, not a wait.
const SIGNED_IN_AT = 1_800_000_000; // epoch seconds

const alice: SessionUser = {
  id: 'directory:local|alice',
  source: 'directory:local',
  subject: 'alice',
  name: 'Alice',
  roles: [],
  method: 'password',
  authenticatedAt: SIGNED_IN_AT * 1000,
};

function interaction(params: Record<string, string>, reasons: string[] = []) {
  return { params, prompt: { name: 'login', reasons, details: {} } } as unknown as Parameters<typeof sessionShortfall>[1];
}

/** Alice signed in at SIGNED_IN_AT with the given factors, each presented `secondsAfterSignIn` later. */
function aliceWith(amr: string[], secondsAfterSignIn = 0): SessionUser {
  return { ...alice, authentication: loginAuthentication('password', { amr }, SIGNED_IN_AT + secondsAfterSignIn) };
}

const at = (secondsAfterSignIn: number, reauthenticationAskedAt?: number) => ({
  nowSeconds: SIGNED_IN_AT + secondsAfterSignIn,
  reauthenticationAskedAt,
});

describe('sessionShortfall', () => {
  it('asks for a login when there is no portal session', () => {
    expect(sessionShortfall(undefined, interaction({}), at(0))).toBe('login');
  });

  it('lets a live session answer a plain request', () => {
    expect(sessionShortfall(alice, interaction({}), at(3600))).toBeUndefined();
  });

  describe('max_age', () => {
    it('asks for a fresh sign-in when the session is older than max_age', () => {
      expect(sessionShortfall(alice, interaction({ max_age: '300' }), at(301))).toBe('fresh');
      expect(sessionShortfall(alice, interaction({ max_age: '0' }), at(1))).toBe('fresh');
    });

    it('lets a session within max_age answer', () => {
      expect(sessionShortfall(alice, interaction({ max_age: '300' }), at(300))).toBeUndefined();
    });
  });

  describe('prompt=login', () => {
    it('asks for a fresh sign-in, and counts only one made after it was asked', () => {
      const asked = (SIGNED_IN_AT + 10) * 1000;
      expect(sessionShortfall(alice, interaction({}, ['login_prompt']), at(20))).toBe('fresh');
      expect(sessionShortfall(alice, interaction({}, ['login_prompt']), at(20, asked))).toBe('fresh');
      const signedInAgain = { ...alice, authenticatedAt: asked + 5000 };
      expect(sessionShortfall(signedInAgain, interaction({}, ['login_prompt']), at(20, asked))).toBeUndefined();
    });
  });

  describe('acr_values', () => {
    it('asks for a step-up when the session has not reached any requested level', () => {
      expect(sessionShortfall(alice, interaction({ acr_values: '2fa phr' }), at(0))).toBe('acr');
    });

    it('lets a session answer when its level is among those requested', () => {
      expect(sessionShortfall(alice, interaction({ acr_values: '1fa 2fa' }), at(0))).toBeUndefined();
    });

    it('orders levels: a session at or above the weakest kit level asked meets acr_values', () => {
      expect(sessionShortfall(aliceWith(['pwd']), interaction({ acr_values: '2fa' }), at(0))).toBe('acr');
      expect(sessionShortfall(aliceWith(['pwd', 'otp']), interaction({ acr_values: '2fa' }), at(0))).toBeUndefined();
      expect(sessionShortfall(aliceWith(['hwk']), interaction({ acr_values: '2fa phr' }), at(0))).toBeUndefined();
      expect(sessionShortfall(aliceWith(['pwd', 'otp']), interaction({ acr_values: 'phr' }), at(0))).toBe('acr');
      // A value that is not one of the kit's is met only exactly.
      expect(sessionShortfall(aliceWith(['pwd', 'otp']), interaction({ acr_values: 'urn:gold' }), at(0))).toBe('acr');
    });
  });

  it('counts a factor presented at the step-up page after prompt=login asked as the fresh sign-in', () => {
    const asked = (SIGNED_IN_AT + 50) * 1000;
    const before = aliceWith(['pwd']);
    expect(sessionShortfall(before, interaction({}, ['login_prompt']), at(60, asked))).toBe('fresh');
    const steppedUp = { ...before, authentication: raiseAuthentication(before.authentication!, 'pwd', SIGNED_IN_AT + 55) };
    expect(sessionShortfall(steppedUp, interaction({}, ['login_prompt']), at(60, asked))).toBeUndefined();
  });

  it('measures max_age from the session’s last factor, not from its sign-in', () => {
    expect(sessionShortfall(aliceWith(['pwd'], 0), interaction({ max_age: '300' }), at(600))).toBe('fresh');
    expect(sessionShortfall(aliceWith(['pwd'], 500), interaction({ max_age: '300' }), at(600))).toBeUndefined();
  });
});
