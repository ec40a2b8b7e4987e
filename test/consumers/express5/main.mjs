// An Express 5 app.
import { createRequire } from 'node:module';
import express from 'express';
import * as kit from 'express-sso-kit';
import { startSites } from './shared/sites.mjs';

if (!createRequire(import.meta.url)('express/package.json').version.startsWith('5.'))
  throw new Error('this consumer must run on Express 5');
await startSites({ express, kit, label: 'express5' });
