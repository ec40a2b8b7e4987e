import crypto from 'node:crypto';
import { constantTimeEqual, sha256, sha256Bytes } from '../../lib/util/digest';

afterEach(() => jest.restoreAllMocks());

describe('sha256', () => {
  it('gives the SHA-256 of a string as UTF-8, in the asked encoding', () => {
    // FIPS 180-2 test vector for "abc".
    const abc = 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad';
    expect(sha256('abc', 'hex')).toBe(abc);
    expect(sha256('abc', 'base64url')).toBe(Buffer.from(abc, 'hex').toString('base64url'));
    expect(sha256('abc', 'base64')).toBe(Buffer.from(abc, 'hex').toString('base64'));
    expect(sha256Bytes('abc').equals(Buffer.from(abc, 'hex'))).toBe(true);
    expect(sha256('é', 'hex')).toBe(crypto.createHash('sha256').update(Buffer.from('é', 'utf8')).digest('hex'));
  });
});

describe('constantTimeEqual', () => {
  it('tells equal from different secrets, of any lengths', () => {
    expect(constantTimeEqual('s3cret', 's3cret')).toBe(true);
    expect(constantTimeEqual('s3cret', 's3cre7')).toBe(false);
    expect(constantTimeEqual('short', 'a much longer expected value')).toBe(false);
    expect(constantTimeEqual('', '')).toBe(true);
  });

  it('compares with crypto.timingSafeEqual on two 32-byte SHA-256 digests, whatever the lengths', () => {
    const spy = jest.spyOn(crypto, 'timingSafeEqual');
    constantTimeEqual('short', 'a much longer expected value');
    expect(spy).toHaveBeenCalledTimes(1);
    const [a, b] = spy.mock.calls[0] as [Buffer, Buffer];
    expect([a.length, b.length]).toEqual([32, 32]);
    expect(a.equals(crypto.createHash('sha256').update('short').digest())).toBe(true);
  });
});
