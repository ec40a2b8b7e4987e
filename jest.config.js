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
  // A worker that idles above this after a file is replaced by a fresh one. Every file loads its own copy of the
  // kit, Express and the ESM libraries (jose, oidc-provider) into a new context, and a worker's heap grows to about
  // 1.2 GB by the end of a run; the last files of a long-lived worker should not run on what the first ones left.
  workerIdleMemoryLimit: '800MB',
};
