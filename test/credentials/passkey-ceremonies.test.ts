import {
  PasskeyCeremonies,
  PasskeyVerificationError,
  passkeyUserHandle,
  type PasskeyRefusal,
} from '../../lib/credentials/passkey-ceremonies';
import { KeyValueCredentialStore } from '../../lib/credentials/kv-credential-store';
import type { PasskeyRecords } from '../../lib/credentials/passkey-records';
import type { RedisStore } from '../../lib/store';
import { OptionsError } from '../../lib/util/options';
import { expectRandomTokens } from '../helpers/randomness';
import { testRedisStore } from '../helpers/redis';
import { SoftAuthenticator } from '../helpers/soft-authenticator';

const RP = 'example.com';
const AUTH = 'https://auth.example.com';
const SHOP = 'https://shop.example.com';
const ALICE = { id: 'directory:staff|alice', name: 'alice', displayName: 'Alice' };
const BOB = { id: 'directory:staff|bob', name: 'bob', displayName: 'Bob' };

async function refusal(promise: Promise<unknown>): Promise<PasskeyRefusal> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(PasskeyVerificationError);
  return (error as PasskeyVerificationError).reason;
}

describe('PasskeyCeremonies', () => {
  let redis: Awaited<ReturnType<typeof testRedisStore>>;
  let store: RedisStore;
  let passkeys: PasskeyRecords;
  let ceremonies: PasskeyCeremonies;

  beforeEach(async () => {
    redis = await testRedisStore('passkeys');
    store = redis.store;
    passkeys = new KeyValueCredentialStore(store);
    ceremonies = new PasskeyCeremonies({ store, passkeys, rpId: RP, rpName: 'Example' });
  });
  afterEach(() => redis.cleanup());

  async function enrol(user = ALICE, device = new SoftAuthenticator(), origin = AUTH): Promise<SoftAuthenticator> {
    const options = await ceremonies.registrationOptions(user);
    await ceremonies.verifyRegistration(user.id, device.register(options, origin), 'Laptop');
    return device;
  }

  describe('registration', () => {
    it('asks for a discoverable credential with user verification on the parent domain, and excludes the ones registered', async () => {
      const first = await ceremonies.registrationOptions(ALICE);
      expect(first.rp).toEqual({ id: RP, name: 'Example' });
      expect(first.authenticatorSelection).toMatchObject({ residentKey: 'required', userVerification: 'required' });
      expect(first.excludeCredentials).toEqual([]);
      const device = new SoftAuthenticator();
      await ceremonies.verifyRegistration(ALICE.id, device.register(first, AUTH), 'Laptop');
      const second = await ceremonies.registrationOptions(ALICE);
      expect(second.excludeCredentials?.map((c) => c.id)).toEqual([device.credentialId]);
    });

    it('gives the authenticator a user handle that is not the user id', async () => {
      const options = await ceremonies.registrationOptions(ALICE);
      expect(options.user.id).toBe(passkeyUserHandle(ALICE.id));
      expect(Buffer.from(options.user.id, 'base64url').toString('utf8')).not.toContain('alice');
    });

    it('stores the key, counter, device type and backup state', async () => {
      const device = await enrol(ALICE, new SoftAuthenticator({ backupEligible: true, backedUp: true }));
      const stored = await passkeys.findPasskey(device.credentialId);
      expect(stored).toMatchObject({
        userId: ALICE.id,
        counter: 0,
        deviceType: 'multiDevice',
        backedUp: true,
        name: 'Laptop',
        transports: ['internal'],
      });
    });

    it('refuses a registration without user verification', async () => {
      const options = await ceremonies.registrationOptions(ALICE);
      const device = new SoftAuthenticator({ userVerified: false });
      expect(await refusal(ceremonies.verifyRegistration(ALICE.id, device.register(options, AUTH), 'Key'))).toBe('not_verified');
      expect(await passkeys.listPasskeys(ALICE.id)).toEqual([]);
    });

    it('refuses a registration challenge issued to another user', async () => {
      const options = await ceremonies.registrationOptions(BOB);
      const response = new SoftAuthenticator().register(options, AUTH);
      expect(await refusal(ceremonies.verifyRegistration(ALICE.id, response, 'Key'))).toBe('challenge');
      expect(await passkeys.listPasskeys(ALICE.id)).toEqual([]);
    });

    it('refuses a credential already registered, to this user or another', async () => {
      const device = await enrol(ALICE);
      const options = await ceremonies.registrationOptions(BOB);
      expect(await refusal(ceremonies.verifyRegistration(BOB.id, device.register(options, AUTH), 'Key'))).toBe('already_registered');
      expect((await passkeys.findPasskey(device.credentialId))?.userId).toBe(ALICE.id);
    });

    it('refuses a registration from another site', async () => {
      const options = await ceremonies.registrationOptions(ALICE);
      const response = new SoftAuthenticator().register(options, 'https://evil.test', RP);
      expect(await refusal(ceremonies.verifyRegistration(ALICE.id, response, 'Key'))).toBe('origin');
    });

    it('keeps each challenge for the timeout only', async () => {
      const short = new PasskeyCeremonies({ store, passkeys, rpId: RP, rpName: 'Example', challengeTimeoutSeconds: 60 });
      const options = await short.registrationOptions(ALICE);
      const ttl = await store.ttlMillis(`passkey-challenge:{${options.challenge}}`);
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(60_000);
      expect(options.timeout).toBe(60_000);
    });
  });

  describe('challenges', () => {
    it('makes every challenge at least 128 bits from the CSPRNG and never the same twice, across registrations, sign-ins and step-ups', async () => {
      // ASVS 6.7.2 asks at least 64 bits, WebAuthn at least 16 bytes; the ceremonies draw 32 bytes of randomBytes.
      const challenges: string[] = [];
      for (let i = 0; i < 128; i += 1) {
        challenges.push((await ceremonies.registrationOptions(ALICE)).challenge);
        challenges.push((await ceremonies.authenticationOptions()).challenge);
        challenges.push((await ceremonies.authenticationOptions(BOB.id)).challenge);
      }
      expectRandomTokens(challenges, 128);
    });
  });

  describe('passwordless sign-in', () => {
    it('signs in the stored owner from any site of the parent domain, with hwk and user for a verified device-bound key', async () => {
      const device = await enrol();
      const options = await ceremonies.authenticationOptions();
      expect(options.allowCredentials).toBeUndefined();
      expect(options.userVerification).toBe('required');
      expect(options.rpId).toBe(RP);
      const result = await ceremonies.verifyAuthentication(device.assert(options, SHOP), undefined, 1_900_000_000);
      expect(result.passkey.userId).toBe(ALICE.id);
      expect(result.amr).toEqual(['hwk', 'user']);
      expect(await passkeys.findPasskey(device.credentialId)).toMatchObject({ counter: 1, lastUsedAt: 1_900_000_000 });
    });

    it('names a synced passkey swk and records its backup state at each use', async () => {
      const device = await enrol(ALICE, new SoftAuthenticator({ backupEligible: true, backedUp: false }));
      device.settings.backedUp = true;
      const result = await ceremonies.verifyAuthentication(device.assert(await ceremonies.authenticationOptions(), AUTH));
      expect(result.amr).toEqual(['swk', 'user']);
      expect((await passkeys.findPasskey(device.credentialId))?.backedUp).toBe(true);
    });

    it('refuses a replayed challenge: the same assertion twice', async () => {
      const device = await enrol();
      const assertion = device.assert(await ceremonies.authenticationOptions(), AUTH);
      await ceremonies.verifyAuthentication(assertion);
      expect(await refusal(ceremonies.verifyAuthentication(assertion))).toBe('challenge');
    });

    it('refuses a challenge it never issued, and a registration challenge used for sign-in', async () => {
      const device = await enrol();
      expect(await refusal(ceremonies.verifyAuthentication(device.assert({ challenge: 'bm90LWlzc3VlZA', rpId: RP }, AUTH)))).toBe(
        'challenge',
      );
      const registration = await ceremonies.registrationOptions(ALICE);
      expect(await refusal(ceremonies.verifyAuthentication(device.assert({ challenge: registration.challenge, rpId: RP }, AUTH)))).toBe(
        'challenge',
      );
    });

    it.each([
      ['another site', 'https://evil.test'],
      ['a look-alike host', 'https://example.com.evil.test'],
      ['plain http outside localhost', 'http://shop.example.com'],
    ])('refuses an assertion made on %s, and spends its challenge', async (_label, origin) => {
      const device = await enrol();
      const options = await ceremonies.authenticationOptions();
      expect(await refusal(ceremonies.verifyAuthentication(device.assert(options, origin)))).toBe('origin');
      expect(await refusal(ceremonies.verifyAuthentication(device.assert(options, AUTH)))).toBe('challenge');
    });

    it("refuses a user's credential presented with another user's handle", async () => {
      await enrol(ALICE);
      const bobsDevice = await enrol(BOB);
      const options = await ceremonies.authenticationOptions();
      const response = bobsDevice.assert(options, AUTH, passkeyUserHandle(ALICE.id));
      expect(await refusal(ceremonies.verifyAuthentication(response))).toBe('wrong_user');
    });

    it('refuses a passwordless assertion without a user handle', async () => {
      const device = await enrol();
      const options = await ceremonies.authenticationOptions();
      expect(await refusal(ceremonies.verifyAuthentication(device.assert(options, AUTH, null)))).toBe('wrong_user');
    });

    it('requires user verification for a passwordless sign-in', async () => {
      const device = await enrol();
      device.settings.userVerified = false;
      expect(await refusal(ceremonies.verifyAuthentication(device.assert(await ceremonies.authenticationOptions(), AUTH)))).toBe(
        'not_verified',
      );
    });

    it('refuses an unknown credential and a forged signature', async () => {
      const stranger = new SoftAuthenticator();
      stranger.userHandle = passkeyUserHandle(ALICE.id);
      expect(
        await refusal(
          ceremonies.verifyAuthentication(
            stranger.assert({ challenge: (await ceremonies.authenticationOptions()).challenge, rpId: RP }, AUTH),
          ),
        ),
      ).toBe('unknown_credential');
      const device = await enrol();
      const forged = device.assert(await ceremonies.authenticationOptions(), AUTH);
      forged.response.signature = stranger.assert({ challenge: 'eA', rpId: RP }, AUTH).response.signature;
      expect(await refusal(ceremonies.verifyAuthentication(forged))).toBe('not_verified');
    });

    it('refuses a signature counter that did not move forward, and keeps the stored one', async () => {
      const device = await enrol();
      await ceremonies.verifyAuthentication(device.assert(await ceremonies.authenticationOptions(), AUTH));
      await ceremonies.verifyAuthentication(device.assert(await ceremonies.authenticationOptions(), AUTH));
      device.settings.counter = 1; // A clone still at an older count: its next assertion carries 2.
      expect(await refusal(ceremonies.verifyAuthentication(device.assert(await ceremonies.authenticationOptions(), AUTH)))).toBe('counter');
      expect((await passkeys.findPasskey(device.credentialId))?.counter).toBe(2);
    });

    it('accepts an authenticator that never counts (counter always 0)', async () => {
      const device = await enrol(ALICE, new SoftAuthenticator({ counts: false }));
      for (let i = 0; i < 2; i += 1) {
        await ceremonies.verifyAuthentication(device.assert(await ceremonies.authenticationOptions(), AUTH));
      }
      expect((await passkeys.findPasskey(device.credentialId))?.counter).toBe(0);
    });

    it('lets only one of two concurrent assertions with the same counter pass', async () => {
      const device = await enrol();
      const [a, b] = [await ceremonies.authenticationOptions(), await ceremonies.authenticationOptions()];
      const first = device.assert(a, AUTH);
      device.settings.counter -= 1;
      const second = device.assert(b, AUTH);
      const results = await Promise.allSettled([ceremonies.verifyAuthentication(first), ceremonies.verifyAuthentication(second)]);
      expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
      const rejected = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
      expect((rejected?.reason as PasskeyVerificationError).reason).toBe('counter');
    });

    it('refuses malformed responses without touching the store', async () => {
      for (const response of [
        null,
        'x',
        {},
        { type: 'public-key', id: 'a', response: {} },
        { type: 'public-key', id: 'a', response: { clientDataJSON: 'e30', authenticatorData: 'AA', signature: 'AA' } },
      ]) {
        expect(await refusal(ceremonies.verifyAuthentication(response))).toBe('malformed');
      }
    });
  });

  describe('second factor', () => {
    it("offers only the user's passkeys and accepts the user's own", async () => {
      const device = await enrol(ALICE);
      await enrol(BOB);
      const options = await ceremonies.authenticationOptions(ALICE.id);
      expect(options.allowCredentials?.map((c) => c.id)).toEqual([device.credentialId]);
      const result = await ceremonies.verifyAuthentication(device.assert(options, AUTH), ALICE.id);
      expect(result.passkey.userId).toBe(ALICE.id);
    });

    it("refuses another user's passkey for the signed-in user", async () => {
      await enrol(ALICE);
      const bobsDevice = await enrol(BOB);
      const options = await ceremonies.authenticationOptions(ALICE.id);
      expect(await refusal(ceremonies.verifyAuthentication(bobsDevice.assert(options, AUTH), ALICE.id))).toBe('wrong_user');
    });

    it('refuses a challenge issued for another user', async () => {
      const device = await enrol(ALICE);
      const options = await ceremonies.authenticationOptions(BOB.id);
      expect(
        await refusal(ceremonies.verifyAuthentication(device.assert({ challenge: options.challenge, rpId: RP }, AUTH), ALICE.id)),
      ).toBe('challenge');
    });
  });

  describe('options', () => {
    it('refuses a public suffix as relying-party id, an unknown option and a short timeout', () => {
      expect(() => new PasskeyCeremonies({ store, passkeys, rpId: 'co.uk', rpName: 'x' })).toThrow(OptionsError);
      expect(() => new PasskeyCeremonies({ store, passkeys, rpId: RP, rpName: 'x', rpID: RP } as never)).toThrow(/rpID/);
      expect(() => new PasskeyCeremonies({ store, passkeys, rpId: RP, rpName: 'x', challengeTimeoutSeconds: 5 })).toThrow(/30 to 900/);
    });
  });
});
