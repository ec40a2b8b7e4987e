// TypeScript with module "nodenext", strict, and no skipLibCheck: every type the kit publishes must resolve from
// the packages that install with it.
import { sites } from '../shared/sites.js';

await sites('ts-nodenext').start();
