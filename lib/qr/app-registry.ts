import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { checkOptions, OptionsError, type OptionSchema } from '../util/options';
import { sha256, sha256Bytes } from '../util/digest';

/** A relying application registered at the QR-login provider. */
export interface QrAppRegistration {
  /** The app's identifier (`appid` on the wire). Letters, digits, `_`, `-` and `.`, at most 64 characters. */
  appid: string;
  /** `hashAppSecret(secret)`; the provider never holds the secret itself. */
  secretHash: string;
  /** Shown to the user on the QR page and on the phone, so they know which app asks. */
  name: string;
  /** The exact redirect URIs the app may use; compared character for character. */
  redirectUris: readonly string[];
  /**
   * The app's own sign-in page, e.g. `https://auth.example.test/login`: the QR page links to it as "Use another way
   * to sign in", for a user without the phone app at hand. Default: no such link.
   */
  loginPageUrl?: string;
  /**
   * The app is the provider's own (the portal that is its own QR provider, or another app of the same
   * organisation): its `/sns/userinfo` answers also carry `user_id`, the directory's id of the user, so the app can
   * sign the user in as the directory's account (`ssoSession({ linkAccount })`) rather than as a QR identity of its
   * own. Other apps see only their pseudonymous `openid` and the provider-wide `unionid`. Default false.
   */
  releaseUserId?: boolean;
}

/** A registered app after validation, with its digest decoded once. */
export interface RegisteredQrApp {
  appid: string;
  name: string;
  redirectUris: ReadonlySet<string>;
  secretDigest: Buffer;
  loginPageUrl: string | undefined;
  releaseUserId: boolean;
}

const HASH_PREFIX = 'sha256:';
const APPID = /^[A-Za-z0-9_.-]{1,64}$/;
/**
 * 32 characters: a WeChat AppSecret is 32 hex digits (128 bits); shorter secrets are guessable offline from a leaked hash.
 *
 * @example
 * if (secret.length < MIN_APP_SECRET_LENGTH) throw new Error('generate the secret with generateAppSecret()');
 */
export const MIN_APP_SECRET_LENGTH = 32;

/**
 * Hashes an app secret for the registry: `sha256:<base64url>`. App secrets are generated, high-entropy strings
 * (≥ 128 bits), so a fast hash is enough; the slow hashes made for human passwords would only cost CPU on every
 * token request.
 *
 * @example
 * const secretHash = hashAppSecret(process.env.SHOP_QR_SECRET!);
 */
export function hashAppSecret(secret: string): string {
  if (typeof secret !== 'string' || secret.length < MIN_APP_SECRET_LENGTH) {
    throw new OptionsError(
      `hashAppSecret: the secret must be a string of at least ${MIN_APP_SECRET_LENGTH} characters (use generateAppSecret())`,
    );
  }
  return HASH_PREFIX + sha256(secret, 'base64url');
}

/**
 * A new random app secret: 32 hex digits (128 bits), the shape WeChat uses.
 *
 * @example
 * const secret = generateAppSecret(); // give it to the app, store hashAppSecret(secret)
 */
export function generateAppSecret(): string {
  return randomBytes(16).toString('hex');
}

/**
 * Compares a presented secret with a registered app's digest in constant time (equal-length SHA-256 digests).
 *
 * @example
 * if (!verifyAppSecret(app, req.body.secret)) throw new WeChatApiError('invalid_secret');
 */
export function verifyAppSecret(app: RegisteredQrApp, presented: string): boolean {
  const digest = sha256Bytes(presented);
  return timingSafeEqual(digest, app.secretDigest);
}

/**
 * True for hosts that always mean this machine: 127.0.0.1, [::1], `localhost` and names under `.localhost`
 * (RFC 6761; browsers resolve them to loopback and treat them as secure contexts). Plain http is accepted only there.
 *
 * @example
 * isLoopbackHost('idp.sso.localhost') // true
 */
export function isLoopbackHost(hostname: string): boolean {
  return hostname === '127.0.0.1' || hostname === '[::1]' || hostname === 'localhost' || hostname.endsWith('.localhost');
}

/** Why `uri` cannot be one of an app's URLs (absolute; https, or http on loopback; no fragment), or undefined. */
function appUrlProblem(uri: string, example: string): string | undefined {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return `"${uri}" is not an absolute URL like "${example}"`;
  }
  const loopback = isLoopbackHost(url.hostname);
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && loopback)) {
    return `"${uri}" must use https (http only for loopback development)`;
  }
  if (url.hash) return `"${uri}" must not have a #fragment`;
  return undefined;
}

function redirectUriProblem(uri: string): string | undefined {
  const problem = appUrlProblem(uri, 'https://shop.example.test/callback/qr');
  return problem === undefined ? undefined : `entry ${problem}`;
}

const REGISTRATION: OptionSchema = {
  appid: {
    type: 'string',
    required: true,
    expected: '1-64 letters, digits, "_", "-" or "."',
    check: (appid: string) =>
      APPID.test(appid) ? undefined : `must be 1-64 letters, digits, "_", "-" or ".", got ${JSON.stringify(appid)}`,
  },
  secretHash: {
    type: 'string',
    required: true,
    expected: 'hashAppSecret(secret), not the secret itself',
    check: (hash: string) => {
      if (!hash.startsWith(HASH_PREFIX)) return 'must be made by hashAppSecret(secret), not the secret itself';
      return Buffer.from(hash.slice(HASH_PREFIX.length), 'base64url').length === 32 ? undefined : 'is malformed';
    },
  },
  name: {
    type: 'string',
    required: true,
    expected: 'the display name shown to the user',
    check: (name: string) => (name.trim() === '' ? 'must be a display name' : undefined),
  },
  redirectUris: {
    type: 'string[]',
    required: true,
    expected: 'the exact callback URLs the app may use',
    check: (uris: string[]) =>
      uris.length === 0 ? 'must list the exact callback URLs the app may use' : uris.map(redirectUriProblem).find(Boolean),
  },
  loginPageUrl: {
    type: 'string',
    expected: 'the absolute URL of the app\'s own sign-in page, like "https://auth.example.test/login"',
    check: (url: string) => appUrlProblem(url, 'https://auth.example.test/login'),
  },
  releaseUserId: { type: 'boolean' },
};

/**
 * Validates the app list given to `qrLoginProvider` and indexes it by appid. Each registration is checked by the
 * kit's options rule: unknown keys (a misspelled `redirectUri`) are errors that name the entry.
 *
 * @example
 * const apps = buildAppRegistry([{ appid: 'shop', secretHash, name: 'Shop', redirectUris: ['https://shop.example.test/callback/qr'] }]);
 */
export function buildAppRegistry(apps: unknown, where = 'qrLoginProvider'): ReadonlyMap<string, RegisteredQrApp> {
  if (!Array.isArray(apps) || apps.length === 0) {
    throw new OptionsError(`${where}: apps must be a non-empty array of { appid, secretHash, name, redirectUris }`);
  }
  const registry = new Map<string, RegisteredQrApp>();
  apps.forEach((entry: unknown, index) => {
    const appid = (entry as { appid?: unknown } | null)?.appid;
    checkOptions(`${where}: apps[${index}]${typeof appid === 'string' ? ` ("${appid}")` : ''}`, entry, REGISTRATION);
    const { secretHash, name, redirectUris, loginPageUrl, releaseUserId } = entry as unknown as QrAppRegistration;
    if (registry.has(appid as string)) throw new OptionsError(`${where}: appid "${String(appid)}" is registered twice`);
    const secretDigest = Buffer.from(secretHash.slice(HASH_PREFIX.length), 'base64url');
    registry.set(appid as string, {
      appid: appid as string,
      name,
      redirectUris: new Set(redirectUris),
      secretDigest,
      loginPageUrl,
      releaseUserId: releaseUserId === true,
    });
  });
  return registry;
}

/**
 * The user's `openid` for one app: an HMAC of the user id keyed with the provider's secret and bound to the appid,
 * so it is stable for (user, app), differs between apps, and reveals nothing about the user id.
 *
 * @example
 * deriveOpenid(secret, 'shop', 'user-1') !== deriveOpenid(secret, 'admin', 'user-1')
 */
export function deriveOpenid(openidSecret: Buffer, appid: string, userId: string): string {
  return createHmac('sha256', openidSecret).update(`openid\0${appid}\0${userId}`).digest('base64url').slice(0, 28);
}

/**
 * The user's `unionid`: the same for every app of this provider, still not the raw user id.
 *
 * @example
 * deriveUnionid(secret, 'user-1')
 */
export function deriveUnionid(openidSecret: Buffer, userId: string): string {
  return createHmac('sha256', openidSecret).update(`unionid\0${userId}`).digest('base64url').slice(0, 28);
}
