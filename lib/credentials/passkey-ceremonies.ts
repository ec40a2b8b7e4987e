import { randomBytes } from 'node:crypto';
import {
  generateAuthenticationOptions,
  generateRegistrationOptions,
  verifyAuthenticationResponse,
  verifyRegistrationResponse,
  type AuthenticationResponseJSON,
  type PublicKeyCredentialCreationOptionsJSON,
  type PublicKeyCredentialRequestOptionsJSON,
  type RegistrationResponseJSON,
} from '@simplewebauthn/server';
import { validateCookieDomain } from '../session/cookie-domain';
import type { KeyValueStore } from '../store/port';
import { debugChannel } from '../util/debug';
import { checkOptions, KIT_STORE_OPTION, type OptionSchema } from '../util/options';
import type { StoredPasskey } from './credential-store';
import { passkeyOriginAllowed } from './passkey-origin';
import { PASSKEY_RECORDS_OPTION, type PasskeyRecords } from './passkey-records';
import { sha256 } from '../util/digest';

export type { PublicKeyCredentialCreationOptionsJSON, PublicKeyCredentialRequestOptionsJSON };

/** Options of {@link PasskeyCeremonies}. */
export interface PasskeyCeremonyOptions {
  /** The kit store; challenges live there, single-use, until they expire. */
  store: KeyValueStore;
  /** Where passkeys are kept: a `CredentialStore` (`KeyValueCredentialStore` or `PostgresCredentialStore`). */
  passkeys: PasskeyRecords;
  /**
   * The relying-party id: your parent domain (the session cookie's domain), so one passkey serves every subdomain.
   * Assertions are accepted from `https://<rpId>` and `https://<any subdomain>` (any port), and over plain http
   * only when the domain is under `localhost` (local development).
   */
  rpId: string;
  /** The name authenticators show, e.g. "Example Corp". */
  rpName: string;
  /** How long a challenge stays valid, in seconds (also the browser's timeout). Default 300, from 30 to 900. */
  challengeTimeoutSeconds?: number;
}

/** The user a registration is for. */
export interface PasskeyUser {
  /** The kit user id (`<source>|<subject>`). */
  id: string;
  /** The account name the authenticator shows and autofill lists, e.g. the username. */
  name: string;
  /** The person's display name. */
  displayName: string;
}

/** Why a registration or assertion was refused; `reason` is stable, for logs and tests, never shown to users. */
export type PasskeyRefusal =
  'malformed' | 'challenge' | 'origin' | 'unknown_credential' | 'wrong_user' | 'counter' | 'not_verified' | 'already_registered';

/** A ceremony failed; nothing was stored and the challenge is spent. */
export class PasskeyVerificationError extends Error {
  override readonly name = 'PasskeyVerificationError';
  readonly code = 'passkey_refused';
  constructor(
    readonly reason: PasskeyRefusal,
    options?: { cause?: unknown },
  ) {
    super(`the passkey was refused (${reason})`, options);
  }
}

/** A verified assertion: the passkey (with its new counter) and what the authenticator attested. */
export interface PasskeyAssertion {
  readonly passkey: StoredPasskey;
  /** Whether the authenticator verified the user (PIN or biometrics), not only their presence. */
  readonly userVerified: boolean;
  /** RFC 8176 method references of this assertion (see {@link passkeyMethods}). */
  readonly amr: readonly string[];
}

interface ChallengeRecord {
  purpose: 'registration' | 'authentication';
  /** The user the challenge was issued to; none for a passwordless sign-in, where the credential names the user. */
  userId?: string;
}

const debug = debugChannel('portal');
const challengeKey = (challenge: string): string => `passkey-challenge:{${challenge}}`;

const SCHEMA: OptionSchema = {
  store: KIT_STORE_OPTION,
  passkeys: PASSKEY_RECORDS_OPTION,
  rpId: { type: 'string', required: true, expected: 'your parent domain, e.g. "example.com"' },
  rpName: { type: 'string', required: true, check: (name: string) => (name.trim() === '' ? 'must not be empty' : undefined) },
  challengeTimeoutSeconds: {
    type: 'integer',
    expected: 'a number of seconds from 30 to 900',
    check: (seconds: number) => (seconds >= 30 && seconds <= 900 ? undefined : `must be from 30 to 900, got ${seconds}`),
  },
};

/**
 * The WebAuthn user handle of a kit user: a hash of the user id, so the authenticator never holds the id itself
 * (which names the user's directory and account), and the same user always gets the same handle.
 *
 * @example
 * passkeyUserHandle('directory:staff|alice'); // 'm1N…' (43 base64url characters)
 */
export function passkeyUserHandle(userId: string): string {
  return sha256(`express-sso-kit passkey user\0${userId}`, 'base64url');
}

/**
 * The RFC 8176 `amr` of a passkey assertion. A device-bound credential (`singleDevice`: the private key cannot
 * leave the authenticator) is `hwk`; a synced one (`multiDevice`: the key is copied between the user's devices by
 * its provider) is `swk`. When the authenticator verified the user (PIN or biometrics) `user` is added, and the
 * assertion is two factors in one (possession and knowledge or inherence).
 *
 * @example
 * passkeyMethods({ deviceType: 'singleDevice' }, true); // ['hwk', 'user']
 */
export function passkeyMethods(passkey: Pick<StoredPasskey, 'deviceType'>, userVerified: boolean): string[] {
  const key = passkey.deviceType === 'singleDevice' ? 'hwk' : 'swk';
  return userVerified ? [key, 'user'] : [key];
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

const BASE64URL = /^[A-Za-z0-9_-]{1,16384}$/;

/** The client data of a response that has the shape of a WebAuthn response, or undefined. */
function clientDataOf(
  response: unknown,
  fields: readonly string[],
): { challenge: string; origin: string; crossOrigin?: unknown } | undefined {
  if (!isRecord(response) || response.type !== 'public-key' || typeof response.id !== 'string' || !BASE64URL.test(response.id))
    return undefined;
  const inner = response.response;
  if (!isRecord(inner) || !fields.every((field) => typeof inner[field] === 'string' && BASE64URL.test(inner[field]))) return undefined;
  try {
    const data: unknown = JSON.parse(Buffer.from(inner.clientDataJSON as string, 'base64url').toString('utf8'));
    if (!isRecord(data) || typeof data.challenge !== 'string' || typeof data.origin !== 'string') return undefined;
    return { challenge: data.challenge, origin: data.origin, crossOrigin: data.crossOrigin };
  } catch {
    return undefined;
  }
}

/**
 * The WebAuthn ceremonies of the portal, free of Express: registration and authentication options, and the
 * verification of what the browser returns. Challenges are random, stored in the kit store with a short TTL and
 * taken (read and deleted atomically) before anything else is checked, so each is used at most once. The
 * relying-party id is the parent domain; the origin of each response must be a site of that domain. Assertions
 * check the stored owner of the credential and the user handle, refuse a signature counter that did not move
 * forward, and record the new counter and backup state with a compare-and-set.
 *
 * @example
 * const ceremonies = new PasskeyCeremonies({ store, passkeys: new KeyValueCredentialStore(store), rpId: 'example.com', rpName: 'Example' });
 * const options = await ceremonies.authenticationOptions();
 * // … the browser calls navigator.credentials.get(options) …
 * const { passkey, amr } = await ceremonies.verifyAuthentication(response);
 */
export class PasskeyCeremonies {
  private readonly store: KeyValueStore;
  private readonly passkeys: PasskeyRecords;
  readonly rpId: string;
  private readonly rpName: string;
  private readonly timeoutSeconds: number;

  constructor(options: PasskeyCeremonyOptions) {
    checkOptions('PasskeyCeremonies', options, SCHEMA);
    this.rpId = validateCookieDomain(options.rpId, 'PasskeyCeremonies: rpId');
    this.store = options.store;
    this.passkeys = options.passkeys;
    this.rpName = options.rpName;
    this.timeoutSeconds = options.challengeTimeoutSeconds ?? 300;
  }

  /**
   * Options for `navigator.credentials.create()`: a discoverable credential (`residentKey: 'required'`) with user
   * verification, the user's existing passkeys excluded so one authenticator is not registered twice.
   *
   * @example
   * res.json(await ceremonies.registrationOptions({ id: req.user.id, name: 'alice', displayName: 'Alice' }));
   */
  async registrationOptions(user: PasskeyUser): Promise<PublicKeyCredentialCreationOptionsJSON> {
    const existing = await this.passkeys.listPasskeys(user.id);
    const options = await generateRegistrationOptions({
      rpName: this.rpName,
      rpID: this.rpId,
      userName: user.name,
      userDisplayName: user.displayName,
      userID: Buffer.from(passkeyUserHandle(user.id), 'base64url'),
      challenge: randomBytes(32),
      timeout: this.timeoutSeconds * 1000,
      attestationType: 'none',
      excludeCredentials: existing.map((passkey) => ({ id: passkey.credentialId, transports: [...passkey.transports] })),
      authenticatorSelection: { residentKey: 'required', userVerification: 'required' },
    });
    await this.issueChallenge(options.challenge, { purpose: 'registration', userId: user.id });
    return options;
  }

  /**
   * Verifies a registration response for the user the challenge was issued to and stores the passkey under `name`.
   * Rejects with {@link PasskeyVerificationError} (`already_registered` when the credential exists).
   *
   * @example
   * const passkey = await ceremonies.verifyRegistration(req.user.id, req.body.response, 'Laptop');
   */
  async verifyRegistration(
    userId: string,
    response: unknown,
    name: string,
    nowSeconds = Math.floor(Date.now() / 1000),
  ): Promise<StoredPasskey> {
    const clientData = clientDataOf(response, ['clientDataJSON', 'attestationObject']);
    if (clientData === undefined) throw new PasskeyVerificationError('malformed');
    await this.spendChallenge(clientData.challenge, { purpose: 'registration', userId });
    const origin = this.checkOrigin(clientData);
    const verified = await verifyRegistrationResponse({
      response: response as RegistrationResponseJSON,
      expectedChallenge: clientData.challenge,
      expectedOrigin: origin,
      expectedRPID: this.rpId,
      requireUserVerification: true,
    }).catch((error: unknown) => {
      throw new PasskeyVerificationError('not_verified', { cause: error });
    });
    if (!verified.verified) throw new PasskeyVerificationError('not_verified');
    const { credential, credentialDeviceType, credentialBackedUp } = verified.registrationInfo;
    const passkey: StoredPasskey = {
      credentialId: credential.id,
      userId,
      publicKey: Buffer.from(credential.publicKey).toString('base64url'),
      counter: credential.counter,
      transports: [...(credential.transports ?? [])],
      deviceType: credentialDeviceType,
      backedUp: credentialBackedUp,
      name,
      createdAt: nowSeconds,
    };
    try {
      await this.passkeys.addPasskey(passkey);
    } catch (error) {
      if ((error as { code?: unknown }).code === 'credential_conflict')
        throw new PasskeyVerificationError('already_registered', { cause: error });
      throw error;
    }
    return passkey;
  }

  /**
   * Options for `navigator.credentials.get()`, user verification required. Without a user: a passwordless sign-in
   * (the browser offers the discoverable credentials it holds for the domain, also through autofill). With a user:
   * a second factor, limited to that user's passkeys.
   *
   * @example
   * res.json(await ceremonies.authenticationOptions());
   */
  async authenticationOptions(userId?: string): Promise<PublicKeyCredentialRequestOptionsJSON> {
    const allowCredentials =
      userId === undefined
        ? undefined
        : (await this.passkeys.listPasskeys(userId)).map((passkey) => ({ id: passkey.credentialId, transports: [...passkey.transports] }));
    const options = await generateAuthenticationOptions({
      rpID: this.rpId,
      challenge: randomBytes(32),
      timeout: this.timeoutSeconds * 1000,
      userVerification: 'required',
      ...(allowCredentials ? { allowCredentials } : {}),
    });
    await this.issueChallenge(options.challenge, { purpose: 'authentication', ...(userId === undefined ? {} : { userId }) });
    return options;
  }

  /**
   * Verifies an assertion. Without `userId` (passwordless) the passkey's stored owner is who signs in, and the
   * response must carry that owner's user handle. With `userId` (second factor) the passkey must be that user's.
   * Rejects with {@link PasskeyVerificationError}; on success the new counter is already stored.
   *
   * @example
   * const { passkey, amr } = await ceremonies.verifyAuthentication(req.body.response);
   */
  async verifyAuthentication(response: unknown, userId?: string, nowSeconds = Math.floor(Date.now() / 1000)): Promise<PasskeyAssertion> {
    const clientData = clientDataOf(response, ['clientDataJSON', 'authenticatorData', 'signature']);
    if (clientData === undefined) throw new PasskeyVerificationError('malformed');
    await this.spendChallenge(clientData.challenge, { purpose: 'authentication', ...(userId === undefined ? {} : { userId }) });
    const origin = this.checkOrigin(clientData);
    const assertion = response as AuthenticationResponseJSON;
    const passkey = await this.passkeys.findPasskey(assertion.id);
    if (passkey === undefined) throw new PasskeyVerificationError('unknown_credential');
    this.checkOwner(passkey, assertion.response.userHandle, userId);

    const verified = await verifyAuthenticationResponse({
      response: assertion,
      expectedChallenge: clientData.challenge,
      expectedOrigin: origin,
      expectedRPID: this.rpId,
      credential: { id: passkey.credentialId, publicKey: Buffer.from(passkey.publicKey, 'base64url'), counter: 0 },
      requireUserVerification: userId === undefined,
    }).catch((error: unknown) => {
      throw new PasskeyVerificationError('not_verified', { cause: error });
    });
    if (!verified.verified) throw new PasskeyVerificationError('not_verified');
    const info = verified.authenticationInfo;
    // A counter that did not move forward means two copies of the key exist (a cloned authenticator). Checked
    // here rather than by the library (given counter 0 above) so the refusal has its own reason in the logs.
    if ((info.newCounter !== 0 || passkey.counter !== 0) && info.newCounter <= passkey.counter) {
      debug('refused a passkey assertion: its signature counter did not move forward (possible cloned authenticator)');
      throw new PasskeyVerificationError('counter');
    }
    const recorded = await this.passkeys.recordPasskeyUse(passkey.credentialId, passkey.counter, {
      counter: info.newCounter,
      backedUp: info.credentialBackedUp,
      usedAt: nowSeconds,
    });
    if (!recorded) throw new PasskeyVerificationError('counter');
    const used: StoredPasskey = { ...passkey, counter: info.newCounter, backedUp: info.credentialBackedUp, lastUsedAt: nowSeconds };
    return { passkey: used, userVerified: info.userVerified, amr: passkeyMethods(used, info.userVerified) };
  }

  private async issueChallenge(challenge: string, record: ChallengeRecord): Promise<void> {
    await this.store.set(challengeKey(challenge), JSON.stringify(record), this.timeoutSeconds);
  }

  /** Takes the challenge out of the store before any other check, so even a refused response spends it. */
  private async spendChallenge(challenge: string, expected: ChallengeRecord): Promise<void> {
    if (!BASE64URL.test(challenge) || challenge.length > 128) throw new PasskeyVerificationError('challenge');
    const stored = await this.store.take(challengeKey(challenge));
    if (stored === null) {
      debug('refused a passkey response: its challenge is unknown, expired or already used');
      throw new PasskeyVerificationError('challenge');
    }
    const record = JSON.parse(stored) as ChallengeRecord;
    if (record.purpose !== expected.purpose || record.userId !== expected.userId) {
      debug('refused a passkey response: its challenge was issued for another ceremony or user');
      throw new PasskeyVerificationError('challenge');
    }
  }

  private checkOrigin(clientData: { origin: string; crossOrigin?: unknown }): string {
    if (clientData.crossOrigin === true || !passkeyOriginAllowed(clientData.origin, this.rpId)) {
      debug('refused a passkey response from an origin outside the relying party %s', this.rpId);
      throw new PasskeyVerificationError('origin');
    }
    return clientData.origin;
  }

  private checkOwner(passkey: StoredPasskey, userHandle: unknown, userId: string | undefined): void {
    // Passwordless: the stored owner is who signs in, and the authenticator must name that same user; a credential
    // cannot be relabelled to sign in as someone else.
    if (userId !== undefined ? passkey.userId !== userId : userHandle !== passkeyUserHandle(passkey.userId)) {
      debug('refused a passkey assertion: the credential belongs to another user');
      throw new PasskeyVerificationError('wrong_user');
    }
    if (userHandle !== undefined && userHandle !== passkeyUserHandle(passkey.userId)) {
      debug('refused a passkey assertion: its user handle names another user');
      throw new PasskeyVerificationError('wrong_user');
    }
  }
}
