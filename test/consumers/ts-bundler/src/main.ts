// TypeScript with moduleResolution "bundler" (as Vite, esbuild or webpack users configure it): the types come from
// the package's "import" condition.
import { sites } from '../shared/sites.js';

await sites('ts-bundler').start();
