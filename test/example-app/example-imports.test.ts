import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';

// The example apps are meant to be copied into a new project: they use the kit by its package name only, and each
// site stands on its own (shared settings come from example-app/common, never from another site).
const root = resolve(__dirname, '../../example-app');
const SITES = ['auth', 'shop', 'admin', 'api', 'idp', 'partner'];

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return /\.(ts|js)$/.test(name) ? [path] : [];
  });
}

function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(/(?:from\s+|import\s+|import\s*\(\s*|require\s*\(\s*)['"]([^'"]+)['"]/g)].map((match) => match[1]!);
}

describe('the example apps', () => {
  const files = sources(root);

  it.each(files.map((file) => [relative(root, file), file]))('%s reaches the kit only as express-sso-kit', (_name, file) => {
    const internal = importsOf(file).filter((specifier) => /(^|\/)lib(\/|$)/.test(specifier) || specifier.startsWith('express-sso-kit/'));
    expect(internal).toEqual([]);
  });

  it.each(SITES)('site %s imports nothing of another site', (site) => {
    for (const file of sources(join(root, site))) {
      const reached = importsOf(file)
        .filter((specifier) => specifier.startsWith('.'))
        .map((specifier) => relative(root, resolve(join(file, '..'), specifier)).split('/')[0]);
      expect({ file: relative(root, file), reached: reached.filter((folder) => folder !== site && folder !== 'common') }).toEqual({
        file: relative(root, file),
        reached: [],
      });
    }
  });

  it('keeps each site short enough to read and copy', () => {
    for (const site of SITES) {
      const lines = readFileSync(join(root, site, `${site}.ts`), 'utf8').split('\n').length;
      expect({ site, short: lines <= 150 }).toEqual({ site, short: true });
    }
  });
});
