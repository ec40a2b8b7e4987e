import { EVENTS_OPTION, eventsOption } from '../events/event-source';
import { DEFAULT_DIRECTORY_SOURCE, sourceProblem } from '../session/identity';
import { checkOptions, OptionsError, type OptionSchema, type OptionSpec } from '../util/options';
import type { QrLoginProviderOptions, ResolvedProviderOptions } from './provider-options';

/** A whole number of seconds within [min, max]: these lifetimes become store expiries, which are whole seconds. */
function seconds(min: number, max: number, extra?: () => string | undefined): OptionSpec {
  const expected = `a whole number of seconds from ${min} to ${max}`;
  return {
    type: 'integer',
    expected,
    check: (value: number) => extra?.() ?? (value < min || value > max ? `must be ${expected}, got ${value}` : undefined),
  };
}

const TOKEN_METHODS = ['issueAccessToken', 'verifyAccessToken', 'issueRefreshToken', 'rotateRefreshToken', 'revokeGrant', 'isRevoked'];

function publicUrlProblem(publicUrl: string): string | undefined {
  let url: URL;
  try {
    url = new URL(publicUrl);
  } catch {
    return `must be an absolute URL like "https://idp.example.test", got ${JSON.stringify(publicUrl)}`;
  }
  if (url.pathname !== '/' || url.search || url.hash) {
    return 'must be an origin only, like "https://idp.example.test" (mount paths are taken from the request)';
  }
  return undefined;
}

const PER_MINUTE: OptionSpec = {
  type: 'integer',
  expected: 'a positive whole number',
  check: (value: number) => (value < 1 ? `must be a positive whole number, got ${value}` : undefined),
};
const RATE_LIMITS_SCHEMA: OptionSchema = { qrconnectPerMinute: PER_MINUTE, tokenPerMinute: PER_MINUTE };

const SCHEMA: OptionSchema = {
  store: {
    type: 'object',
    required: true,
    expected: 'a KeyValueStore (e.g. new RedisStore(url))',
    check: (store: { compareAndSet?: unknown }) =>
      typeof store.compareAndSet === 'function' ? undefined : 'must be a KeyValueStore (e.g. new RedisStore(url))',
  },
  apps: { type: 'array', required: true, expected: 'a non-empty array of { appid, secretHash, name, redirectUris }' },
  users: {
    type: 'object',
    required: true,
    expected: 'a directory with findById(id) returning the user or null',
    check: (users: { findById?: unknown }) =>
      typeof users.findById === 'function' ? undefined : 'must have findById(id) returning the user or null',
  },
  tokens: {
    type: 'object',
    required: true,
    expected: 'qrTokenIssuer(tokenService)',
    check: (tokens: Record<string, unknown>) => {
      const missing = TOKEN_METHODS.find((method) => typeof tokens[method] !== 'function');
      return missing === undefined ? undefined : `must implement ${missing}() (wrap the TokenService with qrTokenIssuer())`;
    },
  },
  authenticateApp: { type: 'function', expected: 'a middleware such as requireBearer({ … })' },
  appTokenIssuer: { type: 'string', expected: 'the issuer (iss) of the phone app\'s tokens, e.g. "https://idp.example.test"' },
  publicUrl: { type: 'string', expected: 'an origin like "https://idp.example.test"', check: publicUrlProblem },
  openidSecret: {
    type: ['string', 'buffer'],
    check: (secret: string | Buffer) =>
      Buffer.byteLength(secret) < 32 ? 'must be at least 32 bytes (e.g. crypto.randomBytes(32))' : undefined,
  },
  qrLifetimeSeconds: seconds(120, 300),
  testOnlyQrLifetimeSeconds: seconds(1, 119, () =>
    process.env.NODE_ENV === 'production' ? 'is for tests and is refused when NODE_ENV=production' : undefined,
  ),
  codeLifetimeSeconds: seconds(30, 600),
  accessTokenLifetimeSeconds: seconds(60, 86_400),
  subjectLifetimeSeconds: seconds(3600, 365 * 86_400),
  requireSecretOnRefresh: { type: 'boolean' },
  wechatCompatibleStatus: { type: 'boolean' },
  rateLimits: {
    type: ['object', 'boolean'],
    expected: '{ qrconnectPerMinute, tokenPerMinute } or false',
    check: (limits: object | boolean) => (limits === true ? 'must be { qrconnectPerMinute, tokenPerMinute } or false' : undefined),
    members: RATE_LIMITS_SCHEMA,
  },
  bindingCookieName: {
    type: 'string',
    check: (name: string) => (/^[A-Za-z0-9_-]{1,64}$/.test(name) ? undefined : 'must be a plain cookie name like "qr_binding"'),
  },
  loginUrl: {
    type: 'string',
    expected: 'a path on this provider, like "/login"',
    check: (url: string) => (url.startsWith('/') && !url.startsWith('//') ? undefined : 'must be a path on this provider, like "/login"'),
  },
  events: EVENTS_OPTION,
};

/**
 * Checks the options of `qrLoginProvider` when it is called (the kit's one options rule) and resolves every
 * default once. Throws an `OptionsError` naming the option at fault; the options are only read.
 *
 * @example
 * const settings = resolveProviderOptions(options);
 */
export function resolveProviderOptions(options: QrLoginProviderOptions): ResolvedProviderOptions {
  checkOptions('qrLoginProvider', options, SCHEMA, { exclusive: [['qrLifetimeSeconds', 'testOnlyQrLifetimeSeconds']] });
  const source = options.users.source;
  if (source !== undefined && sourceProblem(source) !== undefined) {
    throw new OptionsError(`qrLoginProvider: users.source ${String(sourceProblem(source))}`);
  }
  if ((options.authenticateApp === undefined) !== (options.appTokenIssuer === undefined)) {
    throw new OptionsError(
      "qrLoginProvider: authenticateApp and appTokenIssuer go together: give the issuer (iss) of the phone app's tokens, whose subjects are the ids of users",
    );
  }
  return {
    qrLifetimeSeconds: options.testOnlyQrLifetimeSeconds ?? options.qrLifetimeSeconds ?? 180,
    codeLifetimeSeconds: options.codeLifetimeSeconds ?? 300,
    accessTokenLifetimeSeconds: options.accessTokenLifetimeSeconds ?? 7200,
    subjectLifetimeSeconds: options.subjectLifetimeSeconds ?? 30 * 86_400,
    requireSecretOnRefresh: options.requireSecretOnRefresh ?? true,
    wechatCompatibleStatus: options.wechatCompatibleStatus ?? false,
    rateLimits: options.rateLimits === false ? undefined : { qrconnectPerMinute: 30, tokenPerMinute: 600, ...options.rateLimits },
    publicOrigin: options.publicUrl === undefined ? undefined : new URL(options.publicUrl).origin,
    cookieName: options.bindingCookieName ?? 'qr_binding',
    loginUrl: options.loginUrl,
    directorySource: source ?? DEFAULT_DIRECTORY_SOURCE,
    appTokenIssuer: options.appTokenIssuer,
    events: eventsOption('qrLoginProvider', options.events),
  };
}
