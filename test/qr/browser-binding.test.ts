import type { Request } from 'express';
import { hasBinding, hashBinding, readCookies } from '../../lib/qr/browser-binding';

const req = (cookie?: string) => ({ headers: cookie === undefined ? {} : { cookie } }) as unknown as Request;

describe('browser binding', () => {
  it('reads every value of a cookie name and nothing of similar names', () => {
    expect(readCookies(req('a=1; qr_binding=x; qr_binding_old=y; qr_binding=z'), 'qr_binding')).toEqual(['x', 'z']);
    expect(readCookies(req(), 'qr_binding')).toEqual([]);
  });

  it('accepts the request only when one of its binding cookies hashes to the stored hash', () => {
    const stored = hashBinding('right-token');
    expect(hasBinding(req('qr_binding=right-token'), 'qr_binding', stored)).toBe(true);
    expect(hasBinding(req('qr_binding=other; qr_binding=right-token'), 'qr_binding', stored)).toBe(true);
    expect(hasBinding(req('qr_binding=wrong-token'), 'qr_binding', stored)).toBe(false);
    expect(hasBinding(req('other=right-token'), 'qr_binding', stored)).toBe(false);
    expect(hasBinding(req(), 'qr_binding', stored)).toBe(false);
  });

  it('stores only a hash, never the cookie value', () => {
    expect(hashBinding('right-token')).not.toContain('right-token');
    expect(hashBinding('right-token')).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });
});
