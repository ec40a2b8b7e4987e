import * as kit from '../../lib';
import { OptionsError } from '../../lib/util/options';

// One options rule for the whole package: every exported factory (function or class that takes options) refuses a
// misspelled option with an OptionsError that names the key and the option meant. The table below classifies every
// runtime export of lib/index.ts, and the first test fails when an export is missing from it, so a new factory
// cannot ship without its row.

const store = new kit.MemoryStore();
afterAll(() => store.close());

const SECRET = 'options-rule-secret-0123456789abcdefghijkl';
const ISSUER = 'https://idp.example.test';
const policy = kit.createPolicy({ roles: { viewer: { permissions: ['read:reports'] } } });
const providerOptions: kit.OidcProviderOptions = {
  name: 'corp',
  issuer: ISSUER,
  clientId: 'shop',
  clientSecret: SECRET,
  redirectUri: 'https://auth.example.test/callback/corp',
  store,
};
const provider = kit.oidcProvider(providerOptions);
const keys = kit.KeySet.generate('ES256');
const tokenService = new kit.TokenService({ keys, issuer: ISSUER, store });
const hmacKey = { kid: 'k1', alg: 'HS256', secret: SECRET } as const;

/** A call with one option misspelled, the key as written, and the option it should be taken for. */
interface Misspelling {
  call: () => unknown;
  wrong: string;
  meant: string;
  /** The name the message starts with, when it is not the export's own. */
  named?: string;
}

const factories: Record<string, Misspelling> = {
  accountAdmin: { call: () => kit.accountAdmin({ usres: {} } as never), wrong: 'usres', meant: 'users' },
  accountAdminRoutes: {
    call: () => kit.accountAdminRoutes({} as never, { policy, permision: 'manage:accounts' } as never),
    wrong: 'permision',
    meant: 'permission',
  },
  PasswordResetLinks: {
    call: () => new kit.PasswordResetLinks({ resetUrll: 'https://auth.example.test/password/reset' } as never),
    wrong: 'resetUrll',
    meant: 'resetUrl',
    named: 'passwordResetLinks',
  },
  passwordResetLinkSender: {
    call: () => kit.passwordResetLinkSender({ mailr: {} } as never),
    wrong: 'mailr',
    meant: 'mailer',
    named: 'passwordResetLinks',
  },
  forwardAuth: { call: () => kit.forwardAuth({ trustedProxy: ['127.0.0.1'] } as never), wrong: 'trustedProxy', meant: 'trustedProxies' },
  ssoSession: { call: () => kit.ssoSession({ secrett: SECRET } as never), wrong: 'secrett', meant: 'secret' },
  establishLogin: {
    call: () =>
      kit.establishLogin({} as never, { source: 's', subject: 'u', name: 'U', roles: [], method: 'password' }, { tag: ['a'] } as never),
    wrong: 'tag',
    meant: 'tags',
  },
  requireSession: { call: () => kit.requireSession({ loginUrll: '/login' } as never), wrong: 'loginUrll', meant: 'loginUrl' },
  sessionsResource: { call: () => kit.sessionsResource({ pth: '/sessions' } as never), wrong: 'pth', meant: 'path' },
  createRedirectPolicy: {
    call: () => kit.createRedirectPolicy({ parentDomian: 'example.test' } as never),
    wrong: 'parentDomian',
    meant: 'parentDomain',
  },
  isSafeRedirect: {
    call: () => kit.isSafeRedirect('/next', { parentDomian: 'example.test' } as never),
    wrong: 'parentDomian',
    meant: 'parentDomain',
  },
  csrfGuard: { call: () => kit.csrfGuard({ allowedOrigin: [] } as never), wrong: 'allowedOrigin', meant: 'allowedOrigins' },
  RedisStore: {
    call: () => new kit.RedisStore({ url: 'redis://127.0.0.1:6379', redisOptions: { lazyConnect: true } }, { prefx: 'x:' } as never),
    wrong: 'prefx',
    meant: 'prefix',
  },
  MemoryStore: {
    call: () => new kit.MemoryStore({ sweepIntervalMs: 10 } as never),
    wrong: 'sweepIntervalMs',
    meant: 'sweepIntervalSeconds',
  },
  createRedisConnection: {
    call: () => kit.createRedisConnection({ ulr: 'redis://127.0.0.1:6379' } as never),
    wrong: 'ulr',
    meant: 'url',
  },
  errorHandler: { call: () => kit.errorHandler({ htlm: true } as never), wrong: 'htlm', meant: 'html' },
  securityHeaders: {
    call: () => kit.securityHeaders({ contentSecurityPolicyy: false } as never),
    wrong: 'contentSecurityPolicyy',
    meant: 'contentSecurityPolicy',
  },
  KeyValueRateLimitStore: {
    call: () => new kit.KeyValueRateLimitStore({ stroe: store } as never),
    wrong: 'stroe',
    meant: 'store',
  },
  requireBearer: { call: () => kit.requireBearer({ audiance: 'api' } as never), wrong: 'audiance', meant: 'audience' },
  verifyJwt: { call: () => kit.verifyJwt('a.b.c', { audiance: 'api' } as never), wrong: 'audiance', meant: 'audience' },
  createJwtVerifier: { call: () => kit.createJwtVerifier({ audiance: 'api' } as never), wrong: 'audiance', meant: 'audience' },
  JwksCache: { call: () => new kit.JwksCache({ url: `${ISSUER}/jwks` } as never), wrong: 'url', meant: 'uri' },
  jwksHandler: { call: () => kit.jwksHandler(keys, { maxAgeSecond: 60 } as never), wrong: 'maxAgeSecond', meant: 'maxAgeSeconds' },
  KeySet: { call: () => new kit.KeySet([hmacKey], { activeKidd: 'k1' } as never), wrong: 'activeKidd', meant: 'activeKid' },
  TokenService: {
    call: () => new kit.TokenService({ keys, issuer: ISSUER, accessTokenLifetimeSecond: 60 } as never),
    wrong: 'accessTokenLifetimeSecond',
    meant: 'accessTokenLifetimeSeconds',
  },
  RefreshTokens: { call: () => new kit.RefreshTokens({ stor: store } as never), wrong: 'stor', meant: 'store' },
  createPolicy: { call: () => kit.createPolicy({ role: {} } as never), wrong: 'role', meant: 'roles' },
  requirePermission: {
    call: () => kit.requirePermission('read', 'reports', { policy, rolesClam: 'roles' } as never),
    wrong: 'rolesClam',
    meant: 'rolesClaim',
  },
  requireAuth: { call: () => kit.requireAuth({ sesion: true } as never), wrong: 'sesion', meant: 'session' },
  corsPreflight: { call: () => kit.corsPreflight({ origin: ['https://app.example.test'] } as never), wrong: 'origin', meant: 'origins' },
  requireBasic: { call: () => kit.requireBasic({ realmm: 'ops' } as never), wrong: 'realmm', meant: 'realm' },
  basicCredentials: {
    call: () => kit.basicCredentials({ ops: { passwrd: 'correct horse battery staple' } } as never),
    wrong: 'passwrd',
    meant: 'password',
  },
  oidc: { call: () => kit.oidc({ issuer: ISSUER, clientID: 'shop' } as never), wrong: 'clientID', meant: 'clientId' },
  oidcProvider: { call: () => kit.oidcProvider({ issuer: ISSUER, clientID: 'shop' } as never), wrong: 'clientID', meant: 'clientId' },
  OidcProvider: {
    call: () => new kit.OidcProvider({ issuer: ISSUER, clientID: 'shop' } as never),
    wrong: 'clientID',
    meant: 'clientId',
    // The constructor is internal; its errors name the factory users call.
    named: 'oidcProvider',
  },
  oidcLogin: { call: () => kit.oidcLogin(provider, { promt: 'login' } as never), wrong: 'promt', meant: 'prompt' },
  oidcCallback: { call: () => kit.oidcCallback(provider, { loginPth: '/login' } as never), wrong: 'loginPth', meant: 'loginPath' },
  oidcContext: {
    call: () => kit.oidcContext(provider, { refreshMarginMs: 60 } as never),
    wrong: 'refreshMarginMs',
    meant: 'refreshMarginSeconds',
  },
  oidcLogout: { call: () => kit.oidcLogout(provider, { redirect: {} } as never), wrong: 'redirect', meant: 'redirects' },
  backchannelLogout: { call: () => kit.backchannelLogout(provider, { stor: store } as never), wrong: 'stor', meant: 'store' },
  qrLoginProvider: {
    call: () => kit.qrLoginProvider({ publicURL: ISSUER } as never),
    wrong: 'publicURL',
    meant: 'publicUrl',
  },
  qrLogin: {
    call: () => kit.qrLogin({ redirectUrl: 'https://shop.example.test/cb' } as never),
    wrong: 'redirectUrl',
    meant: 'redirectUri',
  },
  qrTokenIssuer: {
    call: () => kit.qrTokenIssuer(tokenService, { accessTokenLifetimeSecond: 7200 } as never),
    wrong: 'accessTokenLifetimeSecond',
    meant: 'accessTokenLifetimeSeconds',
  },
  loginPortal: { call: () => kit.loginPortal({ user: {} } as never), wrong: 'user', meant: 'users' },
  fileUserDirectory: { call: () => kit.fileUserDirectory([], { sourc: 'directory:staff' } as never), wrong: 'sourc', meant: 'source' },
  redisUserDirectory: { call: () => kit.redisUserDirectory(store, { sourc: 'directory:staff' } as never), wrong: 'sourc', meant: 'source' },
  memoryUserDirectory: { call: () => kit.memoryUserDirectory({ sourc: 'directory:staff' } as never), wrong: 'sourc', meant: 'source' },
  postgresUserDirectory: {
    call: () => kit.postgresUserDirectory({} as never, { schma: 'sso_accounts' } as never),
    wrong: 'schma',
    meant: 'schema',
  },
  postgresUserDirectorySql: {
    call: () => kit.postgresUserDirectorySql({ schma: 'sso_accounts' } as never),
    wrong: 'schma',
    meant: 'schema',
  },
  passwordPolicy: { call: () => kit.passwordPolicy({ minLenght: 12 } as never), wrong: 'minLenght', meant: 'minLength' },
  rangeBreachCheck: { call: () => kit.rangeBreachCheck({ timeoutSecond: 2 } as never), wrong: 'timeoutSecond', meant: 'timeoutSeconds' },
  AccountTokens: {
    call: () => new kit.AccountTokens({ store, users: kit.memoryUserDirectory(), purpose: 'password-reset', lifetimeSecond: 60 } as never),
    wrong: 'lifetimeSecond',
    meant: 'lifetimeSeconds',
  },
  mailer: {
    call: () => kit.mailer({ smtp: { host: 'smtp.example.test' }, from: 'no-reply@example.test', sitename: 'Example' } as never),
    wrong: 'sitename',
    meant: 'siteName',
  },
  hashPassword: { call: () => kit.hashPassword('correct horse', { n: 16384 } as never), wrong: 'n', meant: 'N' },
  LoginThrottle: { call: () => new kit.LoginThrottle(store, { perAcount: {} } as never), wrong: 'perAcount', meant: 'perAccount' },
  openidProvider: { call: () => kit.openidProvider({ issuerr: ISSUER } as never), wrong: 'issuerr', meant: 'issuer' },
  accessPolicy: { call: () => kit.accessPolicy({ rule: [] } as never), wrong: 'rule', meant: 'rules' },
  createSecretSealer: { call: () => kit.createSecretSealer({ previousKey: [] } as never), wrong: 'previousKey', meant: 'previousKeys' },
  PasskeyCeremonies: {
    call: () => new kit.PasskeyCeremonies({ store, rpID: 'example.test' } as never),
    wrong: 'rpID',
    meant: 'rpId',
  },
  PostgresCredentialStore: {
    call: () => new kit.PostgresCredentialStore({} as never, { schma: 'sso_credentials' } as never),
    wrong: 'schma',
    meant: 'schema',
  },
  DpopVerifier: {
    call: () => new kit.DpopVerifier({ replayStore: store, proofMaxAgeSecond: 60 } as never),
    wrong: 'proofMaxAgeSecond',
    meant: 'proofMaxAgeSeconds',
  },
  tokenRequestProof: {
    call: () => kit.tokenRequestProof({ headers: {} } as never, new kit.DpopVerifier({ replayStore: store }), { requird: true } as never),
    wrong: 'requird',
    meant: 'required',
  },
  TotpAuthenticator: { call: () => new kit.TotpAuthenticator({ isuer: 'Example Corp' } as never), wrong: 'isuer', meant: 'issuer' },
  securityEvents: { call: () => kit.securityEvents({ sink: [] } as never), wrong: 'sink', meant: 'sinks' },
  pinoSink: { call: () => kit.pinoSink({ destinaton: 2 } as never), wrong: 'destinaton', meant: 'destination' },
  redisStreamSink: {
    call: () => kit.redisStreamSink({ store, maxEventPerUser: 10 } as never),
    wrong: 'maxEventPerUser',
    meant: 'maxEventsPerUser',
  },
  postgresEventSink: {
    call: () => kit.postgresEventSink({ query: () => undefined } as never, { schma: 'sso_events' } as never),
    wrong: 'schma',
    meant: 'schema',
  },
  metricsHandler: { call: () => kit.metricsHandler({ event: {} } as never), wrong: 'event', meant: 'events' },
};

/** Exports that take no options object, each with what it takes instead. */
const withoutOptions: Record<string, string> = {
  endProviderAccess: 'the kit store and a user id',
  logout: 'the request and response',
  logoutEverywhere: 'the request and a user id',
  checkRequestOrigin: 'request facts and the allowed origins (a pure decision)',
  authenticationOf: 'a session user',
  identityId: 'an identity',
  parseIdentityId: 'a user id',
  toHttpError: 'any thrown value',
  notFound: 'nothing (it refuses its own use as a middleware)',
  methodNotAllowed: 'the allowed methods',
  requireRepresentation: 'the media types served',
  requiredScopes: 'scope names',
  claimCheck: 'a predicate',
  claimEquals: 'a claim name and a value',
  claimIncludes: 'a claim name and values',
  TokenRevocations: 'the store',
  parsePermission: 'a permission string',
  compileOrigins: 'origins',
  constantTimeEqual: 'two strings',
  parseBasicAuthorization: 'an Authorization header',
  defaultClaimsToUser: 'claims and userinfo',
  rolesFromClaims: 'claims and a claim path',
  validateIdToken: 'a provider, a token and the expected nonce (a pure core)',
  validateLogoutToken: 'a provider, the store and a token (a pure core)',
  redeemAuthorizationCode: 'a provider and the code (a pure core)',
  refreshTokenGrant: 'a provider and a refresh token (a pure core)',
  requestUserinfo: 'a provider and an access token (a pure core)',
  upstreamLogoutUrl: 'the request (read from its session)',
  hashAppSecret: 'an app secret',
  generateAppSecret: 'nothing',
  verifyPasswordHash: 'a password and a hash',
  parsePasswordHash: 'a hash string',
  meetsRequirement: 'an authentication, a requirement and the time (a pure decision)',
  tokenMeets: 'token claims, a requirement and the time (a pure decision)',
  raiseAuthentication: 'an authentication, a method and the time (a pure function)',
  raiseSessionAuthentication: 'the request and the methods just proven',
  passkeyMethods: 'a stored passkey and whether the user was verified',
  passkeyOriginAllowed: 'an origin and the relying-party id',
  passkeyUserHandle: 'a user id',
  recoveryCodeFactor: 'a RecoveryCodes',
  totpFactor: 'a TotpAuthenticator',
  KeyValueCredentialStore: 'the store',
  RecoveryCodes: 'a credential store and a sealer',
  isWritableUserDirectory: 'a user directory',
  normalizeEmail: 'an email address',
  requestIdOf: 'a request',
  jwkThumbprint: 'a public JWK',
  dpopTargetUri: 'the request',
  dpopTokenError: 'a DpopError',
};

/** Error classes (their codes are checked by test/package/error-vocabulary.test.ts) and constants. */
const errorClasses = Object.keys(kit).filter((name) => {
  const value = (kit as Record<string, unknown>)[name];
  return typeof value === 'function' && value.prototype instanceof Error;
});
const constants = [
  'DEFAULT_DIRECTORY_SOURCE',
  'SUPPORTED_ALGORITHMS',
  'WECHAT_ERRORS',
  'RECOVERY_CODE_COUNT',
  'DEFAULT_MAIL_TEMPLATES',
  'SECURITY_EVENT_TYPES',
  'DPOP_ALGORITHMS',
  'DEFAULT_DPOP_ALGORITHMS',
];

async function thrownBy(call: () => unknown): Promise<unknown> {
  try {
    // Per-request helpers (establishLogin) are async and reject rather than throw.
    await call();
  } catch (error) {
    return error;
  }
  return undefined;
}

describe('the options rule over every export of the package', () => {
  it('classifies every runtime export: a factory with its misspelling, an export without options, an error or a constant', () => {
    const classified = [...Object.keys(factories), ...Object.keys(withoutOptions), ...errorClasses, ...constants];
    expect(new Set(classified).size).toBe(classified.length);
    expect([...classified].sort()).toEqual(Object.keys(kit).sort());
  });

  it.each(Object.entries(factories))(
    '%s refuses a misspelled option and names the option meant',
    async (name, { call, wrong, meant, named }) => {
      const error = await thrownBy(call);
      expect(error).toBeInstanceOf(OptionsError);
      expect(error).toBeInstanceOf(TypeError);
      expect((error as OptionsError).code).toBe('invalid_options');
      expect((error as Error).message).toMatch(new RegExp(`^${named ?? name}\\b`));
      expect((error as Error).message).toContain(`"${wrong}" (did you mean "${meant}"?)`);
    },
  );
});

describe('a factory mounted as if it were the middleware', () => {
  // `app.use(requireSession)` for `app.use(requireSession())`: Express would call the factory with (req, res, next).
  const mountable = [
    'ssoSession',
    'requireSession',
    'sessionsResource',
    'csrfGuard',
    'errorHandler',
    'notFound',
    'methodNotAllowed',
    'requireRepresentation',
    'securityHeaders',
    'requireBearer',
    'requiredScopes',
    'claimCheck',
    'claimEquals',
    'claimIncludes',
    'requirePermission',
    'requireAuth',
    'corsPreflight',
    'requireBasic',
    'oidc',
    'oidcLogin',
    'oidcCallback',
    'oidcContext',
    'oidcLogout',
    'backchannelLogout',
    'qrLoginProvider',
    'qrLogin',
    'loginPortal',
    'openidProvider',
    'accessPolicy',
  ];

  it.each(mountable)('%s says it is a factory', (name) => {
    const factory = (kit as unknown as Record<string, (...args: unknown[]) => unknown>)[name]!;
    const req = { method: 'GET', url: '/', headers: {}, socket: {} };
    expect(() => factory(req, {}, () => undefined)).toThrow(
      expect.objectContaining({ code: 'invalid_options', message: expect.stringMatching(`^${name}: it is a factory`) }),
    );
  });
});

describe('wrong types and contradictions, through the same validator in every area', () => {
  const user: kit.LoginUser = { source: 's', subject: 'u', name: 'U', roles: [], method: 'password' };

  it.each<[string, () => unknown, string]>([
    ['requireSession', () => kit.requireSession({ loginUrl: 5 } as never), 'requireSession: loginUrl must be'],
    ['csrfGuard', () => kit.csrfGuard({ allowedOrigins: 5 } as never), 'csrfGuard: allowedOrigins must be'],
    ['MemoryStore', () => new kit.MemoryStore({ sweepIntervalSeconds: '60' } as never), 'MemoryStore: sweepIntervalSeconds must be'],
    ['errorHandler', () => kit.errorHandler({ html: 'yes' } as never), 'errorHandler: html must be true or false, got "yes"'],
    ['KeySet', () => new kit.KeySet([hmacKey], { activeKid: 5 } as never), 'KeySet: activeKid must be'],
    ['oidcContext', () => kit.oidcContext(provider, { refreshMarginSeconds: '60' } as never), 'oidcContext: refreshMarginSeconds must be'],
    [
      'qrTokenIssuer',
      () => kit.qrTokenIssuer(tokenService, { accessTokenLifetimeSeconds: '7200' } as never),
      'qrTokenIssuer: accessTokenLifetimeSeconds must be',
    ],
    [
      'establishLogin',
      () => kit.establishLogin({} as never, user, { tags: 'a' } as never),
      'establishLogin: tags must be an array of strings, got "a"',
    ],
    [
      'hashPassword',
      () => kit.hashPassword('correct horse', { N: '16384' } as never),
      'hashPassword: N must be a whole number, got "16384"',
    ],
  ])('%s names the option and the type it expects', async (_name, call, message) => {
    const error = await thrownBy(call);
    expect(error).toBeInstanceOf(OptionsError);
    expect((error as Error).message).toContain(message);
  });

  it('names the unknown key even when another option is wrong too', async () => {
    const error = await thrownBy(() => kit.requireSession({ loginUrl: 5, loginUrll: '/login' } as never));
    expect((error as Error).message).toContain('"loginUrll" (did you mean "loginUrl"?)');
  });

  it.each<[string, () => unknown, string]>([
    [
      'createRedisConnection',
      () => kit.createRedisConnection({ url: 'redis://127.0.0.1:6379', cluster: { nodes: [{ host: '127.0.0.1', port: 7000 }] } } as never),
      'createRedisConnection: url and cluster cannot be used together',
    ],
    [
      'requireBearer',
      () => kit.requireBearer({ secret: SECRET, jwksUri: `${ISSUER}/jwks`, issuer: ISSUER, audience: 'api' } as never),
      'requireBearer: secret and jwksUri cannot be used together',
    ],
    [
      'oidcProvider',
      () => kit.oidcProvider({ ...providerOptions, rolesClaim: 'roles', claimsToUser: kit.defaultClaimsToUser }),
      'oidcProvider: claimsToUser and rolesClaim cannot be used together',
    ],
    [
      'LoginThrottle',
      () => new kit.LoginThrottle(store, { deviceTokenSecret: SECRET, deviceTokenKey: Buffer.alloc(32, 1) }),
      'LoginThrottle: deviceTokenSecret and deviceTokenKey cannot be used together',
    ],
  ])('%s names both options of a contradiction', async (_name, call, message) => {
    const error = await thrownBy(call);
    expect(error).toBeInstanceOf(OptionsError);
    expect((error as Error).message).toContain(message);
  });
});
