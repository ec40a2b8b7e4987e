import { IdTokenRejectedError, LogoutTokenRejectedError, OidcGrantError } from '../../lib/oidc';
import { loginRejected, misconfigured, providerMisbehaved, providerUnavailable } from '../../lib/oidc/errors';

describe('the OIDC error vocabulary', () => {
  it('gives every domain error a stable code and no HTTP status of its own', () => {
    const domainErrors: Array<[Error & { code: string }, string]> = [
      [new IdTokenRejectedError('nonce does not match'), 'invalid_id_token'],
      [new LogoutTokenRejectedError('jti is malformed'), 'invalid_logout_token'],
      [new OidcGrantError('invalid_grant', 400), 'oidc_grant_refused'],
    ];
    for (const [error, code] of domainErrors) {
      expect(error.code).toBe(code);
      // `status` would be read by error handlers as our answer's status; these are mapped by the middlewares.
      expect(error).not.toHaveProperty('status');
    }
  });

  it.each<[string, { status: number; code: string }, { status: number; code: string }]>([
    ['an unreachable provider', providerUnavailable('corp', 'token endpoint timed out'), { status: 503, code: 'idp_unavailable' }],
    ['a misbehaving provider', providerMisbehaved('corp', 'token endpoint answered 500'), { status: 502, code: 'idp_bad_response' }],
    ['a refused login response', loginRejected('invalid_state', 'Replayed.', '/login/corp'), { status: 400, code: 'invalid_state' }],
    ['a wiring mistake', misconfigured('oidcLogin: mount ssoSession() first'), { status: 500, code: 'oidc_misconfigured' }],
  ])('answers %s with its status and code', (_label, error, expected) => {
    expect(error).toMatchObject(expected);
  });
});
