import fc from 'fast-check';
import { createPolicy } from '../../lib/rbac/policy';

const policy = createPolicy({
  roles: {
    viewer: { permissions: ['read:reports', 'read:reports:*'] },
    author: { permissions: [{ action: 'write', resource: 'drafts:*' }] },
    editor: { permissions: ['write:reports:*', 'publish:reports:*'], inherits: ['viewer', 'author'] },
    auditor: { permissions: ['*:audit-log'] },
    billing: { permissions: ['read:invoices:*', 'export:invoices'] },
    admin: { permissions: ['*:*'] },
    // Inherits through editor, so it has viewer's and author's permissions too.
    chief: { permissions: ['delete:reports:*'], inherits: ['editor'] },
    nobody: { permissions: [] },
  },
});

describe('createPolicy: the permission matrix', () => {
  // roles × action × resource → allowed
  const matrix: Array<[string[], string, string, boolean]> = [
    [['viewer'], 'read', 'reports', true],
    [['viewer'], 'read', 'reports:42', true],
    [['viewer'], 'read', 'reports:42:comments', true],
    [['viewer'], 'write', 'reports:42', false],
    [['viewer'], 'read', 'reportsx', false],
    [['viewer'], 'read', 'invoices:1', false],
    [['author'], 'write', 'drafts:7', true],
    [['author'], 'write', 'drafts', false],
    [['author'], 'read', 'reports', false],
    [['editor'], 'write', 'reports:42', true],
    [['editor'], 'write', 'reports', false],
    [['editor'], 'read', 'reports:42', true],
    [['editor'], 'write', 'drafts:7', true],
    [['editor'], 'delete', 'reports:42', false],
    [['chief'], 'delete', 'reports:42', true],
    [['chief'], 'read', 'reports', true],
    [['chief'], 'write', 'drafts:1', true],
    [['auditor'], 'read', 'audit-log', true],
    [['auditor'], 'purge', 'audit-log', true],
    [['auditor'], 'read', 'audit-log:2026', false],
    [['billing'], 'export', 'invoices', true],
    [['billing'], 'export', 'invoices:3', false],
    [['billing'], 'read', 'invoices:3', true],
    [['admin'], 'delete', 'anything:at:all', true],
    [['admin'], 'read', 'reports', true],
    [['nobody'], 'read', 'reports', false],
    [[], 'read', 'reports', false],
    [['viewer', 'billing'], 'read', 'invoices:3', true],
    [['viewer', 'billing'], 'write', 'invoices:3', false],
    [['unknown-role'], 'read', 'reports', false],
    [['unknown-role', 'viewer'], 'read', 'reports', true],
  ];

  it.each(matrix)('roles %j may %s %s: %s', (roles, action, resource, allowed) => {
    expect(policy.can(roles, action, resource)).toBe(allowed);
    expect(policy.can({ roles }, action, resource)).toBe(allowed);
  });

  it('denies a request that itself contains a wildcard instead of matching it', () => {
    expect(policy.can(['viewer'], 'read', 'reports:*')).toBe(false);
    expect(policy.can(['viewer'], '*', 'reports')).toBe(false);
    expect(policy.can(['viewer'], 'read', '*')).toBe(false);
  });

  it('grants nothing to subjects without roles or with non-string roles', () => {
    expect(policy.can(undefined, 'read', 'reports')).toBe(false);
    expect(policy.can(null, 'read', 'reports')).toBe(false);
    expect(policy.can({}, 'read', 'reports')).toBe(false);
    expect(policy.can({ roles: [42, { name: 'admin' }] as never }, 'read', 'reports')).toBe(false);
  });

  it('does not treat Object.prototype names as roles', () => {
    for (const role of ['constructor', '__proto__', 'toString', 'hasOwnProperty'])
      expect(policy.can([role], 'read', 'reports')).toBe(false);
  });

  it('works as a detached function, as templates call it', () => {
    const { can } = policy;
    expect(can(['viewer'], 'read', 'reports')).toBe(true);
  });

  it('lists the effective permissions of roles, inherited ones included', () => {
    expect(policy.permissionsOf(['chief'])).toEqual([
      'delete:reports:*',
      'publish:reports:*',
      'read:reports',
      'read:reports:*',
      'write:drafts:*',
      'write:reports:*',
    ]);
    expect(policy.roles).toContain('chief');
  });

  it('is immutable and does not follow later changes to the caller options', () => {
    const roles = { viewer: { permissions: ['read:reports'] as string[] } };
    const local = createPolicy({ roles });
    roles.viewer.permissions.push('write:reports');
    expect(local.can(['viewer'], 'write', 'reports')).toBe(false);
    expect(Object.isFrozen(local)).toBe(true);
  });
});

describe('createPolicy: construction errors', () => {
  it('names both roles when an inherited role is not defined', () => {
    expect(() => createPolicy({ roles: { editor: { permissions: [], inherits: ['writer'] } } })).toThrow(
      new TypeError('createPolicy: role "editor" inherits "writer", which is not defined'),
    );
  });

  it('names the roles of an inheritance cycle', () => {
    expect(() =>
      createPolicy({
        roles: {
          a: { permissions: [], inherits: ['b'] },
          b: { permissions: [], inherits: ['c'] },
          c: { permissions: [], inherits: ['a'] },
        },
      }),
    ).toThrow(new TypeError('createPolicy: roles inherit in a cycle: "a" → "b" → "c" → "a"'));
  });

  it('rejects a role that inherits itself', () => {
    expect(() => createPolicy({ roles: { a: { permissions: [], inherits: ['a'] } } })).toThrow(/cycle: "a" → "a"/);
  });

  it('accepts diamonds, which are not cycles', () => {
    const diamond = createPolicy({
      roles: {
        base: { permissions: ['read:x'] },
        left: { permissions: [], inherits: ['base'] },
        right: { permissions: [], inherits: ['base'] },
        top: { permissions: [], inherits: ['left', 'right'] },
      },
    });
    expect(diamond.can(['top'], 'read', 'x')).toBe(true);
  });

  it('names the role and quotes a malformed permission', () => {
    expect(() => createPolicy({ roles: { viewer: { permissions: ['read'] } } })).toThrow(/role "viewer".*"read"/);
  });

  it('rejects unknown role options such as a misspelt inherits', () => {
    expect(() => createPolicy({ roles: { viewer: { permissions: [], inherit: ['x'] } as never } })).toThrow(
      /unknown option "inherit" \(did you mean "inherits"\?\)/,
    );
  });

  it('requires permissions and a roles object', () => {
    expect(() => createPolicy({ roles: { viewer: {} as never } })).toThrow(/role "viewer": permissions is required \(an array such as/);
    expect(() => createPolicy({} as never)).toThrow(
      'createPolicy: roles is required ({ <name>: { permissions: [...], inherits?: [...] } })',
    );
    expect(() => createPolicy({ roles: { viewer: { permissions: [], inherits: 'x' as never } } })).toThrow(/inherits must be an array/);
  });
});

describe('createPolicy: agrees with a naive reading of the grammar (property)', () => {
  // The oracle walks inheritance and matches permission strings directly, without any precomputation.
  function naiveCan(
    roles: Record<string, { permissions: string[]; inherits: string[] }>,
    held: string[],
    action: string,
    resource: string,
  ): boolean {
    const seen = new Set<string>();
    const stack = [...held];
    while (stack.length) {
      const role = stack.pop() as string;
      if (seen.has(role) || !Object.prototype.hasOwnProperty.call(roles, role)) continue;
      seen.add(role);
      const definition = roles[role]!;
      stack.push(...definition.inherits);
      for (const permission of definition.permissions) {
        const colon = permission.indexOf(':');
        const grantAction = permission.slice(0, colon);
        const grantResource = permission.slice(colon + 1);
        if (grantAction !== '*' && grantAction !== action) continue;
        if (grantResource === '*' || grantResource === resource) return true;
        if (grantResource.endsWith(':*') && resource.startsWith(grantResource.slice(0, -1)) && resource.length > grantResource.length - 1)
          return true;
      }
    }
    return false;
  }

  const segment = fc.constantFrom('a', 'b', 'r');
  const resource = fc.array(segment, { minLength: 1, maxLength: 3 }).map((parts) => parts.join(':'));
  const grantResource = fc.oneof(
    resource,
    resource.map((r) => `${r}:*`),
    fc.constant('*'),
  );
  const permission = fc.tuple(fc.constantFrom('read', 'write', '*'), grantResource).map(([a, r]) => `${a}:${r}`);
  const roleNames = ['r0', 'r1', 'r2', 'r3'];
  // Role i may only inherit roles with a higher index, so the generated graphs have no cycles.
  const roles = fc
    .tuple(
      ...roleNames.map((_, index) =>
        fc.record({ permissions: fc.array(permission, { maxLength: 3 }), inherits: fc.subarray(roleNames.slice(index + 1)) }),
      ),
    )
    .map((definitions) => Object.fromEntries(definitions.map((definition, index) => [roleNames[index]!, definition])));

  it('gives the same answer for random policies, roles and requests', () => {
    fc.assert(
      fc.property(
        roles,
        fc.subarray([...roleNames, 'unknown']),
        fc.constantFrom('read', 'write'),
        resource,
        (definitions, held, action, target) => {
          const policy = createPolicy({ roles: definitions });
          expect(policy.can(held, action, target)).toBe(naiveCan(definitions, held, action, target));
        },
      ),
      { numRuns: 3000 },
    );
  });
});
