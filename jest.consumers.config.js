/** @type {import('jest').Config} */
// The consumer projects (test/consumers) install the packed package into temporary projects; they run apart from
// the main suite, after the build, as `npm run test:consumers`.
module.exports = {
  ...require('./jest.config.js'),
  roots: ['<rootDir>/test/consumers'],
  testPathIgnorePatterns: ['/node_modules/'],
  maxWorkers: 1,
};
