// Preloaded (--require) into a child process of the Express 4 test run: resolves `express` to the `express4`
// devDependency for every module, as jest.express4.config.js does for the suites themselves.
const Module = require('node:module');

const express4 = require.resolve('express4');
const resolveFilename = Module._resolveFilename;
Module._resolveFilename = function (request, ...rest) {
  if (request === 'express') return express4;
  return resolveFilename.call(this, request, ...rest);
};
