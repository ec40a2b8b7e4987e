import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Redis from 'ioredis';
import { startPrivateRedis } from '../helpers/redis';

// House-keeping a user of a fresh clone relies on: no Redis dump in the repository and none written by a test, an
// install from the lock file (`npm ci`, as CI and the example Dockerfile do) that works.

const root = path.join(__dirname, '..', '..');
const read = (file: string): string => readFileSync(path.join(root, file), 'utf8');

function filesUnder(dir: string): string[] {
  return readdirSync(path.join(root, dir), { withFileTypes: true }).flatMap((entry) => {
    const relative = path.join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'node_modules' ? [] : filesUnder(relative);
    return [relative];
  });
}

describe('no Redis files in the checkout', () => {
  it('the repository tracks no dump.rdb or append-only file, and the root holds none', () => {
    const tracked = execFileSync('git', ['ls-files'], { cwd: root, encoding: 'utf8' }).split('\n');
    expect(tracked.filter((file) => /(^|\/)(dump\.rdb|appendonly\.aof|appendonlydir)/.test(file))).toEqual([]);
    expect(existsSync(path.join(root, 'dump.rdb'))).toBe(false);
  });

  it('a private redis-server of the tests saves nothing and works outside the checkout', async () => {
    const redis = await startPrivateRedis();
    const client = new Redis(redis.url, { lazyConnect: true, maxRetriesPerRequest: 1 });
    try {
      await client.connect();
      const [, save] = (await client.config('GET', 'save')) as [string, string];
      const [, appendonly] = (await client.config('GET', 'appendonly')) as [string, string];
      const [, dir] = (await client.config('GET', 'dir')) as [string, string];
      expect(save).toBe('');
      expect(appendonly).toBe('no');
      expect(path.relative(root, dir).startsWith('..')).toBe(true);
    } finally {
      client.disconnect();
      await redis.stop();
    }
  });

  it('every redis-server a test helper or the demo starts is told to save nothing, in a directory of its own', () => {
    const spawning = [...filesUnder('test'), ...filesUnder('example-app'), ...filesUnder('scripts')].filter(
      (file) => /\.(ts|cjs|js)$/.test(file) && /spawn\((?:'redis-server'|program)|'redis-server',\s*\[/.test(read(file)),
    );
    expect(spawning.length).toBeGreaterThanOrEqual(4);
    for (const file of spawning) {
      const text = read(file);
      expect(`${file}: ${/'--save',\s*''/.test(text) && /'--appendonly',\s*'no'/.test(text) && /'--dir'/.test(text)}`).toBe(
        `${file}: true`,
      );
    }
  });
});

describe('installs from the lock file', () => {
  it('CI and the example Dockerfile install with npm ci', () => {
    for (const file of ['.ci/run', 'example-app/Dockerfile']) {
      const text = read(file);
      expect(text).toMatch(/npm ci\b/);
      expect(text).not.toMatch(/npm (install|i)\b/);
    }
  });

  it('the lock file records exactly the dependencies of package.json, and every optional one of its packages', () => {
    const manifest = JSON.parse(read('package.json')) as Record<string, Record<string, string> | undefined>;
    const lock = JSON.parse(read('package-lock.json')) as {
      packages: Record<string, { optionalDependencies?: Record<string, string>; [key: string]: unknown }>;
    };
    const locked = lock.packages['']!;
    for (const kind of ['dependencies', 'devDependencies', 'peerDependencies', 'optionalDependencies']) {
      expect([kind, locked[kind] ?? {}]).toEqual([kind, manifest[kind] ?? {}]);
    }
    // `npm ci` on another platform needs the entries of the optional platform bindings (the bug of @unrs/resolver).
    const missing: string[] = [];
    for (const [location, entry] of Object.entries(lock.packages)) {
      for (const name of Object.keys(entry.optionalDependencies ?? {})) {
        const nested = `${location}/node_modules/${name}`;
        if (!lock.packages[nested] && !lock.packages[`node_modules/${name}`]) missing.push(`${name} (of ${location})`);
      }
    }
    expect(missing).toEqual([]);
  });

  it('npm ci accepts package.json and the lock file as they are, without the network', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'sso-kit-npm-ci-'));
    try {
      writeFileSync(path.join(dir, 'package.json'), read('package.json'));
      writeFileSync(path.join(dir, 'package-lock.json'), read('package-lock.json'));
      // --dry-run builds the tree from the lock alone; a dependency missing from it would need the registry, and
      // --offline turns that into a failure.
      const out = execFileSync('npm', ['ci', '--dry-run', '--offline', '--ignore-scripts', '--no-audit', '--no-fund'], {
        cwd: dir,
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      expect(out).toMatch(/added \d+ packages/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});

describe('what an install of the kit brings', () => {
  it('no command-line parser: QR images come from qrcode-generator, public suffixes from tldts', () => {
    const manifest = JSON.parse(read('package.json')) as { dependencies: Record<string, string> };
    expect(Object.keys(manifest.dependencies)).toEqual(expect.arrayContaining(['qrcode-generator', 'tldts']));
    expect(manifest.dependencies.qrcode).toBeUndefined();
    const lock = JSON.parse(read('package-lock.json')) as { packages: Record<string, { dev?: boolean; devOptional?: boolean }> };
    const installed = Object.entries(lock.packages)
      .filter(([location, entry]) => location !== '' && !entry.dev && !entry.devOptional)
      .map(([location]) => location.replace(/.*node_modules\//, ''));
    expect(installed.filter((name) => /^(yargs|commander|minimist|qrcode)$/.test(name))).toEqual([]);
  });
});
