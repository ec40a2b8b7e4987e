import { createHash, generateKeyPairSync, randomBytes, sign, type KeyObject } from 'node:crypto';
import { isoCBOR } from '@simplewebauthn/server/helpers';
import type {
  AuthenticationResponseJSON,
  PublicKeyCredentialCreationOptionsJSON,
  PublicKeyCredentialRequestOptionsJSON,
  RegistrationResponseJSON,
} from '@simplewebauthn/server';

/** What one software authenticator reports; each field can be changed between ceremonies to play a bad device. */
export interface SoftAuthenticatorSettings {
  /** Whether it verifies the user (UV flag). Default true. */
  userVerified: boolean;
  /** Backup eligible (a synced passkey) and backed up. Default false: a device-bound key. */
  backupEligible: boolean;
  backedUp: boolean;
  /** Its signature counter; each assertion increments it first. Default 0: an authenticator that does not count. */
  counter: number;
  /** Counts on each assertion (counter + 1). Default true. */
  counts: boolean;
}

/**
 * A WebAuthn authenticator in plain node crypto (P-256, ES256, "none" attestation), producing the same JSON a
 * browser's `@simplewebauthn/browser` would post: authentic signatures over authentic authenticator data, so the
 * server verifies them with nothing stubbed. For route tests and the bench; the browser journey uses Chromium's own
 * virtual authenticator instead.
 */
export class SoftAuthenticator {
  readonly credentialId = randomBytes(16).toString('base64url');
  readonly settings: SoftAuthenticatorSettings = { userVerified: true, backupEligible: false, backedUp: false, counter: 0, counts: true };
  private readonly privateKey: KeyObject;
  private readonly publicJwk: { x: string; y: string };
  /** The user handle given at registration, returned with each assertion as a discoverable credential does. */
  userHandle: string | undefined;
  rpId: string | undefined;

  constructor(settings: Partial<SoftAuthenticatorSettings> = {}) {
    Object.assign(this.settings, settings);
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    this.privateKey = privateKey;
    const jwk = publicKey.export({ format: 'jwk' });
    this.publicJwk = { x: jwk.x!, y: jwk.y! };
  }

  private flags(attested: boolean): number {
    const s = this.settings;
    return 0x01 | (s.userVerified ? 0x04 : 0) | (s.backupEligible ? 0x08 : 0) | (s.backedUp ? 0x10 : 0) | (attested ? 0x40 : 0);
  }

  private authenticatorData(rpId: string, attested: boolean): Buffer {
    const counter = Buffer.alloc(4);
    counter.writeUInt32BE(this.settings.counter);
    const head = Buffer.concat([createHash('sha256').update(rpId).digest(), Buffer.from([this.flags(attested)]), counter]);
    if (!attested) return head;
    const id = Buffer.from(this.credentialId, 'base64url');
    const length = Buffer.alloc(2);
    length.writeUInt16BE(id.length);
    const coseKey = new Map<number, number | Uint8Array>([
      [1, 2],
      [3, -7],
      [-1, 1],
      [-2, Buffer.from(this.publicJwk.x, 'base64url')],
      [-3, Buffer.from(this.publicJwk.y, 'base64url')],
    ]);
    return Buffer.concat([head, Buffer.alloc(16), length, id, Buffer.from(isoCBOR.encode(coseKey))]);
  }

  /** The `PublicKeyCredential` JSON around a response, as `@simplewebauthn/browser` posts it. */
  private credential<R>(response: R): { id: string; rawId: string; type: 'public-key'; clientExtensionResults: object; response: R } {
    return { id: this.credentialId, rawId: this.credentialId, type: 'public-key', clientExtensionResults: {}, response };
  }

  private static clientData(type: string, challenge: string, origin: string): Buffer {
    return Buffer.from(JSON.stringify({ type, challenge, origin, crossOrigin: false }));
  }

  /** Answers `navigator.credentials.create(options)` as a browser on `origin` would. */
  register(options: PublicKeyCredentialCreationOptionsJSON, origin: string, rpId = options.rp.id ?? ''): RegistrationResponseJSON {
    this.rpId = rpId;
    this.userHandle = options.user.id;
    const clientDataJSON = SoftAuthenticator.clientData('webauthn.create', options.challenge, origin);
    const attestation = new Map<string, string | Map<never, never> | Uint8Array>([
      ['fmt', 'none'],
      ['attStmt', new Map<never, never>()],
      ['authData', this.authenticatorData(rpId, true)],
    ]);
    return this.credential({
      clientDataJSON: clientDataJSON.toString('base64url'),
      attestationObject: Buffer.from(isoCBOR.encode(attestation)).toString('base64url'),
      transports: ['internal'],
    });
  }

  /** Answers `navigator.credentials.get(options)` as a browser on `origin` would; `userHandle` null leaves it out. */
  assert(
    options: Pick<PublicKeyCredentialRequestOptionsJSON, 'challenge'> & { rpId?: string },
    origin: string,
    userHandle: string | null | undefined = this.userHandle,
  ): AuthenticationResponseJSON {
    if (this.settings.counts) this.settings.counter += 1;
    const rpId = options.rpId ?? this.rpId ?? '';
    const authenticatorData = this.authenticatorData(rpId, false);
    const clientDataJSON = SoftAuthenticator.clientData('webauthn.get', options.challenge, origin);
    const signed = Buffer.concat([authenticatorData, createHash('sha256').update(clientDataJSON).digest()]);
    return this.credential({
      clientDataJSON: clientDataJSON.toString('base64url'),
      authenticatorData: authenticatorData.toString('base64url'),
      signature: sign('sha256', signed, this.privateKey).toString('base64url'),
      ...(userHandle === undefined || userHandle === null ? {} : { userHandle }),
    });
  }
}
