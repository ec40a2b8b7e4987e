// Plain ESM JavaScript: named imports from the package's "import" entry point, which must match its default export.
import express from 'express';
import kit, * as named from 'express-sso-kit';
import { startSites } from './shared/sites.mjs';

const differing = Object.keys(named).filter((name) => name !== 'default' && named[name] !== kit[name]);
if (differing.length > 0) throw new Error(`named and default exports differ: ${differing.join(', ')}`);
await startSites({ express, kit: named, label: 'esm' });
