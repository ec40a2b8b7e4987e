// Run by test/util/request-shape.test.ts in a child process started with --allow-natives-syntax, so V8's own
// verdict on an object's properties can be asked without changing the flags of a shared test worker. Prints one
// JSON line: the Express major it ran on and, per case, whether the request and response reaching the route still
// had fast (shared-layout) properties.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import express, { type ErrorRequestHandler, type Express, type RequestHandler } from 'express';
import request from 'supertest';
import {
  generateAppSecret,
  hashAppSecret,
  KeySet,
  MemoryStore,
  qrLoginProvider,
  qrTokenIssuer,
  requireBearer,
  ssoSession,
  TokenService,
} from '../../lib';
import { preparingMiddleware } from '../../lib/util/request-shape';
import { ssoOptions } from '../helpers/sso-apps';

const hasFastProperties = new Function('object', 'return %HasFastProperties(object)') as (object: object) => boolean;

interface Shapes {
  request: boolean;
  response: boolean;
}

async function shapesAfter(mount: (app: Express) => void, path = '/probe'): Promise<Shapes[]> {
  const seen: Shapes[] = [];
  const record = (req: object, res: { status(code: number): { end(): void } }) => {
    seen.push({ request: hasFastProperties(req), response: hasFastProperties(res) });
    res.status(204).end();
  };
  const route: RequestHandler = (req, res) => record(req, res);
  const failure: ErrorRequestHandler = (_error, req, res, _next) => record(req, res);
  const app = express();
  mount(app);
  app.use(route);
  app.use(failure);
  await request(app).get(path).expect(204);
  return seen;
}

async function main(): Promise<void> {
  const store = new MemoryStore();
  const keys = KeySet.generate('ES256');
  const tokens = qrTokenIssuer(new TokenService({ keys, issuer: 'https://idp.example.test', store }));
  const apps = [
    { appid: 'shop', secretHash: hashAppSecret(generateAppSecret()), name: 'Shop', redirectUris: ['https://shop.example.test/cb'] },
  ];
  const provider = (app: Express) => app.use(qrLoginProvider({ store, apps, users: { findById: async () => null }, tokens }));
  const cases: Record<string, (app: Express) => void> = {
    bare: () => undefined,
    preparingMiddleware: (app) => app.use(preparingMiddleware),
    ssoSession: (app) => app.use(ssoSession(ssoOptions({ store }))),
    requireBearer: (app) => app.use(requireBearer({ keys, algorithms: ['ES256'], issuer: 'https://idp.example.test', audience: 'api' })),
  };
  const shapes: Record<string, Shapes[]> = {};
  for (const [name, mount] of Object.entries(cases)) shapes[name] = await shapesAfter(mount);
  // A path of the provider's that none of its routes answers reaches the app's next handler; one outside its paths too.
  shapes.qrLoginProvider = await shapesAfter(provider, '/sns/qr-logins/probe/unrouted');
  shapes.qrLoginProviderElsewhere = await shapesAfter(provider);
  await store.close();
  // express's entry point is index.js at its package's root, next to the package.json that gives its version.
  const manifest = JSON.parse(readFileSync(join(dirname(require.resolve('express')), 'package.json'), 'utf8')) as { version: string };
  const expressMajor = Number(manifest.version.split('.')[0]);
  process.stdout.write(`${JSON.stringify({ plainObjectIsFast: hasFastProperties({ plain: 1 }), expressMajor, shapes })}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exitCode = 1;
});
