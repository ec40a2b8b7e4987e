/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  // The consumer projects need the packed package: `npm run test:consumers` (jest.consumers.config.js).
  testPathIgnorePatterns: ['/node_modules/', '<rootDir>/test/consumers/'],
  transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json' }] },
  // The example apps import the kit by its package name, as a copy of them in another project would; here the
  // name means the sources (tsconfig.json maps it the same way for tsc and tsx).
  moduleNameMapper: { '^express-sso-kit$': '<rootDir>/lib/index.ts' },
  testTimeout: 30000,
  // A file stuck outside any test's or hook's timeout is named, and after ten minutes ends the run as failed.
  reporters: ['default', '<rootDir>/test/helpers/stalled-file-reporter.js'],
  maxWorkers: 2,
};
