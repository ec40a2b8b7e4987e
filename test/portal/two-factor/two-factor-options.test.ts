import { randomBytes } from 'node:crypto';
import { KeyValueCredentialStore } from '../../../lib/credentials';
import { resolveTwoFactor } from '../../../lib/portal/two-factor/two-factor-options';
import type { SecondFactor } from '../../../lib/portal/two-factor/second-factor';
import { MemoryStore } from '../../../lib/store';

describe('loginPortal({ twoFactor }) options', () => {
  const store = new MemoryStore();
  const credentials = new KeyValueCredentialStore(store);
  const base = { credentials, sealingKey: randomBytes(32), issuer: 'Example' };
  afterAll(() => store.close());

  it('builds the methods, the kit’s first, and the factor throttle', () => {
    const extra = {
      id: 'passkey',
      label: 'Use a passkey',
      amr: 'hwk',
      level: 'phr',
      isAvailable: async () => false,
      renderFields: () => '',
      verify: async () => false,
    } as SecondFactor;
    const settings = resolveTwoFactor({ ...base, methods: [extra] }, store, {});
    expect(settings.methods.map((method) => method.id)).toEqual(['totp', 'recovery', 'passkey']);
    expect(settings.recentLoginSeconds).toBe(300);
  });

  it.each([
    ['no sealing key', { ...base, sealingKey: undefined }, /sealingKey/],
    ['a short sealing key', { ...base, sealingKey: randomBytes(16) }, /32 random bytes/],
    ['no credential store', { ...base, credentials: {} }, /credentials must be a CredentialStore/],
    ['a repeated method id', { ...base, methods: [{ id: 'totp', verify: async () => true }] }, /repeats the method id "totp"/],
    ['a recent-login window of a day', { ...base, recentLoginSeconds: 86400 }, /recentLoginSeconds must be from 30 to 3600/],
    ['an unknown option', { ...base, sealKey: 'x' }, /sealKey/],
  ])('refuses %s', (_label, options, message) => {
    expect(() => resolveTwoFactor(options as never, store, {})).toThrow(message);
  });
});
