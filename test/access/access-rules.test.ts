import { compileRules, decideAccess } from '../../lib/access';

describe('compileRules and decideAccess', () => {
  const rules = compileRules('test', [
    { domain: '*.example.test', path: '/admin', policy: 'two_factor' },
    { domain: 'shop.example.test', path: [/^\/$/, '/cart/'], methods: ['get', 'POST'], policy: 'one_factor' },
    { domain: 'SHOP.example.test', policy: 'deny' },
  ]);
  const decide = (host: string, path: string, method = 'GET') => decideAccess(rules, host, path, method)?.index;

  it('matches subdomains of a *. pattern, never the bare domain or a lookalike', () => {
    expect(decide('a.example.test', '/admin')).toBe(0);
    expect(decide('a.b.example.test', '/admin/x')).toBe(0);
    expect(decide('example.test', '/admin')).toBeUndefined();
    expect(decide('evilexample.test', '/admin')).toBeUndefined();
  });

  it('matches paths on segment boundaries, RegExps as given, and methods in any case', () => {
    expect(decide('shop.example.test', '/administrator')).toBe(2);
    expect(decide('shop.example.test', '/')).toBe(1);
    expect(decide('shop.example.test', '/cart')).toBe(1);
    expect(decide('shop.example.test', '/cart/items', 'POST')).toBe(1);
    expect(decide('shop.example.test', '/cart', 'DELETE')).toBe(2);
    expect(decide('shop.example.test', '/other')).toBe(2);
  });

  it('returns undefined when nothing matches (the caller’s default decides)', () => {
    expect(decide('api.other.test', '/')).toBeUndefined();
  });
});
