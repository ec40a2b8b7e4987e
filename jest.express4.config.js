/** @type {import('jest').Config} */
// The integration suites that matter most to an Express 4 app (the shared session, CSRF, the OIDC callback, QR
// login, the portal, bad input on every kit route, access rules against Express 4's own router) run a second time with `express` resolved to Express 4 (the
// `express4` devDependency), for the kit's own modules, the tests and the libraries they load alike:
// `npm run test:express4`. test/package/express-major.test.ts proves which major is loaded.
const base = require('./jest.config.js');

module.exports = {
  ...base,
  testPathIgnorePatterns: ['/node_modules/'],
  testMatch: [
    '<rootDir>/test/package/express-major.test.ts',
    '<rootDir>/test/session/sso-session.test.ts',
    '<rootDir>/test/session/require-session.test.ts',
    '<rootDir>/test/session/require-session-step-up.test.ts',
    '<rootDir>/test/session/csrf-guard.test.ts',
    '<rootDir>/test/session/sessions-resource.test.ts',
    '<rootDir>/test/session/session-events.test.ts',
    '<rootDir>/test/http/error-handler-events.test.ts',
    '<rootDir>/test/portal/login-portal.test.ts',
    '<rootDir>/test/portal/passkeys/passkey-routes.test.ts',
    '<rootDir>/test/portal/passkeys/passkey-factor.test.ts',
    '<rootDir>/test/security/csrf.test.ts',
    '<rootDir>/test/security/bad-input.test.ts',
    '<rootDir>/test/oidc/callback.test.ts',
    '<rootDir>/test/oidc/oidc-router.test.ts',
    '<rootDir>/test/qr/qr-login.test.ts',
    '<rootDir>/test/qr/qr-login-provider.test.ts',
    '<rootDir>/test/example-app/idp-interactions.test.ts',
    '<rootDir>/test/util/request-shape.test.ts',
    '<rootDir>/test/access/access-policy.test.ts',
    '<rootDir>/test/access/access-policy.property.test.ts',
    '<rootDir>/test/tokens/dpop/require-dpop.test.ts',
  ],
  moduleNameMapper: {
    ...base.moduleNameMapper,
    '^express$': require.resolve('express4'),
  },
  // The major the suites run on, for the test that checks it.
  setupFiles: [...(base.setupFiles ?? []), '<rootDir>/test/package/express4-env.js'],
};
