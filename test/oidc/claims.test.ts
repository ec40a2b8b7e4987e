import { defaultClaimsToUser } from '../../lib/oidc';

describe('defaultClaimsToUser', () => {
  it('maps sub, name and roles', () => {
    expect(defaultClaimsToUser({ sub: 'u1', name: 'Ada', roles: ['admin'] })).toEqual({ name: 'Ada', roles: ['admin'] });
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

  it('grants no role from a malformed roles claim', () => {
    expect(defaultClaimsToUser({ sub: 'u1', roles: 'admin' }).roles).toEqual([]);
    expect(defaultClaimsToUser({ sub: 'u1', roles: ['admin', 1] }).roles).toEqual([]);
  });

  it('copies the roles array instead of sharing it', () => {
    const roles = ['admin'];
    const user = defaultClaimsToUser({ sub: 'u1', roles });
    user.roles.push('x');
    expect(roles).toEqual(['admin']);
  });
});
