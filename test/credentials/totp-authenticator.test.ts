import { randomBytes } from 'node:crypto';
import { Secret, TOTP } from 'otpauth';
import { createSecretSealer, KeyValueCredentialStore, TotpAuthenticator } from '../../lib/credentials';
import { debugLines } from '../helpers/debug-lines';
import { testRedisStore } from '../helpers/redis';

const USER = 'directory:local|alice';
const T0 = 1_800_000_000_000 - (1_800_000_000_000 % 30_000);

const codeAt = (secret: string, timestamp: number) =>
  new TOTP({ secret: Secret.fromBase32(secret), algorithm: 'SHA1', digits: 6, period: 30 }).generate({ timestamp });

describe('TotpAuthenticator', () => {
  let redis: Awaited<ReturnType<typeof testRedisStore>>;
  let credentials: KeyValueCredentialStore;
  const sealer = createSecretSealer({ key: randomBytes(32) });
  let totp: TotpAuthenticator;
  beforeEach(async () => {
    redis = await testRedisStore('totp');
    credentials = new KeyValueCredentialStore(redis.store);
    totp = new TotpAuthenticator({ credentials, sealer, issuer: 'Example Corp' });
  });
  afterEach(() => redis.cleanup());

  it('makes 160-bit secrets and an otpauth:// URI apps read', () => {
    const secret = totp.newSecret();
    expect(secret).toMatch(/^[A-Z2-7]{32}$/);
    const uri = new URL(totp.uri(secret, 'alice'));
    expect(uri.protocol).toBe('otpauth:');
    expect(uri.searchParams.get('secret')).toBe(secret);
    expect(uri.searchParams.get('issuer')).toBe('Example Corp');
    expect(uri.searchParams.get('digits')).toBe('6');
  });

  it('saves the enrolment sealed only after a right code, and that code cannot sign in', async () => {
    const secret = totp.newSecret();
    expect(await totp.enrol(USER, secret, '000000' === codeAt(secret, T0) ? '111111' : '000000', T0)).toBe(false);
    expect(await totp.isEnrolled(USER)).toBe(false);
    expect(await totp.enrol(USER, secret, codeAt(secret, T0), T0)).toBe(true);
    const stored = await credentials.getTotp(USER);
    expect(stored?.sealedSecret).not.toContain(secret);
    expect(sealer.open(USER, stored!.sealedSecret)).toBe(secret);
    expect(await totp.verify(USER, codeAt(secret, T0), T0)).toBe('rejected');
  });

  it('removes an enrolled app: its codes no longer verify, and a second removal says there was none', async () => {
    const secret = totp.newSecret();
    expect(await totp.enrol(USER, secret, codeAt(secret, T0), T0)).toBe(true);
    expect(await totp.remove(USER)).toBe(true);
    expect(await totp.isEnrolled(USER)).toBe(false);
    expect(await totp.verify(USER, codeAt(secret, T0 + 30_000), T0 + 30_000)).toBe('not_enrolled');
    expect(await totp.remove(USER)).toBe(false);
  });

  it('accepts one step either side, refuses two steps away', async () => {
    const secret = totp.newSecret();
    await totp.enrol(USER, secret, codeAt(secret, T0), T0);
    const now = T0 + 300_000;
    expect(await totp.verify(USER, codeAt(secret, now - 60_000), now)).toBe('rejected');
    expect(await totp.verify(USER, codeAt(secret, now + 60_000), now)).toBe('rejected');
    expect(await totp.verify(USER, codeAt(secret, now - 30_000), now)).toBe('accepted');
    expect(await totp.verify(USER, codeAt(secret, now + 30_000), now)).toBe('accepted');
  });

  it('refuses a replay, and an older code once a newer one was accepted', async () => {
    const secret = totp.newSecret();
    await totp.enrol(USER, secret, codeAt(secret, T0), T0);
    const now = T0 + 600_000;
    const code = codeAt(secret, now);
    expect(await totp.verify(USER, code, now)).toBe('accepted');
    expect(await totp.verify(USER, code, now)).toBe('rejected');
    expect(await totp.verify(USER, codeAt(secret, now + 30_000), now + 30_000)).toBe('accepted');
    expect(await totp.verify(USER, codeAt(secret, now), now + 30_000)).toBe('rejected');
  });

  it('lets exactly one of many concurrent presentations of one code pass', async () => {
    const secret = totp.newSecret();
    await totp.enrol(USER, secret, codeAt(secret, T0), T0);
    const now = T0 + 900_000;
    const results = await Promise.all(Array.from({ length: 20 }, () => totp.verify(USER, codeAt(secret, now), now)));
    expect(results.filter((result) => result === 'accepted')).toHaveLength(1);
  });

  it('says not_enrolled for a user without an app and refuses malformed codes', async () => {
    expect(await totp.verify(USER, '123456', T0)).toBe('not_enrolled');
    const secret = totp.newSecret();
    await totp.enrol(USER, secret, codeAt(secret, T0), T0);
    for (const code of ['', '12345', '1234567', 'abcdef', '12 34 5x']) expect(await totp.verify(USER, code, T0 + 60_000)).toBe('rejected');
  });

  it('does not open a sealed secret copied to another user: for that user it is no enrolment, and no code passes', async () => {
    const secret = totp.newSecret();
    await totp.enrol(USER, secret, codeAt(secret, T0), T0);
    await credentials.setTotp('directory:local|mallory', (await credentials.getTotp(USER))!);
    expect(await totp.verify('directory:local|mallory', codeAt(secret, T0 + 60_000), T0 + 60_000)).toBe('not_enrolled');
    expect(await totp.isEnrolled('directory:local|mallory')).toBe(false);
  });

  it('counts an app sealed by a key it no longer has as not enrolled, keeps the record, and has it back with the key', async () => {
    const lostKey = randomBytes(32);
    const before = new TotpAuthenticator({ credentials, sealer: createSecretSealer({ key: lostKey }), issuer: 'Example Corp' });
    const secret = before.newSecret();
    await before.enrol(USER, secret, codeAt(secret, T0), T0);
    const stored = await credentials.getTotp(USER);
    const lines = await debugLines('credentials', async () => {
      expect(await totp.isEnrolled(USER)).toBe(false);
      expect(await totp.verify(USER, codeAt(secret, T0 + 30_000), T0 + 30_000)).toBe('not_enrolled');
    });
    expect(lines).toEqual([expect.stringMatching(/does not open with the configured sealing keys/), expect.anything()]);
    for (const line of lines) {
      expect(line).not.toContain(secret);
      expect(line).not.toContain(stored!.sealedSecret.split('.')[3]);
    }
    // Nothing was deleted or advanced: with the key back among the previous keys, the app works again.
    expect(await credentials.getTotp(USER)).toEqual(stored);
    const restored = createSecretSealer({ key: randomBytes(32), previousKeys: [lostKey] });
    const withKey = new TotpAuthenticator({ credentials, sealer: restored, issuer: 'Example Corp' });
    expect(await withKey.verify(USER, codeAt(secret, T0 + 30_000), T0 + 30_000)).toBe('accepted');
  });

  it('reseals a secret of a previous key with the current one on use', async () => {
    const oldKey = randomBytes(32);
    const before = new TotpAuthenticator({ credentials, sealer: createSecretSealer({ key: oldKey }), issuer: 'Example Corp' });
    const secret = before.newSecret();
    await before.enrol(USER, secret, codeAt(secret, T0), T0);
    const rotated = createSecretSealer({ key: randomBytes(32), previousKeys: [oldKey] });
    const after = new TotpAuthenticator({ credentials, sealer: rotated, issuer: 'Example Corp' });
    expect(await after.verify(USER, codeAt(secret, T0 + 60_000), T0 + 60_000)).toBe('accepted');
    expect(rotated.needsResealing((await credentials.getTotp(USER))!.sealedSecret)).toBe(false);
  });

  it('checks its options', () => {
    expect(() => new TotpAuthenticator({ credentials, sealer, issuer: 'a:b' })).toThrow(/issuer/);
    expect(() => new TotpAuthenticator({ credentials, sealer } as never)).toThrow(/issuer/);
  });
});
