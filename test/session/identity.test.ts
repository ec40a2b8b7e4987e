import { identityId, parseIdentityId, sameIdentity, sourceProblem } from '../../lib/session/identity';
import { OptionsError } from '../../lib/util/options';

describe('identityId', () => {
  it('names an identity <source>|<subject>', () => {
    expect(identityId({ source: 'oidc:https://idp.example.test', subject: '42' })).toBe('oidc:https://idp.example.test|42');
  });

  it('gives the same subject of two sources two ids', () => {
    const a = identityId({ source: 'oidc:https://a.example.test', subject: '42' });
    const b = identityId({ source: 'oidc:https://b.example.test', subject: '42' });
    expect(a).not.toBe(b);
  });

  it.each([
    ['a source without a kind', { source: 'staff', subject: 'u1' }],
    ['a source with "|"', { source: 'directory:a|b', subject: 'u1' }],
    ['a source with a space', { source: 'directory:a b', subject: 'u1' }],
    ['an empty subject', { source: 'directory:staff', subject: '' }],
    ['a subject over 512 characters', { source: 'directory:staff', subject: 'x'.repeat(513) }],
  ])('refuses %s with an OptionsError', (_case, identity) => {
    expect(() => identityId(identity)).toThrow(OptionsError);
  });
});

describe('parseIdentityId', () => {
  it('reads back the identity of an id, even when the subject holds "|"', () => {
    const identity = { source: 'qr:https://qr.example.test#shop', subject: 'a|b' };
    expect(parseIdentityId(identityId(identity))).toEqual(identity);
  });

  it.each(['alice', '|alice', 'staff|alice', 'directory:staff|'])('answers undefined for %j, which no identity names', (id) => {
    expect(parseIdentityId(id)).toBeUndefined();
  });
});

describe('sameIdentity', () => {
  it('compares source and subject, never the subject alone', () => {
    const alice = { source: 'directory:staff', subject: 'alice' };
    expect(sameIdentity(alice, { source: 'directory:staff', subject: 'alice' })).toBe(true);
    expect(sameIdentity(alice, { source: 'oidc:https://idp.example.test', subject: 'alice' })).toBe(false);
    expect(sameIdentity(alice, { source: 'directory:staff', subject: 'bob' })).toBe(false);
  });
});

describe('sourceProblem', () => {
  it('accepts the sources the kit builds', () => {
    for (const source of ['oidc:https://idp.example.test', 'qr:https://qr.example.test#wx123', 'directory:local', 'basic:credentials']) {
      expect(sourceProblem(source)).toBeUndefined();
    }
  });

  it('explains what a source must look like', () => {
    expect(sourceProblem(42)).toMatch(/must be "<kind>:<name>"/);
  });
});
