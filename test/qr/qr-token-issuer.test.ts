import { qrTokenIssuer } from '../../lib/qr/qr-token-issuer';
import { MemoryStore } from '../../lib/store';
import { KeySet } from '../../lib/tokens/key-set';
import { TokenService } from '../../lib/tokens/token-service';

describe('qrTokenIssuer', () => {
  const keys = KeySet.generate('ES256');
  let store: MemoryStore;
  beforeEach(() => {
    store = new MemoryStore();
  });
  afterEach(() => store.close());

  it('refuses a TokenService without a store (no refresh tokens, no revocation)', () => {
    expect(() => qrTokenIssuer(new TokenService({ keys, issuer: 'https://idp.example.test' }))).toThrow(/needs a store/);
  });

  it('accepts a TokenService with the default access-token lifetime: its revocation marks outlive every token it signs', () => {
    const service = new TokenService({ keys, issuer: 'https://idp.example.test', store });
    expect(service.refreshTokens?.accessTokenLifetimeSeconds).toBe(86_400);
    expect(() => qrTokenIssuer(service)).not.toThrow();
  });

  it('issues, verifies, rotates and revokes through the TokenService', async () => {
    const issuer = qrTokenIssuer(new TokenService({ keys, issuer: 'https://idp.example.test', store, accessTokenLifetimeSeconds: 7200 }));
    const request = {
      subject: 'openid-1',
      audience: 'shop',
      scope: 'snsapi_login',
      roles: [],
      clientId: 'shop',
      grantId: 'grant-1',
      expiresInSeconds: 7200,
    };
    const access = await issuer.issueAccessToken(request);
    expect(await issuer.verifyAccessToken(access, 'shop')).toMatchObject({ sub: 'openid-1', aud: 'shop', gid: 'grant-1' });
    await expect(issuer.verifyAccessToken(access, 'admin')).rejects.toMatchObject({ reason: 'wrong_audience' });
    const refresh = await issuer.issueRefreshToken({ subject: 'openid-1', clientId: 'shop', grantId: 'grant-1', scope: 'snsapi_login' });
    const rotated = await issuer.rotateRefreshToken(refresh, 'shop');
    expect(rotated).toMatchObject({ subject: 'openid-1', clientId: 'shop', grantId: 'grant-1', scope: 'snsapi_login' });
    await issuer.revokeGrant('grant-1');
    await expect(issuer.verifyAccessToken(access, 'shop')).rejects.toMatchObject({ reason: 'revoked' });
    await expect(issuer.rotateRefreshToken(rotated.refreshToken, 'shop')).rejects.toThrow();
  });
});
