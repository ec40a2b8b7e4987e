import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { demoSecret } from '../../example-app/launcher/demo-secret';

// npm run demo keeps one secret across runs: what a run sealed in Redis with a key derived from it (an
// authenticator app's secret) must still open on the next run.
describe('the demo secret', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'demo-secret-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('is made on the first run in the data folder, readable by its owner only, and kept for every later run', () => {
    const dataDir = join(dir, 'data');
    const first = demoSecret({ DEMO_DATA_DIR: dataDir });
    expect(first).toMatchObject({ from: 'created', path: join(dataDir, 'secret') });
    expect(first.secret.length).toBeGreaterThanOrEqual(32);
    expect(statSync(first.path!).mode & 0o777).toBe(0o600);
    const second = demoSecret({ DEMO_DATA_DIR: dataDir });
    expect(second).toEqual({ ...first, from: 'kept' });
  });

  it('is DEMO_SECRET when that is set, and then writes nothing', () => {
    expect(demoSecret({ DEMO_SECRET: 's'.repeat(40), DEMO_DATA_DIR: join(dir, 'data') })).toEqual({
      secret: 's'.repeat(40),
      from: 'env',
      path: undefined,
    });
    expect(() => statSync(join(dir, 'data'))).toThrow();
  });

  it('refuses a file that holds no usable secret, naming the file', () => {
    writeFileSync(join(dir, 'secret'), 'short\n');
    expect(() => demoSecret({ DEMO_DATA_DIR: dir })).toThrow(`${join(dir, 'secret')} must hold the demo secret`);
    expect(readFileSync(join(dir, 'secret'), 'utf8')).toBe('short\n');
  });
});
