import {
  compileAccessPolicy,
  compileRules,
  decideAccess,
  defaultRule,
  isPlainPath,
  pathReadings,
  type RoutingSettings,
} from '../../lib/access';
import { createPolicy } from '../../lib/rbac';

const ROUTER_DEFAULTS: RoutingSettings = { caseSensitive: false, strict: false };

describe('compileRules and decideAccess', () => {
  const rules = compileRules('test', [
    { domain: '*.example.test', path: '/admin', policy: 'two_factor' },
    { domain: 'shop.example.test', path: [/^\/$/, '/cart/'], methods: ['get', 'POST'], policy: 'one_factor' },
    { domain: 'SHOP.example.test', policy: 'deny' },
  ]);
  const compiled = compileAccessPolicy(rules, defaultRule('deny'));
  const decide = (host: string, path: string, method = 'GET', routing = ROUTER_DEFAULTS) =>
    decideAccess(compiled, { host, path, method, routing, roles: undefined }).rule?.index;

  it('matches subdomains of a *. pattern, never the bare domain or a lookalike', () => {
    expect(decide('a.example.test', '/admin')).toBe(0);
    expect(decide('a.b.example.test', '/admin/x')).toBe(0);
    expect(decide('example.test', '/admin')).toBe(-1);
    expect(decide('evilexample.test', '/admin')).toBe(-1);
  });

  it('matches paths on segment boundaries, RegExps as given, and methods in any case', () => {
    expect(decide('shop.example.test', '/administrator')).toBe(2);
    expect(decide('shop.example.test', '/')).toBe(1);
    expect(decide('shop.example.test', '/cart')).toBe(1);
    expect(decide('shop.example.test', '/cart/items', 'POST')).toBe(1);
    expect(decide('shop.example.test', '/cart', 'DELETE')).toBe(2);
    expect(decide('shop.example.test', '/other')).toBe(2);
  });

  it('falls back to the default rule (index -1) when nothing matches', () => {
    expect(decide('api.other.test', '/')).toBe(-1);
  });

  it('follows the router’s case rule: any case unless case-sensitive routing is on', () => {
    expect(decide('a.example.test', '/ADMIN/x')).toBe(0);
    expect(decide('a.example.test', '/ADMIN/x', 'GET', { caseSensitive: true, strict: false })).toBe(-1);
    // A RegExp gets the router's i flag too.
    const regExps = compileAccessPolicy(compileRules('test', [{ path: /^\/reports$/, policy: 'deny' }]), defaultRule('bypass'));
    const decideRegExp = (path: string, routing: RoutingSettings) =>
      decideAccess(regExps, { host: 'x.test', path, method: 'GET', routing, roles: undefined }).rule?.index;
    expect(decideRegExp('/Reports', ROUTER_DEFAULTS)).toBe(0);
    expect(decideRegExp('/Reports', { caseSensitive: true, strict: false })).toBe(-1);
    // Without strict routing /reports/ is the same route as /reports.
    expect(decideRegExp('/reports/', ROUTER_DEFAULTS)).toBe(0);
    expect(decideRegExp('/reports/', { caseSensitive: false, strict: true })).toBe(-1);
  });

  it('lets HEAD meet the rules of GET', () => {
    expect(decide('shop.example.test', '/cart', 'HEAD')).toBe(1);
  });

  it('refuses a path whose decoded reading meets another rule, and one that does not decode', () => {
    const outcome = (path: string) =>
      decideAccess(compiled, { host: 'shop.example.test', path, method: 'GET', routing: ROUTER_DEFAULTS, roles: undefined });
    expect(outcome('/c%61rt')).toMatchObject({ outcome: 'refuse', reason: 'ambiguous-path' });
    expect(outcome('/x/../cart')).toMatchObject({ outcome: 'refuse', reason: 'ambiguous-path' });
    expect(outcome('//cart')).toMatchObject({ outcome: 'refuse', reason: 'ambiguous-path' });
    expect(outcome('/%E0%A4%A')).toMatchObject({ outcome: 'refuse', reason: 'malformed-path' });
    // Decoded or not, the same rule: nothing to refuse.
    expect(outcome('/other/%61')).toMatchObject({ outcome: 'deny', reason: 'deny-rule' });
  });

  it('refuses a request without a usable host when a rule names hosts', () => {
    expect(decideAccess(compiled, { host: undefined, path: '/', method: 'GET', routing: ROUTER_DEFAULTS, roles: undefined })).toMatchObject(
      {
        outcome: 'refuse',
        reason: 'unusable-host',
      },
    );
  });

  it('denies a signed-in user who lacks the rule’s role or permission before asking for factors', () => {
    const policy = createPolicy({ roles: { admin: { permissions: ['read:reports'] } } });
    const guarded = compileAccessPolicy(
      compileRules('test', [
        { path: '/audit', policy: 'two_factor', roles: ['auditor', 'admin'] },
        { policy: 'two_factor', permission: 'read:reports' },
      ]),
      defaultRule('deny'),
      policy,
    );
    const as = (path: string, roles: readonly string[] | undefined) =>
      decideAccess(guarded, { host: 'admin.test', path, method: 'GET', routing: ROUTER_DEFAULTS, roles });
    expect(as('/audit', [])).toMatchObject({ outcome: 'deny', reason: 'missing-role' });
    expect(as('/', ['auditor'])).toMatchObject({ outcome: 'deny', reason: 'missing-permission' });
    expect(as('/', ['admin'])).toMatchObject({ outcome: 'authenticate', requirement: { policy: 'two_factor' } });
    // Nobody signed in: the login comes first, the roles are checked once there is a user.
    expect(as('/', undefined)).toMatchObject({ outcome: 'authenticate' });
  });
});

describe('pathReadings', () => {
  it('reads a plain path once and a decodable one both ways', () => {
    expect(pathReadings('/sessions/revocations')).toEqual(['/sessions/revocations']);
    expect(pathReadings('/.well-known/openid-configuration')).toEqual(['/.well-known/openid-configuration']);
    expect(pathReadings('/a/%2e%2e/b')).toEqual(['/a/%2e%2e/b', '/b']);
    expect(pathReadings('/a%2Fb')).toEqual(['/a%2Fb', '/a/b']);
    expect(pathReadings('/a\\b')).toEqual(['/a\\b', '/a/b']);
    expect(pathReadings('/a//b/./c/..')).toEqual(['/a//b/./c/..', '/a/b/']);
    expect(pathReadings('/a%20b')).toEqual(['/a%20b', '/a b']);
    expect(pathReadings('/%zz')).toBe('malformed-path');
  });

  it('accepts as rule paths only what reads the same raw and decoded', () => {
    expect(isPlainPath('/sessions/revocations')).toBe(true);
    expect(isPlainPath('/a;b=c/@x')).toBe(true);
    for (const path of ['/a%20b', '/a//b', '/a/../b', '/a/./b', '/a b', '/é', 'a']) expect(isPlainPath(path)).toBe(false);
  });
});
