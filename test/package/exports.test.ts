import { execFileSync } from 'node:child_process';
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
