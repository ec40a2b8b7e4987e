import { randomBytes } from 'node:crypto';
import type { KeyValueStore } from '../store/port';

/**
 * The openid HMAC key: the given secret, or one random secret that the first instance stores and every other reads,
 * so every instance derives the same openids. A failed read is retried on the next call.
 *
 * @example
 * const openidSecret = sharedOpenidSecret(store, options.openidSecret);
 */
export function sharedOpenidSecret(store: KeyValueStore, given: string | Buffer | undefined): () => Promise<Buffer> {
  let secret: Promise<Buffer> | undefined = given === undefined ? undefined : Promise.resolve(Buffer.from(given));
  return () => {
    if (!secret) {
      secret = (async () => {
        await store.setIfAbsent('qr:openid-secret', randomBytes(32).toString('base64url'));
        const value = await store.get('qr:openid-secret');
        if (!value) throw new Error('qrLoginProvider: the openid secret vanished from the store');
        return Buffer.from(value, 'base64url');
      })();
      secret.catch(() => {
        secret = undefined;
      });
    }
    return secret;
  };
}
