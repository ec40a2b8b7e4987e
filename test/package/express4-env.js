// Loaded by jest.express4.config.js before each suite: the Express major that configuration resolves `express` to.
process.env.SSO_KIT_EXPECTED_EXPRESS_MAJOR = '4';
