import { KeySourceUnavailable, KeySourceUnavailableError, RefreshTokenError, TokenError } from '../../lib/tokens';

describe('token errors', () => {
  it('carry a stable reason and a message without internals', () => {
    const error = new TokenError('missing_claim', 'exp');
    expect([error.name, error.reason, error.claim, error.message]).toEqual([
      'TokenError',
      'missing_claim',
      'exp',
      'the token lacks a required claim (exp)',
    ]);
    expect(new TokenError('bad_signature').message).toBe('the token signature is invalid');
  });

  it('tell a key-source outage from a broken key source', () => {
    expect(new KeySourceUnavailableError('timeout').failure).toBe('timeout');
    expect(new KeySourceUnavailable('bad_response')).toBeInstanceOf(KeySourceUnavailableError);
  });

  it('map every refresh-token refusal to invalid_grant', () => {
    for (const reason of ['invalid', 'reused', 'revoked', 'client_mismatch'] as const) {
      expect(new RefreshTokenError(reason)).toMatchObject({ reason, oauthError: 'invalid_grant' });
    }
  });
});
