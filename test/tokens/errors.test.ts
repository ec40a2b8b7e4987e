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
    expect(error.code).toBe('invalid_token');
  });

  it('tell a key-source outage from a broken key source', () => {
    expect(new KeySourceUnavailableError('timeout')).toMatchObject({ failure: 'timeout', code: 'key_source_unavailable' });
    expect(new KeySourceUnavailableError('bad_response').code).toBe('key_source_error');
    expect(new KeySourceUnavailable('bad_response')).toBeInstanceOf(KeySourceUnavailableError);
  });

  it('map every refresh-token refusal to invalid_grant', () => {
    for (const reason of ['invalid', 'reused', 'revoked', 'client_mismatch'] as const) {
      expect(new RefreshTokenError(reason)).toMatchObject({ reason, code: 'invalid_grant', oauthError: 'invalid_grant' });
    }
  });
});
