import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { deleteByPrefix, testPrefix, testRedisClient } from '../helpers/redis';

/**
 * Small projects that use the kit as its users get it: `npm pack` once, then each project under test/consumers/
 * gets the tarball unpacked as node_modules/express-sso-kit, and links (never copies of the whole tree) to exactly
 * the packages it and the kit declare, taken from this repository's node_modules. A type or an import the kit needs
 * but does not declare therefore fails here as it would in a user's project. Each project is type-checked when it is
 * TypeScript, started, and driven through a login on auth.example.test and a read of the shared session on
 * shop.example.test (two apps, told apart by the Host header).
 */
// semver ships no types; the one function used here is declared on the spot.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const semver = require('semver') as { satisfies(version: string, range: string): boolean };
const root = path.join(__dirname, '..', '..');
const consumersDir = __dirname;
const repoModules = path.join(root, 'node_modules');
const consumers = readdirSync(consumersDir).filter((name) => existsSync(path.join(consumersDir, name, 'package.json')));

interface Manifest {
  main: string;
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
}

const readJson = <T>(file: string): T => JSON.parse(readFileSync(file, 'utf8')) as T;
const run = (command: string, args: string[], cwd = root) =>
  execFileSync(command, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });

let work: string;
let tarball: string;
const redis = testRedisClient();
const storePrefix = testPrefix('consumers');

function newestSource(dir: string): number {
  return Math.max(
    ...readdirSync(dir, { withFileTypes: true }).map((entry) => {
      const file = path.join(dir, entry.name);
      return entry.isDirectory() ? newestSource(file) : statSync(file).mtimeMs;
    }),
  );
}

/** The built package, rebuilt only when a source is newer (npm test builds just before). */
function ensureBuilt(): void {
  const entry = path.join(root, 'dist', 'cjs', 'index.js');
  if (!existsSync(entry) || statSync(entry).mtimeMs < newestSource(path.join(root, 'lib'))) run('npm', ['run', '--silent', 'build']);
}

/** Every package directory in the repository's node_modules that holds `name`, under its own name or an alias. */
function installedCopies(name: string): string[] {
  const scope = name.startsWith('@') ? name.split('/')[0]! : '';
  const base = name.slice(scope ? scope.length + 1 : 0);
  const dir = path.join(repoModules, scope);
  return readdirSync(dir)
    .filter((entry) => entry === base || (entry.startsWith(base) && /^\d+$/.test(entry.slice(base.length))))
    .map((entry) => path.join(dir, entry))
    .filter((candidate) => existsSync(path.join(candidate, 'package.json')));
}

/** Links `name@range` into a project's node_modules from the copy in the repository that satisfies the range. */
function link(modules: string, name: string, range: string): void {
  const match = installedCopies(name).find((candidate) => {
    const manifest = readJson<{ name: string; version: string }>(path.join(candidate, 'package.json'));
    return manifest.name === name && semver.satisfies(manifest.version, range);
  });
  if (!match) throw new Error(`${name}@${range} is not installed in the repository's node_modules`);
  mkdirSync(path.dirname(path.join(modules, name)), { recursive: true });
  symlinkSync(match, path.join(modules, name), 'dir');
}

/** Sets up one project as `npm install` would: the kit from the tarball, the declared packages beside it. */
function install(consumer: string): string {
  const project = path.join(work, consumer);
  cpSync(path.join(consumersDir, consumer), project, { recursive: true });
  cpSync(path.join(consumersDir, 'shared'), path.join(project, 'shared'), { recursive: true });
  const modules = path.join(project, 'node_modules');
  const kitDir = path.join(modules, 'express-sso-kit');
  mkdirSync(kitDir, { recursive: true });
  run('tar', ['-xzf', tarball, '-C', kitDir, '--strip-components=1']);

  const manifest = readJson<Manifest>(path.join(project, 'package.json'));
  const kitManifest = readJson<Manifest>(path.join(kitDir, 'package.json'));
  const wanted = new Map<string, string>(Object.entries({ ...kitManifest.dependencies }));
  for (const [name, range] of Object.entries({ ...manifest.dependencies, ...manifest.devDependencies })) {
    if (name !== 'express-sso-kit') wanted.set(name, range);
  }
  for (const [name, range] of wanted) link(modules, name, range);
  return project;
}

interface Started {
  child: ChildProcess;
  ports: { auth: number; shop: number };
  stderr: () => string;
}

function start(project: string): Promise<Started> {
  const manifest = readJson<Manifest>(path.join(project, 'package.json'));
  const child = spawn(process.execPath, [manifest.main], {
    cwd: project,
    env: {
      PATH: process.env.PATH,
      REDIS_URL: process.env.SSO_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379',
      STORE_PREFIX: storePrefix,
      SESSION_SECRET: randomBytes(24).toString('base64url'),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`the consumer exited with ${code} before listening:\n${stderr}`)));
    createInterface({ input: child.stdout! }).once('line', (line) =>
      resolve({ child, ports: JSON.parse(line) as Started['ports'], stderr: () => stderr }),
    );
  });
}

async function stop({ child }: Started): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** One request to a consumer's app through the TLS-terminating proxy it trusts: Host and X-Forwarded-Proto set. */
function send(
  port: number,
  host: string,
  method: string,
  pathname: string,
  headers: Record<string, string> = {},
  body = '',
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, method, path: pathname, headers: { host, 'x-forwarded-proto': 'https', ...headers } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
      },
    );
    req.once('error', reject);
    req.end(body);
  });
}

beforeAll(() => {
  ensureBuilt();
  work = mkdtempSync(path.join(tmpdir(), 'sso-kit-consumers-'));
  const [packed] = JSON.parse(run('npm', ['pack', '--silent', '--json', '--pack-destination', work])) as { filename: string }[];
  tarball = path.join(work, packed!.filename);
}, 120_000);

afterAll(async () => {
  // KEEP_CONSUMER_PROJECTS=1 leaves the projects in place for a look at a failure.
  if (work && !process.env.KEEP_CONSUMER_PROJECTS) rmSync(work, { recursive: true, force: true });
  else if (work) console.log(`consumer projects kept in ${work}`);
  await deleteByPrefix(redis, storePrefix);
  await redis.quit();
});

describe.each(consumers)('the %s consumer project', (consumer) => {
  let project: string;
  let started: Started | undefined;

  beforeAll(() => {
    project = install(consumer);
  });

  afterAll(async () => {
    if (started) await stop(started);
  });

  // Only the TypeScript projects have types to check; the JavaScript ones get no such test rather than an empty one.
  const typed = existsSync(path.join(consumersDir, consumer, 'tsconfig.json'));
  (typed ? it : it.skip)(
    'type-checks and builds against the packed types',
    () => {
      const tsc = path.join(project, 'node_modules', 'typescript', 'bin', 'tsc');
      try {
        run(process.execPath, [tsc, '-p', project], project);
      } catch (error) {
        throw new Error(`tsc failed in ${consumer}:\n${(error as { stdout?: string }).stdout ?? String(error)}`, { cause: error });
      }
    },
    60_000,
  );

  it('logs in on one app and is logged in on the other', async () => {
    started = await start(project);
    const { auth, shop } = started.ports;

    const anonymous = await send(shop, 'shop.example.test', 'GET', '/me', { accept: 'application/json' });
    expect(anonymous.status).toBe(401);

    const login = await send(
      auth,
      'auth.example.test',
      'POST',
      '/login',
      { origin: 'https://auth.example.test', 'content-type': 'application/x-www-form-urlencoded' },
      'return_to=https%3A%2F%2Fshop.example.test%2Fme',
    );
    expect({ status: login.status, location: login.headers.location, stderr: started.stderr() }).toEqual({
      status: 303,
      location: 'https://shop.example.test/me',
      stderr: '',
    });
    const cookie = (login.headers['set-cookie'] ?? []) as string[];
    expect(cookie).toHaveLength(1);
    expect(cookie[0]).toMatch(/; Domain=example\.test;/i);
    expect(cookie[0]).toMatch(/; Secure/i);

    const me = await send(shop, 'shop.example.test', 'GET', '/me', { accept: 'application/json', cookie: cookie[0]!.split(';')[0]! });
    expect({ status: me.status, body: JSON.parse(me.body) as unknown }).toEqual({
      status: 200,
      body: { id: 'directory:consumers|u-1', name: 'Ada', consumer },
    });

    // A refusal inside one of the kit's async routes (ending a session the user does not have) is answered, on
    // Express 4 too, where an async handler's rejection would otherwise leave the request hanging.
    const unknown = await send(shop, 'shop.example.test', 'DELETE', '/account/sessions/no-such-session', {
      accept: 'application/json',
      origin: 'https://shop.example.test',
      cookie: cookie[0]!.split(';')[0]!,
    });
    expect({ status: unknown.status, code: (JSON.parse(unknown.body) as { code?: string }).code }).toEqual({
      status: 404,
      code: 'session_not_found',
    });
  }, 30_000);
});
