import { sessionShortfall } from '../../lib/provider/interaction-routes';
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
  });
});
