import { randomBytes } from 'node:crypto';
import { looksLikeCredential, redactPath } from '../../lib/http/log-redaction';

describe('looksLikeCredential', () => {
  it.each([
    randomBytes(24).toString('base64url'), // a QR auth_code
    randomBytes(16).toString('base64url').slice(0, 22), // a session handle
    'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.sig',
    '6f1c8a52-2b1e-4c4f-9a53-2f6e1c9b7d01',
    'a%2Fb',
    '%E0%A4%A',
  ])('treats %s as a possible credential', (segment) => {
    expect(looksLikeCredential(segment)).toBe(true);
  });

  it.each(['sessions', 'qr-logins', 'openid-configuration', '.well-known', '42', 'reports', 'Alice', 'v2', ''])(
    'keeps the route word %p',
    (segment) => {
      expect(looksLikeCredential(segment)).toBe(false);
    },
  );
});

describe('redactPath', () => {
  it('drops the query and replaces credential segments', () => {
    const code = randomBytes(24).toString('base64url');
    expect(redactPath(`/sns/qr-logins/${code}/redirection?code=abc&state=xyz`)).toBe('/sns/qr-logins/[redacted]/redirection');
    expect(redactPath('/account/sessions?x=1')).toBe('/account/sessions');
    expect(redactPath('/')).toBe('/');
  });

  it('cuts an overlong path', () => {
    const path = redactPath(`/${'a/'.repeat(400)}`);
    expect(path.length).toBeLessThanOrEqual(257);
    expect(path.endsWith('…')).toBe(true);
  });
});
