import { buildAppRegistry, hashAppSecret } from '../../lib/qr/app-registry';
import { qrLogin } from '../../lib/qr/qr-login';
import { qrLoginProvider } from '../../lib/qr/qr-login-provider';
import { qrTokenIssuer } from '../../lib/qr/qr-token-issuer';
import { MemoryStore } from '../../lib/store';
import { OptionsError } from '../../lib/util/options';
import { PHONE_ISSUER, phoneAppBearer, qrTokenService, SHOP_REDIRECT } from '../helpers/qr-harness';

const store = new MemoryStore();
afterAll(() => store.close());

const app = { appid: 'shop', secretHash: hashAppSecret('s'.repeat(32)), name: 'Shop', redirectUris: [SHOP_REDIRECT] };
const tokenService = qrTokenService(store);
const providerOptions = () => ({ store, apps: [app], users: { findById: async () => null }, tokens: qrTokenIssuer(tokenService) });
const loginOptions = { providerUrl: 'https://idp.example.test', appid: 'shop', secret: 'x'.repeat(32), redirectUri: SHOP_REDIRECT };

/** Every QR factory, called with one option misspelled the way people misspell it. */
const misspelled: Array<[string, () => unknown, string, string]> = [
  [
    'qrLoginProvider',
    () => qrLoginProvider({ ...providerOptions(), publicURL: 'https://idp.example.test' } as never),
    'publicURL',
    'publicUrl',
  ],
  [
    'qrLoginProvider rateLimits',
    () => qrLoginProvider({ ...providerOptions(), rateLimits: { qrconectPerMinute: 5 } } as never),
    'rateLimits.qrconectPerMinute',
    'rateLimits.qrconnectPerMinute',
  ],
  ['qrLogin', () => qrLogin({ ...loginOptions, redirectUrl: SHOP_REDIRECT } as never), 'redirectUrl', 'redirectUri'],
  [
    'qrTokenIssuer',
    () => qrTokenIssuer(tokenService, { accessTokenLifetimeSecond: 7200 } as never),
    'accessTokenLifetimeSecond',
    'accessTokenLifetimeSeconds',
  ],
  ['an app registration', () => buildAppRegistry([{ ...app, redirectUri: SHOP_REDIRECT }]), 'redirectUri', 'redirectUris'],
];

describe('the options rule in every QR factory', () => {
  it.each(misspelled)('%s refuses a misspelled option with invalid_options and names the intended one', (_factory, call, wrong, right) => {
    let thrown: unknown;
    try {
      call();
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(OptionsError);
    expect(thrown).toBeInstanceOf(TypeError);
    expect((thrown as OptionsError).code).toBe('invalid_options');
    expect((thrown as Error).message).toContain(`"${wrong}" (did you mean "${right}"?)`);
  });

  it('names the app registration at fault by its index and appid', () => {
    expect(() => buildAppRegistry([app, { ...app, appid: 'admin', name: '' }])).toThrow('apps[1] ("admin"): name must be a display name');
  });

  it('names a wrong type and what is expected', () => {
    expect(() => qrLoginProvider({ ...providerOptions(), wechatCompatibleStatus: 'yes' } as never)).toThrow(
      'qrLoginProvider: wechatCompatibleStatus must be true or false, got "yes"',
    );
    expect(() => qrLogin({ ...loginOptions, maxPendingLogins: 2.5 })).toThrow(
      'qrLogin: maxPendingLogins must be a whole number from 1 to 20',
    );
  });

  it('names both options of a contradiction', () => {
    expect(() => qrLoginProvider({ ...providerOptions(), qrLifetimeSeconds: 180, testOnlyQrLifetimeSeconds: 2 })).toThrow(
      'qrLifetimeSeconds and testOnlyQrLifetimeSeconds cannot be used together',
    );
  });

  it('refuses a phone-app authenticator without the issuer whose subjects are the directory’s users', () => {
    const authenticateApp = phoneAppBearer();
    expect(() => qrLoginProvider({ ...providerOptions(), authenticateApp })).toThrow(/authenticateApp and appTokenIssuer go together/);
    expect(() => qrLoginProvider({ ...providerOptions(), appTokenIssuer: PHONE_ISSUER })).toThrow(
      /authenticateApp and appTokenIssuer go together/,
    );
    expect(() => qrLoginProvider({ ...providerOptions(), authenticateApp, appTokenIssuer: PHONE_ISSUER })).not.toThrow();
  });

  it('does not change the options it is given', () => {
    const options = { ...loginOptions, exchangeMethod: 'GET' as const };
    const snapshot = JSON.stringify(options);
    qrLogin(options);
    expect(JSON.stringify(options)).toBe(snapshot);
  });
});
