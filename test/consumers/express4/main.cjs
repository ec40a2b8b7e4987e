// An Express 4 app: the kit is a peer of the app's Express, so it must work with the app's major, not bring its own.
const express = require('express');
const kit = require('express-sso-kit');

if (!require('express/package.json').version.startsWith('4.')) throw new Error('this consumer must run on Express 4');
import('./shared/sites.mjs').then(({ startSites }) => startSites({ express, kit, label: 'express4' }));
