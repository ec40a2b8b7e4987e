// Plain CommonJS: require() reaches the package's "require" entry point.
const express = require('express');
const kit = require('express-sso-kit');

if (typeof kit.ssoSession !== 'function') throw new Error('require("express-sso-kit") has no ssoSession');
import('./shared/sites.mjs').then(({ startSites }) => startSites({ express, kit, label: 'cjs' }));
