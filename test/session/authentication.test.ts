import { authenticationOf, levelOf, loginAuthentication } from '../../lib/session/authentication';

describe('the authentication record of a login', () => {
  it('derives amr and a one-factor level from the login method when the login says nothing', () => {
    expect(loginAuthentication('password', undefined, 1_800_000_000)).toEqual({
      acr: '1fa',
      amr: ['pwd'],
      authTime: 1_800_000_000,
      factors: [{ method: 'pwd', at: 1_800_000_000 }],
    });
    expect(loginAuthentication('qr', undefined, 5).amr).toEqual(['qr']);
    expect(loginAuthentication('oidc', undefined, 5).amr).toEqual(['ext']);
  });

  it('counts two kinds of factor as 2fa and a hardware key as phishing-resistant', () => {
    expect(levelOf(['pwd'])).toBe('1fa');
    expect(levelOf(['pwd', 'pwd'])).toBe('1fa');
    expect(levelOf(['pwd', 'otp'])).toBe('2fa');
    expect(levelOf(['mfa'])).toBe('2fa');
    expect(levelOf(['hwk'])).toBe('phr');
    expect(levelOf(['swk'])).toBe('1fa');
  });

  it('keeps what the login states: the provider says how its user authenticated', () => {
    const auth = loginAuthentication('oidc', { amr: ['pwd', 'otp'], acr: 'urn:idp:loa:2', authTime: 42 }, 99);
    expect(auth).toEqual({
      acr: 'urn:idp:loa:2',
      amr: ['pwd', 'otp'],
      authTime: 42,
      factors: [
        { method: 'pwd', at: 42 },
        { method: 'otp', at: 42 },
      ],
    });
  });

  it('gives sessions stored before the record existed one derived from their method and time', () => {
    expect(authenticationOf({ method: 'password', authenticatedAt: 1_800_000_000_500 })).toMatchObject({
      acr: '1fa',
      amr: ['pwd'],
      authTime: 1_800_000_000,
    });
    const stored = { acr: '2fa', amr: ['pwd', 'otp'], authTime: 7, factors: [] };
    expect(authenticationOf({ method: 'password', authenticatedAt: 0, authentication: stored })).toBe(stored);
  });
});
