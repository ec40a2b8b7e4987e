import { defaultClaimsToUser, rolesFromClaims } from '../../lib/oidc';

describe('defaultClaimsToUser', () => {
  it('maps the name and grants no role, whatever the claims say', () => {
    expect(defaultClaimsToUser({ sub: 'u1', name: 'Ada', roles: ['admin'] })).toEqual({ name: 'Ada', roles: [] });
  });

  it('falls back to preferred_username, then email, then sub for the name', () => {
    expect(defaultClaimsToUser({ sub: 'u1', preferred_username: 'ada' }).name).toBe('ada');
    expect(defaultClaimsToUser({ sub: 'u1', email: 'ada@example.test' })).toMatchObject({
      name: 'ada@example.test',
      attributes: { email: 'ada@example.test' },
    });
    expect(defaultClaimsToUser({ sub: 'u1' }).name).toBe('u1');
  });

  it('prefers userinfo values but never its sub', () => {
    expect(defaultClaimsToUser({ sub: 'u1', name: 'Old' }, { sub: 'u2', name: 'New' })).toEqual({ name: 'New', roles: [] });
    expect(defaultClaimsToUser({ sub: 'u1' }, { sub: 'u2' }).name).toBe('u1');
  });

  it('returns no id: the identity is always (issuer, sub)', () => {
    expect(defaultClaimsToUser({ sub: 'u1', name: 'Ada', id: 'admin' }, { id: 'admin' })).not.toHaveProperty('id');
  });
});

describe('rolesFromClaims (a provider trusted for roles)', () => {
  it('reads a top-level claim', () => {
    expect(rolesFromClaims({ sub: 'u1', roles: ['admin', 'editor'] }, 'roles')).toEqual(['admin', 'editor']);
  });

  it('takes a claim name literally, so namespaced claims with dots work', () => {
    expect(rolesFromClaims({ sub: 'u1', 'https://example.test/roles': ['admin'] }, 'https://example.test/roles')).toEqual(['admin']);
  });

  it('follows a path into nested claims', () => {
    expect(rolesFromClaims({ sub: 'u1', realm_access: { roles: ['admin'] } }, ['realm_access', 'roles'])).toEqual(['admin']);
    expect(rolesFromClaims({ sub: 'u1', realm_access: ['roles'] }, ['realm_access', 'roles'])).toEqual([]);
    expect(rolesFromClaims({ sub: 'u1' }, ['realm_access', 'roles'])).toEqual([]);
  });

  it('accepts a single string as one role', () => {
    expect(rolesFromClaims({ sub: 'u1', role: 'admin' }, 'role')).toEqual(['admin']);
  });

  it('grants no role from a malformed claim', () => {
    expect(rolesFromClaims({ sub: 'u1', roles: ['admin', 1] }, 'roles')).toEqual([]);
    expect(rolesFromClaims({ sub: 'u1', roles: { admin: true } }, 'roles')).toEqual([]);
    expect(rolesFromClaims({ sub: 'u1', roles: '' }, 'roles')).toEqual([]);
  });

  it('does not read inherited properties as claims', () => {
    expect(rolesFromClaims({ sub: 'u1' }, ['constructor', 'name'])).toEqual([]);
  });

  it('prefers the userinfo answer, as the fuller source', () => {
    expect(rolesFromClaims({ sub: 'u1', roles: ['viewer'] }, 'roles', { sub: 'u1', roles: ['editor'] })).toEqual(['editor']);
  });

  it('copies the roles array instead of sharing it', () => {
    const roles = ['admin'];
    const copied = rolesFromClaims({ sub: 'u1', roles }, 'roles');
    copied.push('x');
    expect(roles).toEqual(['admin']);
  });
});
