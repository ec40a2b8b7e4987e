import { randomBytes } from 'node:crypto';
import { deviceTokenKey, issueDeviceToken, readDeviceToken, verifyDeviceToken } from '../../../lib/portal/throttle/device-token';

const NOW = 1_900_000_000;
const key = deviceTokenKey('device-token-test-secret-0123456789-abcdef');

describe('device tokens', () => {
  it('verify for the user they were issued to, with a fresh nonce each time', () => {
    const token = issueDeviceToken(key, 'alice', NOW, 3600);
    expect(token).toMatch(/^d1\.[A-Za-z0-9_-]{22}\.\d+\.[A-Za-z0-9_-]{43}$/);
    expect(verifyDeviceToken(key, token, 'alice', NOW + 10)).toEqual({ token: readDeviceToken(token) });
    expect(readDeviceToken(token)).toEqual({ nonce: expect.any(String), expiresAt: NOW + 3600 });
    expect(readDeviceToken(issueDeviceToken(key, 'alice', NOW, 3600))!.nonce).not.toBe(readDeviceToken(token)!.nonce);
  });

  it('bind the normalized username, not the spelling', () => {
    const token = issueDeviceToken(key, ' Alice ', NOW, 3600);
    expect(verifyDeviceToken(key, token, 'alice', NOW)).toHaveProperty('token');
  });

  it('give nothing for another user, another key, after expiry, or when changed', () => {
    const token = issueDeviceToken(key, 'alice', NOW, 3600);
    expect(verifyDeviceToken(key, token, 'bob', NOW)).toEqual({ refusal: 'bad-signature' });
    expect(verifyDeviceToken(deviceTokenKey(randomBytes(32)), token, 'alice', NOW)).toEqual({ refusal: 'bad-signature' });
    expect(verifyDeviceToken(key, token, 'alice', NOW + 3600)).toEqual({ refusal: 'expired' });
    const [version, nonce, expires, mac] = token.split('.') as [string, string, string, string];
    const longer = `${version}.${nonce}.${Number(expires) + 86400}.${mac}`;
    expect(verifyDeviceToken(key, longer, 'alice', NOW)).toEqual({ refusal: 'bad-signature' });
    const otherNonce = `${version}.${randomBytes(16).toString('base64url')}.${expires}.${mac}`;
    expect(verifyDeviceToken(key, otherNonce, 'alice', NOW)).toEqual({ refusal: 'bad-signature' });
  });

  it('refuse a second spelling of the same MAC (the unused low bits of base64url)', () => {
    const token = issueDeviceToken(key, 'alice', NOW, 3600);
    const last = token.at(-1)!;
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    // 43 base64url characters carry 258 bits for a 256-bit MAC: the last character's two low bits are unused.
    const twin = alphabet[alphabet.indexOf(last) ^ 1]!;
    const respelled = `${token.slice(0, -1)}${twin}`;
    expect(Buffer.from(respelled.split('.')[3]!, 'base64url')).toEqual(Buffer.from(token.split('.')[3]!, 'base64url'));
    expect(verifyDeviceToken(key, respelled, 'alice', NOW)).toEqual({ refusal: 'bad-signature' });
  });

  it.each([
    '',
    'd1',
    'd2.AAAAAAAAAAAAAAAAAAAAAA.1900003600.' + 'A'.repeat(43),
    'd1.short.1900003600.' + 'A'.repeat(43),
    'd1.AAAAAAAAAAAAAAAAAAAAAA.01.' + 'A'.repeat(43),
  ])('read %j as malformed', (text) => {
    expect(readDeviceToken(text)).toBeUndefined();
    expect(verifyDeviceToken(key, text, 'alice', NOW)).toEqual({ refusal: 'malformed' });
  });

  it('derive the same key from the same secret, so every portal instance accepts the tokens of the others', () => {
    const token = issueDeviceToken(deviceTokenKey('device-token-test-secret-0123456789-abcdef'), 'alice', NOW, 60);
    expect(verifyDeviceToken(key, token, 'alice', NOW)).toHaveProperty('token');
    expect(verifyDeviceToken(deviceTokenKey('another-secret-of-enough-length-0123456789'), token, 'alice', NOW)).toHaveProperty('refusal');
  });
});
