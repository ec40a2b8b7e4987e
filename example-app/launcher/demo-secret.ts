/**
 * The demo's one secret, stable across runs: `DEMO_SECRET` when set, else the one kept in the demo's data folder
 * (`DEMO_DATA_DIR`, default `.demo/` in the checkout, which git ignores), made on the first run. A secret made per
 * run would leave the second run unable to open what the first sealed with it in Redis (an authenticator app's
 * secret, a session's signature): the keys derived from it must outlive the process as long as the data does.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, linkSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

/** Where the secret came from, for the banner. */
export interface DemoSecret {
  secret: string;
  /** `env`: DEMO_SECRET; `created`: made now in `path`; `kept`: read from `path`, made by an earlier run. */
  from: 'env' | 'created' | 'kept';
  /** The file holding it (undefined for `env`). */
  path: string | undefined;
}

/**
 * The demo's data folder: `DEMO_DATA_DIR`, or `.demo/` at the root of the checkout.
 *
 * @example
 * demoDataDir(process.env); // '/home/me/express-sso-kit/.demo'
 */
export function demoDataDir(env: NodeJS.ProcessEnv): string {
  return resolve(env.DEMO_DATA_DIR || join(__dirname, '..', '..', '.demo'));
}

function readSecret(path: string): string {
  const secret = readFileSync(path, 'utf8').trim();
  if (secret.length < 32) throw new TypeError(`${path} must hold the demo secret (at least 32 characters); delete it to make a new one`);
  return secret;
}

/**
 * The secret of this run, as the module comment describes. The file is created once, readable by its owner only.
 *
 * @example
 * const { secret } = demoSecret(process.env);
 */
export function demoSecret(env: NodeJS.ProcessEnv): DemoSecret {
  if (env.DEMO_SECRET) return { secret: env.DEMO_SECRET, from: 'env', path: undefined };
  const dir = demoDataDir(env);
  const path = join(dir, 'secret');
  if (existsSync(path)) return { secret: readSecret(path), from: 'kept', path };
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  // Written whole under another name, then linked into place: a reader never sees a half-written file, and a
  // link fails when the name exists, so of two launchers starting at once the first one's secret stays.
  const draft = join(dir, `secret.${process.pid}.tmp`);
  writeFileSync(draft, `${randomBytes(32).toString('base64url')}\n`, { mode: 0o600 });
  try {
    linkSync(draft, path);
    return { secret: readSecret(path), from: 'created', path };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    return { secret: readSecret(path), from: 'kept', path };
  } finally {
    rmSync(draft, { force: true });
  }
}
