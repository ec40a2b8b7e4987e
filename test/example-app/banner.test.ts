import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { readDemoConfig } from '../../example-app/common/config';
import { bannerLines, notesCurl, tokenCommand, type BannerFacts } from '../../example-app/launcher/banner';

const SECRET = 'banner-test-secret-0123456789abcdefghij';

function facts(overrides: Partial<BannerFacts> = {}, env: NodeJS.ProcessEnv = {}): BannerFacts {
  return {
    config: readDemoConfig({ DEMO_SECRET: SECRET, ...env }),
    host: '127.0.0.1',
    port: 8080,
    redis: { kind: 'local', url: 'redis://127.0.0.1:6379' },
    secret: { secret: SECRET, from: 'kept', path: '/home/me/kit/.demo/secret' },
    env,
    ...overrides,
  };
}

describe('the banner of npm run demo', () => {
  it('prints the Notes API call with a token command, bare with the default settings', () => {
    expect(tokenCommand(facts(), 'alice')).toBe('npm run -s demo:token -- alice');
    expect(notesCurl(facts())).toBe(
      'curl -H "Authorization: Bearer $(npm run -s demo:token -- alice)" http://api.sso.localhost:8080/notes',
    );
    expect(bannerLines(facts())).toContain(`    ${notesCurl(facts())}`);
    // README shows the same call (test/e2e/newcomer-journey.test.ts runs it against a running demo).
    expect(readFileSync(join(__dirname, '../../README.md'), 'utf8')).toContain(`\n${notesCurl(facts())}\n`);
  });

  it('repeats in the token command the settings of this run that differ from the defaults', () => {
    const env = { DEMO_DOMAIN: 'sso.test', DEMO_DATA_DIR: '/srv/demo', DEMO_PUBLIC_PORT: '41000' };
    expect(tokenCommand(facts({ port: 41000 }, env), 'bob')).toBe(
      'PORT=41000 DEMO_DOMAIN=sso.test DEMO_DATA_DIR=/srv/demo npm run -s demo:token -- bob',
    );
  });

  it('says where the data lives and whether the next run finds it', () => {
    const kept = bannerLines(facts()).join('\n');
    expect(kept).toMatch(/keys sso-demo:[0-9a-f]{8}:\*: sessions, authenticator apps and\s+passkeys outlive this run/);
    expect(kept).toContain('the demo secret is in /home/me/kit/.demo/secret (kept from an earlier run)');
    expect(bannerLines(facts({ redis: { kind: 'embedded', url: 'redis://127.0.0.1:1234' } })).join('\n')).toContain(
      'it ends with this run',
    );
    expect(bannerLines(facts({ redis: { kind: 'memory', url: undefined } })).join('\n')).toContain('it ends with this run');
  });
});
