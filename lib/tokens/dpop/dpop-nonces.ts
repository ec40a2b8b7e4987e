import { createHmac, createSecretKey, timingSafeEqual, type KeyObject } from 'node:crypto';
import { checkOptions, OptionsError, within, type OptionSchema } from '../../util/options';

/** Options of the server nonces (RFC 9449 §8, §9) a {@link DpopVerifier} hands out and requires. */
export interface DpopNonceOptions {
  /**
   * The secret the nonces are derived from (at least 32 bytes). Every process that checks proofs for the same
   * clients must share it, so a nonce one of them handed out is good at all of them.
   */
  secret: string | Buffer;
  /** A nonce is handed out for this long, and accepted for twice as long. Default 60; 5 to 3600. */
  rotationSeconds?: number;
}

/** What a presented nonce is: the one handed out now, the previous one (still good: hand out the new one), or neither. */
export type NonceStanding = 'current' | 'previous' | 'invalid';

export const NONCE_SCHEMA: OptionSchema = {
  secret: {
    type: ['string', 'buffer'],
    required: true,
    expected: 'a string or Buffer of at least 32 random bytes, shared by every process that checks the proofs',
    check: (secret: string | Buffer) => (Buffer.byteLength(secret) >= 32 ? undefined : 'must be at least 32 bytes'),
  },
  rotationSeconds: { type: 'integer', expected: 'a whole number of seconds from 5 to 3600', check: within(5, 3600) },
};

const MAC_BYTES = 16;
const NONCE = /^([0-9a-z]{1,12})\.([A-Za-z0-9_-]{22})$/;

/**
 * Server nonces that need no storage: the nonce of a time slot is the slot's number and a MAC of it under the
 * secret, so any process with the secret can check one. A new nonce every `rotationSeconds`; the previous slot's
 * is still accepted, so a client always has time to switch to the nonce it was just given.
 *
 * @example
 * const nonces = new DpopNonces({ secret: process.env.DPOP_NONCE_SECRET! });
 * res.set('DPoP-Nonce', nonces.current());
 */
export class DpopNonces {
  private readonly key: KeyObject;
  private readonly rotationMs: number;
  private readonly now: () => number;
  private cached: { slot: number; nonce: string } | undefined;

  constructor(options: DpopNonceOptions, now: () => number = Date.now) {
    checkOptions('DpopNonces', options, NONCE_SCHEMA);
    if (typeof now !== 'function') throw new OptionsError('DpopNonces: now must be a function returning epoch milliseconds');
    this.key = createSecretKey(Buffer.from(options.secret as never));
    this.rotationMs = (options.rotationSeconds ?? 60) * 1000;
    this.now = now;
  }

  /**
   * The nonce clients must put in their proofs now.
   *
   * @example
   * res.set('DPoP-Nonce', nonces.current());
   */
  current(): string {
    const slot = Math.floor(this.now() / this.rotationMs);
    if (this.cached?.slot !== slot) this.cached = { slot, nonce: `${slot.toString(36)}.${this.mac(slot).toString('base64url')}` };
    return this.cached.nonce;
  }

  /**
   * Whether a presented nonce is the current one, the previous one, or neither (forged, older, or not a nonce).
   *
   * @example
   * if (nonces.check(claims.nonce) === 'invalid') throw new DpopError('wrong_nonce', { nonce: nonces.current() });
   */
  check(nonce: unknown): NonceStanding {
    if (typeof nonce !== 'string') return 'invalid';
    const parts = NONCE.exec(nonce);
    if (parts === null) return 'invalid';
    const slot = Number.parseInt(parts[1] as string, 36);
    const current = Math.floor(this.now() / this.rotationMs);
    if (slot !== current && slot !== current - 1) return 'invalid';
    const presented = Buffer.from(parts[2] as string, 'base64url');
    // A non-canonical encoding (stray trailing bits) would let two strings stand for one nonce.
    if (presented.toString('base64url') !== parts[2] || !timingSafeEqual(presented, this.mac(slot))) return 'invalid';
    return slot === current ? 'current' : 'previous';
  }

  private mac(slot: number): Buffer {
    return createHmac('sha256', this.key).update(`dpop-nonce ${slot}`).digest().subarray(0, MAC_BYTES);
  }
}
