import {
  backchannelLogout,
  oidc,
  oidcCallback,
  oidcContext,
  oidcLogin,
  oidcLogout,
  oidcProvider,
  type OidcOptions,
  type OidcProviderOptions,
} from '../../lib/oidc';
import { MemoryStore } from '../../lib/store';
import { OptionsError } from '../../lib/util/options';

const SECRET = 'options-client-secret-0123456789abcdef';
const store = new MemoryStore();
const valid: OidcProviderOptions = {
  name: 'corp',
  issuer: 'https://idp.example.test',
  clientId: 'shop',
  clientSecret: SECRET,
  redirectUri: 'https://auth.example.test/callback/corp',
  store,
};
const router: OidcOptions = {
  name: 'corp',
  issuer: valid.issuer,
  clientId: 'shop',
  clientSecret: SECRET,
  baseUrl: 'https://auth.example.test',
  store,
};
const corp = oidcProvider(valid);

afterAll(() => store.close());

function thrown(run: () => unknown): OptionsError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(OptionsError);
    expect(error).toBeInstanceOf(TypeError);
    expect((error as OptionsError).code).toBe('invalid_options');
    return error as OptionsError;
  }
  throw new Error('expected an OptionsError');
}

describe('every OIDC factory refuses a misspelled option and names the one meant', () => {
  it.each<[string, () => unknown, string]>([
    [
      'oidcProvider',
      () => oidcProvider({ ...valid, rolesClam: 'roles' } as never),
      'oidcProvider: unknown option "rolesClam" (did you mean "rolesClaim"?)',
    ],
    [
      'oidcProvider endpoints',
      () =>
        oidcProvider({
          ...valid,
          endpoints: { authorization: 'https://i/a', token: 'https://i/t', jwks: 'https://i/j', endSesion: 'https://i/e' } as never,
        }),
      'oidcProvider: endpoints: unknown option "endSesion" (did you mean "endSession"?)',
    ],
    ['oidcLogin', () => oidcLogin(corp, { promt: 'login' } as never), 'oidcLogin: unknown option "promt" (did you mean "prompt"?)'],
    [
      'oidcCallback',
      () => oidcCallback(corp, { loginPth: '/login/corp' } as never),
      'oidcCallback: unknown option "loginPth" (did you mean "loginPath"?)',
    ],
    [
      'oidcContext',
      () => oidcContext(corp, { lockLifetimeSecond: 5 } as never),
      'oidcContext: unknown option "lockLifetimeSecond" (did you mean "lockLifetimeSeconds"?)',
    ],
    ['oidcLogout', () => oidcLogout(corp, { redirect: {} } as never), 'oidcLogout: unknown option "redirect" (did you mean "redirects"?)'],
    [
      'backchannelLogout',
      () => backchannelLogout(corp, { sesions: {} } as never),
      'backchannelLogout: unknown option "sesions" (did you mean "sessions"?)',
    ],
    [
      'oidc',
      () => oidc({ ...router, clientSecert: SECRET } as never),
      'oidc: unknown option "clientSecert" (did you mean "clientSecret"?)',
    ],
    [
      'oidc routes',
      () => oidc({ ...router, routes: { calback: '/cb' } as never }),
      'oidc: routes: unknown option "calback" (did you mean "callback"?)',
    ],
    [
      'oidc login',
      () => oidc({ ...router, login: { loginHnt: 'alice' } as never }),
      'oidc: login: unknown option "loginHnt" (did you mean "loginHint"?)',
    ],
  ])('%s', (_factory, run, message) => {
    expect(thrown(run).message).toContain(message);
  });

  it.each<[string, Record<string, unknown>]>([
    ['timeoutMs (now timeoutSeconds)', { timeoutMs: 5000 }],
    ['discoveryCacheSeconds (now discoveryCacheLifetimeSeconds)', { discoveryCacheSeconds: 60 }],
    ['allowInsecureHttpForTesting (now allowInsecureLocalDevelopment)', { allowInsecureHttpForTesting: true }],
  ])('oidcProvider refuses the old option %s', (_label, old) => {
    expect(thrown(() => oidcProvider({ ...valid, ...old } as never)).message).toMatch(
      new RegExp(`unknown option "${Object.keys(old)[0]}"`),
    );
  });

  it('oidcContext refuses the old option lockSeconds (now lockLifetimeSeconds)', () => {
    expect(thrown(() => oidcContext(corp, { lockSeconds: 10 } as never)).message).toMatch(/unknown option "lockSeconds"/);
  });

  it.each<[string, (request: never) => unknown]>([
    ['oidcProvider', (request) => oidcProvider(request)],
    ['oidc', (request) => oidc(request)],
    ['oidcLogin', (request) => oidcLogin(request)],
    ['oidcCallback', (request) => oidcCallback(request)],
    ['oidcContext', (request) => oidcContext(request)],
    ['oidcLogout', (request) => oidcLogout(request)],
    ['backchannelLogout', (request) => backchannelLogout(request)],
  ])('%s detects being used as a middleware', (factory, run) => {
    const request = { method: 'GET', headers: {}, url: '/', socket: {} } as never;
    expect(thrown(() => run(request)).message).toMatch(new RegExp(`^${factory}: it is a factory`));
  });
});

describe('oidcProvider option values', () => {
  it('names the option and what it expects for a wrong type', () => {
    expect(thrown(() => oidcProvider({ ...valid, timeoutSeconds: '5' } as never)).message).toBe(
      'oidcProvider: timeoutSeconds must be a number, got "5"',
    );
    expect(thrown(() => oidcProvider({ ...valid, rolesClaim: 7 } as never)).message).toMatch(
      /rolesClaim must be a claim name like "roles" or a path like \["realm_access", "roles"\]/,
    );
  });

  it('accepts fractions of a second for timeoutSeconds', () => {
    expect(oidcProvider({ ...valid, timeoutSeconds: 0.25 })).toMatchObject({ timeoutSeconds: 0.25 });
  });

  it('refuses an empty roles path', () => {
    expect(thrown(() => oidcProvider({ ...valid, rolesClaim: [] })).message).toMatch(/rolesClaim must name a claim/);
  });

  it('refuses rolesClaim together with claimsToUser, which decides roles itself', () => {
    const claimsToUser = () => ({ name: 'x', roles: [] });
    expect(thrown(() => oidcProvider({ ...valid, rolesClaim: 'roles', claimsToUser })).message).toBe(
      'oidcProvider: claimsToUser and rolesClaim cannot be used together; give only one of them',
    );
  });
});

describe('allowInsecureLocalDevelopment', () => {
  const insecure = { ...valid, issuer: 'http://127.0.0.1:1', allowInsecureLocalDevelopment: true };
  const environment = process.env.NODE_ENV;
  afterEach(() => {
    process.env.NODE_ENV = environment;
    jest.restoreAllMocks();
  });

  it('is refused when NODE_ENV=production', () => {
    process.env.NODE_ENV = 'production';
    expect(thrown(() => oidcProvider(insecure)).message).toBe(
      'oidcProvider: allowInsecureLocalDevelopment is refused when NODE_ENV=production',
    );
    expect(thrown(() => oidc({ ...router, issuer: insecure.issuer, allowInsecureLocalDevelopment: true })).message).toMatch(
      /^oidc: allowInsecureLocalDevelopment is refused/,
    );
  });

  it('warns once, then stays quiet', () => {
    const warn = jest.spyOn(console, 'warn').mockImplementation(() => undefined);
    jest.isolateModules(() => {
      // A fresh copy of the module, whose "warned" memory is empty.
      const fresh = jest.requireActual<typeof import('../../lib/oidc')>('../../lib/oidc');
      fresh.oidcProvider(insecure);
      fresh.oidcProvider({ ...insecure, name: 'other' });
    });
    expect(warn).toHaveBeenCalledTimes(1);
    expect(warn.mock.calls[0]![0]).toMatch(/allowInsecureLocalDevelopment .* Never do this in production/);
  });

  it('is needed for an http issuer', () => {
    expect(thrown(() => oidcProvider({ ...insecure, allowInsecureLocalDevelopment: false })).message).toMatch(
      /issuer must use https:.*allowInsecureLocalDevelopment/,
    );
  });
});
