import { loginAuthentication } from '../../lib/session/authentication';
import {
  InsufficientAuthenticationError,
  levelRank,
  meetsRequirement,
  raiseAuthentication,
  stepUpChallenge,
} from '../../lib/session/step-up';

const NOW = 1_800_000_000;

describe('meetsRequirement', () => {
  const password = loginAuthentication('password', undefined, NOW - 600);
  const twoFactors = raiseAuthentication(password, 'otp', NOW - 60);

  it('orders the levels phr ≥ 2fa ≥ 1fa', () => {
    expect(levelRank('phr')).toBeGreaterThan(levelRank('2fa'));
    expect(levelRank('2fa')).toBeGreaterThan(levelRank('1fa'));
    expect(levelRank('urn:idp:gold')).toBe(0);
    const hardware = loginAuthentication('passkey', { amr: ['hwk'] }, NOW);
    expect(meetsRequirement(hardware, { acr: '2fa' }, NOW)).toBe(true);
    expect(meetsRequirement(twoFactors, { acr: 'phr' }, NOW)).toBe(false);
  });

  it('refuses a password alone for 2fa and accepts password plus code', () => {
    expect(meetsRequirement(password, { acr: '1fa' }, NOW)).toBe(true);
    expect(meetsRequirement(password, { acr: '2fa' }, NOW)).toBe(false);
    expect(meetsRequirement(twoFactors, { acr: '2fa' }, NOW)).toBe(true);
  });

  it('with maxAgeSeconds counts only the factors presented within it', () => {
    // The password is 600 s old and the code 60 s: "2fa within 300 s" is not met, "2fa within 900 s" is.
    expect(meetsRequirement(twoFactors, { acr: '2fa', maxAgeSeconds: 300 }, NOW)).toBe(false);
    expect(meetsRequirement(twoFactors, { acr: '2fa', maxAgeSeconds: 900 }, NOW)).toBe(true);
    expect(meetsRequirement(twoFactors, { maxAgeSeconds: 300 }, NOW)).toBe(true);
    expect(meetsRequirement(password, { maxAgeSeconds: 300 }, NOW)).toBe(false);
  });

  it('does not take an identity provider’s unknown acr for more than its methods show', () => {
    const external = loginAuthentication('oidc', { acr: 'urn:idp:gold', amr: ['pwd'] }, NOW);
    expect(meetsRequirement(external, { acr: '2fa' }, NOW)).toBe(false);
    const externalMfa = loginAuthentication('oidc', { acr: 'urn:idp:gold', amr: ['pwd', 'otp'] }, NOW);
    expect(meetsRequirement(externalMfa, { acr: '2fa', maxAgeSeconds: 60 }, NOW)).toBe(true);
  });
});

describe('raiseAuthentication', () => {
  it('adds the method, raises the level to 2fa, renews its time and keeps the other factors', () => {
    const password = loginAuthentication('password', undefined, NOW - 100);
    const raised = raiseAuthentication(password, 'otp', NOW);
    expect(raised).toEqual({
      acr: '2fa',
      amr: ['pwd', 'otp'],
      authTime: NOW,
      factors: [
        { method: 'pwd', at: NOW - 100 },
        { method: 'otp', at: NOW },
      ],
    });
    const again = raiseAuthentication(raised, 'pwd', NOW + 5);
    expect(again.amr).toEqual(['pwd', 'otp']);
    expect(again.factors).toEqual([
      { method: 'otp', at: NOW },
      { method: 'pwd', at: NOW + 5 },
    ]);
  });

  it('never lowers a level already reached', () => {
    const hardware = loginAuthentication('passkey', { amr: ['hwk'] }, NOW);
    expect(raiseAuthentication(hardware, 'otp', NOW).acr).toBe('phr');
  });
});

describe('InsufficientAuthenticationError', () => {
  it('is a 401 with the RFC 9470 challenge and the requirement in the body', () => {
    const error = new InsufficientAuthenticationError(
      { acr: '2fa', maxAgeSeconds: 300 },
      { stepUpUrl: 'https://auth.example.test/step-up' },
    );
    expect(error.status).toBe(401);
    expect(error.code).toBe('insufficient_user_authentication');
    expect(error.headers['WWW-Authenticate']).toBe(
      'Bearer error="insufficient_user_authentication", error_description="A second factor is required within the last 300 seconds", acr_values="2fa", max_age=300',
    );
    expect(error.extensions).toEqual({ acr_values: '2fa', max_age: 300, step_up_url: 'https://auth.example.test/step-up' });
    expect(stepUpChallenge({ acr: 'phr' }, 'api')).toBe(
      'Bearer realm="api", error="insufficient_user_authentication", error_description="A phishing-resistant authentication is required", acr_values="phr"',
    );
  });
});
