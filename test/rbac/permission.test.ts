import { formatPermission, isConcreteRequest, parsePermission } from '../../lib/rbac/permission';

describe('parsePermission', () => {
  it.each([
    ['read:reports', { action: 'read', resource: 'reports', kind: 'exact' }],
    ['read:reports:42', { action: 'read', resource: 'reports:42', kind: 'exact' }],
    ['read:reports:*', { action: 'read', resource: 'reports:', kind: 'prefix' }],
    ['*:reports', { action: '*', resource: 'reports', kind: 'exact' }],
    ['*:*', { action: '*', resource: '', kind: 'any' }],
    ['export:billing/invoices.v2', { action: 'export', resource: 'billing/invoices.v2', kind: 'exact' }],
  ])('parses %s', (text, parsed) => {
    expect(parsePermission(text)).toEqual(parsed);
  });

  it('splits at the first colon, so resources may have segments but actions may not', () => {
    expect(parsePermission({ action: 'read', resource: 'reports:*' })).toEqual({ action: 'read', resource: 'reports:', kind: 'prefix' });
    expect(() => parsePermission({ action: 'read:all', resource: 'reports' })).toThrow(TypeError);
  });

  it.each([
    ['read', /write "action:resource"/],
    [':reports', /write "action:resource"/],
    ['read:', /write "action:resource"/],
    ['read:reports:', /resource segments/],
    ['read:*:reports', /resource segments/],
    ['read:re*ports', /resource segments/],
    ['read:reports::42', /resource segments/],
    ['re ad:reports', /the action must be/],
    ['rea*:reports', /the action must be/],
  ])('rejects the malformed permission %s with a TypeError quoting it', (text, message) => {
    expect(() => parsePermission(text)).toThrow(TypeError);
    expect(() => parsePermission(text)).toThrow(message);
    expect(() => parsePermission(text)).toThrow(JSON.stringify(text));
  });

  it('rejects permission objects with unknown members or wrong types', () => {
    expect(() => parsePermission({ action: 'read', resource: 'reports', scope: 'x' } as never)).toThrow(/only "action" and "resource"/);
    expect(() => parsePermission({ action: 'read' } as never)).toThrow(/the resource must be/);
    expect(() => parsePermission(42 as never)).toThrow(/give a string/);
  });

  it('formats a parsed permission back to its canonical string', () => {
    for (const text of ['read:reports', 'read:reports:*', '*:*', '*:reports:42'])
      expect(formatPermission(parsePermission(text))).toBe(text);
  });
});

describe('isConcreteRequest', () => {
  it('accepts names and segmented resources', () => {
    expect(isConcreteRequest('read', 'reports:42:comments')).toBe(true);
  });

  it.each([
    ['*', 'reports'],
    ['read', '*'],
    ['read', 'reports:*'],
    ['read', 'reports:'],
    ['read', ''],
    ['read', 'reports 42'],
  ])('refuses the wildcard or malformed request (%s, %s)', (action, resource) => {
    expect(isConcreteRequest(action, resource)).toBe(false);
  });
});
