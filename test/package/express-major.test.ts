import { readFileSync } from 'node:fs';
import path from 'node:path';
import express from 'express';
import request from 'supertest';

// `npm run test:jest` runs the suites on Express 5 (the devDependency); `npm run test:express4` runs the integration
// suites again with `express` resolved to Express 4. This test runs under both and fails if the configuration
// silently loads the other major, which would make the Express 4 run prove nothing.
const expectedMajor = Number(process.env.SSO_KIT_EXPECTED_EXPRESS_MAJOR ?? '5');

function packageVersionOf(entry: string): string {
  let dir = path.dirname(entry);
  // express's entry point is index.js at the package root; walk up until the package.json that names express.
  for (;;) {
    try {
      const manifest = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as { name?: string; version: string };
      if (manifest.name === 'express') return manifest.version;
    } catch {
      // No package.json at this level.
    }
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error(`no express package.json above ${entry}`);
    dir = parent;
  }
}

describe('the Express major the suites run on', () => {
  it(`resolves express to major ${expectedMajor}`, () => {
    const version = packageVersionOf(require.resolve('express'));
    expect(Number(version.split('.')[0])).toBe(expectedMajor);
  });

  it('behaves as that major: req.host keeps the port only on Express 5', async () => {
    const app = express();
    app.get('/host', (req, res) => {
      res.json({ host: req.host });
    });
    const res = await request(app).get('/host').set('Host', 'app.example.test:8443');
    // Express 4's req.host is the deprecated alias of req.hostname and drops the port; Express 5 keeps it. The kit
    // reads the Host header itself for this reason.
    expect(res.body.host).toBe(expectedMajor === 4 ? 'app.example.test' : 'app.example.test:8443');
  });
});
