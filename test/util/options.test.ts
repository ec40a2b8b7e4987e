import express from 'express';
import request from 'supertest';
import {
  checkOptions,
  closestOption,
  OptionsError,
  refuseInProduction,
  refuseMiddlewareUse,
  warnOnce,
  within,
  type OptionSchema,
} from '../../lib/util/options';
import { corsPreflight } from '../../lib/cors';
import { errorHandler, KeyValueRateLimitStore, methodNotAllowed, notFound, requireRepresentation, securityHeaders } from '../../lib/http';
import { createPolicy, requirePermission } from '../../lib/rbac';
import { createRedisConnection, MemoryStore, RedisStore } from '../../lib/store';
import { BatchedGet } from '../../lib/store/batched-get';
import { captureLogs } from '../helpers/log-capture';

const schema: OptionSchema = {
  issuer: { type: 'string', required: true, expected: 'the issuer URL, e.g. "https://idp.example.test"' },
  audience: { type: ['string', 'string[]'] },
  timeoutSeconds: { type: 'number', check: within(0.1, 60) },
  retries: { type: 'integer' },
  enabled: { type: 'boolean' },
  verify: { type: 'function' },
  maxAge: { type: 'integer', aliases: ['max-age', 'maxAgeMs'] },
  limits: {
    type: ['object', 'boolean'],
    members: { perMinute: { type: 'integer', required: true }, burst: { type: 'integer' } },
    memberRelations: { exclusive: [['perMinute', 'burst']] },
  },
  secret: { type: ['string', 'buffer'] },
  jwksUri: { type: 'string' },
};

function problemOf(options: unknown, relations = {}): string {
  try {
    checkOptions('exampleFactory', options, schema, relations);
  } catch (error) {
    expect(error).toBeInstanceOf(OptionsError);
    expect(error).toBeInstanceOf(TypeError);
    expect((error as OptionsError).code).toBe('invalid_options');
    return (error as Error).message;
  }
  return 'no problem';
}

describe('checkOptions', () => {
  it('accepts valid options and changes nothing in them', () => {
    const options = Object.freeze({ issuer: 'https://idp.example.test', audience: ['a', 'b'], timeoutSeconds: 0.5, limits: false });
    expect(problemOf(options)).toBe('no problem');
  });

  it('detects the factory mounted as a middleware', () => {
    const app = express();
    app.use((req, _res, next) => {
      try {
        checkOptions('exampleFactory', req, schema);
        next();
      } catch (error) {
        next(error);
      }
    });
    app.use((error: Error, _req: express.Request, res: express.Response, _next: express.NextFunction) => {
      res.status(500).send(error.message);
    });
    return request(app)
      .get('/')
      .expect(500, 'exampleFactory: it is a factory: write app.use(exampleFactory({ ... })), not app.use(exampleFactory)');
  });

  it('refuses options that are not an object', () => {
    expect(problemOf('https://idp.example.test')).toBe('exampleFactory: options must be an object, got "https://idp.example.test"');
    expect(problemOf(null)).toBe('exampleFactory: options must be an object, got null');
    expect(problemOf([])).toBe('exampleFactory: options must be an object, got an array');
  });

  it('names every unknown key, with the closest known one', () => {
    expect(problemOf({ issuer: 'x', audeince: 'a', colour: 'red' })).toBe(
      'exampleFactory: unknown options "audeince" (did you mean "audience"?), "colour"; known options are ' +
        'issuer, audience, timeoutSeconds, retries, enabled, verify, maxAge, limits, secret, jwksUri',
    );
  });

  it('suggests the renamed option for an old unit or lifetime word, and a declared alias', () => {
    expect(problemOf({ issuer: 'x', timeoutMs: 500 })).toMatch(
      /^exampleFactory: unknown option "timeoutMs" \(did you mean "timeoutSeconds"\?\)/,
    );
    expect(problemOf({ issuer: 'x', 'max-age': 5 })).toMatch(/unknown option "max-age" \(did you mean "maxAge"\?\)/);
    expect(closestOption('accessTokenTtlSeconds', ['accessTokenLifetimeSeconds', 'issuer'])).toBe('accessTokenLifetimeSeconds');
    expect(closestOption('qrValiditySeconds', ['qrLifetimeSeconds', 'codeLifetimeSeconds'])).toBe('qrLifetimeSeconds');
    expect(closestOption('sweepIntervalMs', ['sweepIntervalSeconds'])).toBe('sweepIntervalSeconds');
    expect(closestOption('ttlSeconds', ['lifetimeSeconds', 'store'])).toBe('lifetimeSeconds');
    expect(closestOption('AUDIENCE', ['audience'])).toBe('audience');
    expect(closestOption('colour', ['audience', 'issuer'])).toBeUndefined();
  });

  it('names a missing required option and what it expects', () => {
    expect(problemOf({})).toBe('exampleFactory: issuer is required (the issuer URL, e.g. "https://idp.example.test")');
  });

  it.each<[string, Record<string, unknown>, string]>([
    ['a string', { issuer: 42 }, 'issuer must be the issuer URL, e.g. "https://idp.example.test", got 42'],
    ['one of two types', { issuer: 'x', audience: 7 }, 'audience must be a string or an array of strings, got 7'],
    ['a finite number', { issuer: 'x', timeoutSeconds: Number.NaN }, 'timeoutSeconds must be a number, got NaN'],
    ['a whole number', { issuer: 'x', retries: 1.5 }, 'retries must be a whole number, got 1.5'],
    ['a boolean', { issuer: 'x', enabled: 'yes' }, 'enabled must be true or false, got "yes"'],
    ['a function', { issuer: 'x', verify: {} }, 'verify must be a function, got object'],
    ['a Buffer', { issuer: 'x', secret: 5 }, 'secret must be a string or a Buffer, got 5'],
  ])('names the option and the expected type when it is not %s', (_name, options, message) => {
    expect(problemOf(options)).toBe(`exampleFactory: ${message}`);
  });

  it('runs the further check of a value of the right type', () => {
    expect(problemOf({ issuer: 'x', timeoutSeconds: 90 })).toBe('exampleFactory: timeoutSeconds must be from 0.1 to 60, got 90');
    expect(problemOf({ issuer: 'x', timeoutSeconds: 0.25 })).toBe('no problem');
  });

  it('checks the members of an object-valued option by the same rules, named parent.member', () => {
    expect(problemOf({ issuer: 'x', limits: { perMinute: 5, brust: 2 } })).toBe(
      'exampleFactory: unknown option "limits.brust" (did you mean "limits.burst"?); known options are limits.perMinute, limits.burst',
    );
    expect(problemOf({ issuer: 'x', limits: {} })).toBe('exampleFactory: limits.perMinute is required');
    expect(problemOf({ issuer: 'x', limits: { perMinute: '5' } })).toBe('exampleFactory: limits.perMinute must be a whole number, got "5"');
    expect(problemOf({ issuer: 'x', limits: { perMinute: 5, burst: 1 } })).toBe(
      'exampleFactory: limits.perMinute and limits.burst cannot be used together; give only one of them',
    );
  });

  it('names both options of a contradiction, and asks for one of a required group', () => {
    const relations = { exclusive: [['secret', 'jwksUri']], exactlyOne: [['secret', 'jwksUri']] };
    expect(problemOf({ issuer: 'x', secret: 's', jwksUri: 'https://idp.example.test/jwks' }, relations)).toBe(
      'exampleFactory: secret and jwksUri cannot be used together; give only one of them',
    );
    expect(problemOf({ issuer: 'x' }, { exactlyOne: [['secret', 'jwksUri']] })).toBe('exampleFactory: give one of secret, jwksUri');
  });

  it('reports problems in a fixed order: unknown keys before missing ones before wrong types', () => {
    expect(problemOf({ audience: 5, colour: 'red' })).toMatch(/unknown option "colour"/);
    expect(problemOf({ audience: 5 })).toMatch(/issuer is required/);
  });
});

describe('refuseMiddlewareUse', () => {
  it('throws for a request-like first argument and says what to write', () => {
    const req = { method: 'GET', headers: {}, url: '/' };
    expect(() => refuseMiddlewareUse('requireThing', req, "app.use(requireThing('x'))")).toThrow(
      "requireThing: it is a factory: write app.use(requireThing('x')), not app.use(requireThing)",
    );
    expect(() => refuseMiddlewareUse('requireThing', 'read')).not.toThrow();
  });
});

describe('refuseInProduction', () => {
  const before = process.env.NODE_ENV;
  afterEach(() => {
    process.env.NODE_ENV = before;
  });

  it('refuses insecure development settings when NODE_ENV=production only', () => {
    process.env.NODE_ENV = 'production';
    expect(() => refuseInProduction('ssoSession')).toThrow(
      new OptionsError('ssoSession: allowInsecureLocalDevelopment is refused when NODE_ENV=production'),
    );
    process.env.NODE_ENV = 'development';
    expect(() => refuseInProduction('ssoSession')).not.toThrow();
  });
});

describe('warnOnce', () => {
  it('warns on console.warn once per key, prefixed with the kit name', () => {
    const logs = captureLogs({ debug: false });
    try {
      warnOnce('options-test:a', 'first warning');
      warnOnce('options-test:a', 'first warning again');
      warnOnce('options-test:b', 'second warning');
    } finally {
      logs.stop();
    }
    expect(logs.lines).toEqual([
      { source: 'console.warn', text: '[express-sso-kit] first warning' },
      { source: 'console.warn', text: '[express-sso-kit] second warning' },
    ]);
  });
});

describe('the factories of http, store, cors and rbac follow the options rule', () => {
  const policy = createPolicy({ roles: { viewer: { permissions: ['read:reports'] } } });
  const lazyClient = () => createRedisConnection({ url: 'redis://127.0.0.1:6379', redisOptions: { lazyConnect: true } });

  it.each<[string, () => unknown, string, string]>([
    ['errorHandler', () => errorHandler({ htlm: true } as never), 'htlm', 'html'],
    [
      'securityHeaders',
      () => securityHeaders({ contentSecurityPolicyy: false } as never),
      'contentSecurityPolicyy',
      'contentSecurityPolicy',
    ],
    [
      'corsPreflight',
      () => corsPreflight({ origins: ['https://shop.example.test'], credentails: true } as never),
      'credentails',
      'credentials',
    ],
    [
      'requirePermission',
      () => requirePermission('read', 'reports', { policy, rolesClaims: 'roles' } as never),
      'rolesClaims',
      'rolesClaim',
    ],
    ['createPolicy', () => createPolicy({ role: {} } as never), 'role', 'roles'],
    ['RedisStore', () => new RedisStore('redis://127.0.0.1:6379', { prefx: 'app:' } as never), 'prefx', 'prefix'],
    ['MemoryStore', () => new MemoryStore({ sweepIntervalMs: 1000 } as never), 'sweepIntervalMs', 'sweepIntervalSeconds'],
    [
      'createRedisConnection',
      () => createRedisConnection({ url: 'redis://127.0.0.1:6379', redisOption: {} } as never),
      'redisOption',
      'redisOptions',
    ],
    ['KeyValueRateLimitStore', () => new KeyValueRateLimitStore({ store: new MemoryStore(), prefx: 'rl:' } as never), 'prefx', 'prefix'],
    [
      'BatchedGet',
      () => {
        const client = lazyClient();
        try {
          return new BatchedGet(client, { maxBatches: 2 } as never);
        } finally {
          client.disconnect();
        }
      },
      'maxBatches',
      'maxBatch',
    ],
  ])('%s refuses a misspelled option and names the right one', (factory, build, wrong, right) => {
    let thrown: unknown;
    try {
      build();
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(OptionsError);
    expect((thrown as Error).message).toMatch(new RegExp(`^${factory}: unknown option "${wrong}" \\(did you mean "${right}"\\?\\)`));
  });

  it('methodNotAllowed and requireRepresentation refuse a missing list, and notFound its use as a middleware', () => {
    expect(() => methodNotAllowed('GET' as never)).toThrow(
      new OptionsError('methodNotAllowed: pass a non-empty array of names, e.g. methodNotAllowed(["GET", "POST"])'),
    );
    expect(() => methodNotAllowed(['GET', 'NOT A METHOD'])).toThrow('methodNotAllowed: "NOT A METHOD" is not an HTTP method name');
    expect(() => requireRepresentation([])).toThrow(OptionsError);
    const notFoundAsMiddleware = notFound as unknown as (req: unknown) => unknown;
    expect(() => notFoundAsMiddleware({ method: 'GET', headers: {}, url: '/' })).toThrow(
      'notFound: it is a factory: write app.use(notFound()), not app.use(notFound)',
    );
  });
});
