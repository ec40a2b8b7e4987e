import { randomBytes } from 'node:crypto';
import { debugChannel, redactCredentials } from '../../lib/util/debug';
import { captureLogs } from '../helpers/log-capture';

describe('debugChannel', () => {
  it('writes to express-sso-kit:<area> only when DEBUG names it', () => {
    const quiet = captureLogs({ debug: 'express-sso-kit:session' });
    try {
      debugChannel('rbac')('not shown');
      debugChannel('session')('shown %s', 'here');
    } finally {
      quiet.stop();
    }
    expect(quiet.debugLines()).toEqual([expect.stringContaining('express-sso-kit:session shown here')]);
  });

  it('returns one logger per area', () => {
    expect(debugChannel('store')).toBe(debugChannel('store'));
  });
});

describe('redactCredentials', () => {
  it('replaces runs that look random: 20+ characters with a digit, or 32+', () => {
    const hex = randomBytes(20).toString('hex');
    const jwt = `eyJhbGciOiJIUzI1NiJ9.${randomBytes(30).toString('base64url')}.${randomBytes(32).toString('base64url')}`;
    expect(redactCredentials(`code ${hex} was refused`)).toBe('code [redacted] was refused');
    expect(redactCredentials(`Bearer ${jwt}`)).toBe('Bearer [redacted]');
    expect(redactCredentials(`letters ${'abcdefghij'.repeat(4)}`)).toBe('letters [redacted]');
  });

  it('keeps words, short numbers and ordinary messages', () => {
    for (const text of ['connect ECONNREFUSED 127.0.0.1:6379', 'Command timed out', 'user 42 of tenant acme', 'openid-configuration']) {
      expect(redactCredentials(text)).toBe(text);
    }
  });
});
