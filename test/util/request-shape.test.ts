import { setFlagsFromString } from 'node:v8';
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
import { prepareForProperties, preparingMiddleware } from '../../lib/util/request-shape';
import { ssoOptions } from '../helpers/sso-apps';

// V8's own answer to "are this object's properties still a shared layout?", through the runtime function tests of
// V8 itself use. The flag only lets code compiled after it call such functions.
setFlagsFromString('--allow-natives-syntax');
const hasFastProperties = new Function('object', 'return %HasFastProperties(object)') as (object: object) => boolean;

interface Shapes {
  request: boolean;
  response: boolean;
}

/** A middleware (or error handler) recording whether the request and response still have fast properties. */
function probe(seen: Shapes[]): { next: RequestHandler; error: ErrorRequestHandler } {
  const record = (req: object, res: object) => seen.push({ request: hasFastProperties(req), response: hasFastProperties(res) });
  return {
    next: (req, res) => {
      record(req, res);
      res.status(204).end();
    },
    error: (_error, req, res, _next) => {
      record(req, res);
      res.status(204).end();
    },
  };
}

async function shapesAfter(mount: (app: Express) => void, path = '/probe'): Promise<Shapes[]> {
  const seen: Shapes[] = [];
  const app = express();
  mount(app);
  const { next, error } = probe(seen);
  app.use(next);
  app.use(error);
  await request(app).get(path).expect(204);
  return seen;
}

describe('prepareForProperties', () => {
  it('keeps req.res and res.req, their values and attributes, and the other properties', () => {
    const res: Record<string, unknown> = { statusCode: 200 };
    const req: Record<string, unknown> = { url: '/', res };
    res.req = req;
    const before = { req: Object.getOwnPropertyDescriptors(req), res: Object.getOwnPropertyDescriptors(res) };
    prepareForProperties(req, res);
    expect(Object.getOwnPropertyDescriptors(req)).toEqual(before.req);
    expect(Object.getOwnPropertyDescriptors(res)).toEqual(before.res);
    expect(req.res).toBe(res);
    expect(res.req).toBe(req);
  });

  it('leaves alone objects without those properties, or with them read-only or inherited', () => {
    const bare = {};
    const readOnly = Object.defineProperty({}, 'res', { value: 1, enumerable: true, configurable: true, writable: false });
    const inherited = Object.create({ req: 1 }) as object;
    prepareForProperties(bare, inherited);
    prepareForProperties(readOnly, {});
    expect(Object.getOwnPropertyNames(bare)).toEqual([]);
    expect(Object.getOwnPropertyNames(inherited)).toEqual([]);
    expect(Object.getOwnPropertyDescriptor(readOnly, 'res')).toEqual({ value: 1, enumerable: true, configurable: true, writable: false });
  });

  it('turns an Express request and response into dictionaries (V8 says so), where bare Express leaves them shared', async () => {
    expect(hasFastProperties({ plain: 1 })).toBe(true);
    expect(await shapesAfter(() => undefined)).toEqual([{ request: true, response: true }]);
    expect(await shapesAfter((app) => app.use(preparingMiddleware))).toEqual([{ request: false, response: false }]);
  });
});

describe('the kit prepares requests before adding its properties', () => {
  const store = new MemoryStore();
  afterAll(() => store.close());

  it('ssoSession', async () => {
    const sessions = ssoSession(ssoOptions({ store }));
    expect(await shapesAfter((app) => app.use(sessions))).toEqual([{ request: false, response: false }]);
  });

  it('requireBearer, also when it refuses', async () => {
    const keys = KeySet.generate('ES256');
    const bearer = requireBearer({ keys, algorithms: ['ES256'], issuer: 'https://idp.example.test', audience: 'api' });
    expect(await shapesAfter((app) => app.use(bearer))).toEqual([{ request: false, response: false }]);
  });

  it('qrLoginProvider, for every request that reaches its router', async () => {
    const tokens = qrTokenIssuer(new TokenService({ keys: KeySet.generate('ES256'), issuer: 'https://idp.example.test', store }));
    const provider = qrLoginProvider({
      store,
      apps: [
        { appid: 'shop', secretHash: hashAppSecret(generateAppSecret()), name: 'Shop', redirectUris: ['https://shop.example.test/cb'] },
      ],
      users: { findById: async () => null },
      tokens,
    });
    expect(await shapesAfter((app) => app.use(provider))).toEqual([{ request: false, response: false }]);
  });
});
