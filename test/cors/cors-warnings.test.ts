import { randomBytes } from 'node:crypto';
import { corsPreflight, type CorsPreflightOptions } from '../../lib/cors';
import { captureLogs } from '../helpers/log-capture';

/** A parent domain no other test used, since each warning is given once per process. */
function freshParent(): string {
  return `p${randomBytes(4).toString('hex')}.example.test`;
}

function warningsOf(options: CorsPreflightOptions, times = 1): string[] {
  const logs = captureLogs({ debug: false });
  try {
    for (let i = 0; i < times; i += 1) corsPreflight(options);
  } finally {
    logs.stop();
  }
  return logs.lines.map((line) => `${line.source}: ${line.text}`);
}

describe('corsPreflight warns once at start-up when credentials meet a broad allowlist', () => {
  it('warns for a wildcard pattern with credentials, naming the pattern and the fix, once per process', () => {
    const parent = freshParent();
    expect(warningsOf({ origins: [`https://*.${parent}`], credentials: true }, 3)).toEqual([
      `console.warn: [express-sso-kit] corsPreflight: credentials: true with the pattern "https://*.${parent}" lets every ` +
        `subdomain of ${parent} — one serving user content, a forgotten or taken-over one — read authenticated responses with ` +
        `the user's cookies. List the exact origins instead, e.g. origins: ["https://shop.${parent}", "https://admin.${parent}"].`,
    ]);
  });

  it('warns for a plain-http origin off loopback with credentials', () => {
    const origin = `http://shop.${freshParent()}`;
    expect(warningsOf({ origins: [origin], credentials: true })).toEqual([
      expect.stringContaining(`credentials: true with the plain-http origin "${origin}" lets anyone on the network path inject`),
    ]);
  });

  it('stays quiet for exact https origins, loopback development origins, and patterns without credentials', () => {
    const parent = freshParent();
    expect(
      warningsOf({
        origins: [
          `https://shop.${parent}`,
          'http://localhost:5173',
          'http://127.0.0.1:8080',
          `http://shop.${parent.replace('.test', '.localhost')}`,
        ],
        credentials: true,
      }),
    ).toEqual([]);
    expect(warningsOf({ origins: [`https://*.${parent}`] })).toEqual([]);
    expect(warningsOf({ origins: '*' })).toEqual([]);
  });
});
