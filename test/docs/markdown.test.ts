import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { markdownProblems } from '../helpers/markdown-links';

// The README and the docs are read on GitHub and npm: a fence that swallows the rest of a page, or a link to a
// heading that was renamed, is a broken page for every reader.

const root = path.join(__dirname, '..', '..');
const documents = [
  'README.md',
  'CHANGELOG.md',
  'SECURITY.md',
  ...readdirSync(path.join(root, 'bench'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `bench/${name}`),
  ...readdirSync(path.join(root, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
];

describe('the README and the docs', () => {
  it('render whole, and every relative link and #anchor leads somewhere', async () => {
    expect(documents.length).toBeGreaterThan(15);
    expect(await markdownProblems(root, documents)).toEqual([]);
  });
});

describe('markdownProblems', () => {
  let dir: string;
  const write = (file: string, text: string): void => {
    mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    writeFileSync(path.join(dir, file), text);
  };

  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'markdown-check-'));
    write('docs/guide.md', '# Guide\n\n## Set `up` the store\n\n## Set up the store\n');
    write('lib/index.ts', 'export {};\n');
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('finds nothing wrong in a page whose fences close and whose links lead somewhere', async () => {
    write(
      'README.md',
      [
        '# Kit',
        '',
        '````md',
        '```ts',
        'nested',
        '```',
        '````',
        '',
        '[up](#kit) [guide](docs/guide.md#set-up-the-store) [again](docs/guide.md#set-up-the-store-1) [src](lib/index.ts)',
        '[site](https://example.test/#nowhere) [folder](docs/)',
        '',
      ].join('\n'),
    );
    expect(await markdownProblems(dir, ['README.md', 'docs/guide.md'])).toEqual([]);
  });

  it('reports a fence closed with text on the same line, which leaves the fence open', async () => {
    write('README.md', '# Kit\n\n```ts\nconst a = 1;\n``` `createRedisConnection`\ntakes a URL\n\n## Next\n');
    expect(await markdownProblems(dir, ['README.md'])).toEqual([
      { file: 'README.md', line: 5, message: 'code fence closed with text after it: "``` `createRedisConnection`"' },
      { file: 'README.md', line: 3, message: 'code fence opened with ``` is never closed' },
    ]);
  });

  it('reports a fence that is never closed', async () => {
    write('README.md', '# Kit\n\n~~~sh\nnpm test\n');
    expect(await markdownProblems(dir, ['README.md'])).toEqual([
      { file: 'README.md', line: 3, message: 'code fence opened with ~~~ is never closed' },
    ]);
  });

  it('reports an anchor no heading of the page produces', async () => {
    write('README.md', '# Kit\n\n## Security notes\n\nSee [notes](#security-note) and [ok](#security-notes).\n');
    expect(await markdownProblems(dir, ['README.md'])).toEqual([
      { file: 'README.md', line: 5, message: 'link to #security-note: no heading has that anchor' },
    ]);
  });

  it('reports a link to a missing file and to an anchor another page does not have', async () => {
    write('README.md', '# Kit\n\n[gone](docs/gone.md) and [guide](docs/guide.md#set-up-the-cache)\n');
    expect(await markdownProblems(dir, ['README.md'])).toEqual([
      { file: 'README.md', line: 3, message: 'link to docs/gone.md: docs/gone.md does not exist' },
      { file: 'README.md', line: 3, message: 'link to docs/guide.md#set-up-the-cache: docs/guide.md has no heading with that anchor' },
    ]);
  });

  it('resolves a link from a page in a folder against that folder', async () => {
    write('docs/other.md', '# Other\n\n[back](../README.md#kit) [wrong](README.md)\n');
    write('README.md', '# Kit\n');
    expect(await markdownProblems(dir, ['docs/other.md'])).toEqual([
      { file: 'docs/other.md', line: 3, message: 'link to README.md: docs/README.md does not exist' },
    ]);
  });
});
