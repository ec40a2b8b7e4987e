import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';

const root = path.join(__dirname, '..', '..');
const run = (command: string, args: string[]) =>
  execFileSync(command, args, { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });

// The package is built once here and then consumed the three ways users consume it.
beforeAll(() => {
  run('npm', ['run', '--silent', 'build']);
}, 180_000);

describe('the published package', () => {
  it('is importable from ESM by name', () => {
    const out = run('node', [
      '--input-type=module',
      '-e',
      "import { ssoSession, requireSession, errorHandler } from 'express-sso-kit'; console.log([ssoSession, requireSession, errorHandler].map((f) => typeof f).join(','))",
    ]);
    expect(out.trim()).toBe('function,function,function');
  });

  it('is requirable from CommonJS by name', () => {
    const out = run('node', [
      '-e',
      "const { ssoSession, requireSession, errorHandler } = require('express-sso-kit'); console.log([ssoSession, requireSession, errorHandler].map((f) => typeof f).join(','))",
    ]);
    expect(out.trim()).toBe('function,function,function');
  });

  it('gives TypeScript consumers types under both module systems', () => {
    const fixtures = path.join('test', 'package', 'fixtures');
    expect(() =>
      run('npx', [
        'tsc',
        '--noEmit',
        '--strict',
        '--module',
        'node16',
        '--moduleResolution',
        'node16',
        '--skipLibCheck',
        '--types',
        'node',
        path.join(fixtures, 'consumer-esm.mts'),
        path.join(fixtures, 'consumer-cjs.cts'),
      ]),
    ).not.toThrow();
  });

  it('lists its public surface name by name in lib/index.ts (no export *)', () => {
    const index = readFileSync(path.join(root, 'lib', 'index.ts'), 'utf8');
    expect(index).not.toMatch(/export \*/);
    expect(index).not.toMatch(/export type \*/);
  });

  it('exports the same names from both entry points', () => {
    const esm = run('node', [
      '--input-type=module',
      '-e',
      "import * as kit from 'express-sso-kit'; console.log(Object.keys(kit).filter((k) => k !== 'default').sort().join(','))",
    ]);
    const cjs = run('node', [
      '-e',
      "console.log(Object.keys(require('express-sso-kit')).filter((k) => k !== '__esModule').sort().join(','))",
    ]);
    expect(esm.trim()).toBe(cjs.trim());
  });
});

describe('the packed tarball', () => {
  interface Packed {
    size: number;
    files: { path: string }[];
  }
  let packed: Packed;
  const manifest = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as Record<string, unknown> & {
    dependencies: Record<string, string>;
    peerDependencies: Record<string, string>;
  };

  beforeAll(() => {
    [packed] = JSON.parse(run('npm', ['pack', '--dry-run', '--json', '--silent'])) as [Packed];
  }, 60_000);

  it('ships dist, README, CHANGELOG and LICENSE, and nothing else', () => {
    const files = packed.files.map((file) => file.path);
    expect(files.filter((file) => !file.startsWith('dist/')).sort()).toEqual(['CHANGELOG.md', 'LICENSE', 'README.md', 'package.json']);
    expect(files).toEqual(
      expect.arrayContaining(['dist/cjs/index.js', 'dist/cjs/index.d.ts', 'dist/esm/index.mjs', 'dist/esm/index.d.mts']),
    );
  });

  it('has no source maps, and no reference to one, since the sources are not shipped', () => {
    const files = packed.files.map((file) => file.path);
    expect(files.filter((file) => file.endsWith('.map'))).toEqual([]);
    const referencing = files
      .filter((file) => /\.(m?js|d\.m?ts)$/.test(file))
      .filter((file) => readFileSync(path.join(root, file), 'utf8').includes('sourceMappingURL'));
    expect(referencing).toEqual([]);
  });

  it('names its repository, has no side effects, and takes express as a peer (4.21+ or 5)', () => {
    expect(manifest.repository).toEqual(expect.objectContaining({ type: 'git', url: expect.stringContaining('github.com') }));
    expect(manifest.sideEffects).toBe(false);
    expect(manifest.peerDependencies.express).toBe('^4.21.0 || ^5.0.0');
    expect(manifest.dependencies.express).toBeUndefined();
  });
});
