import fc from 'fast-check';
import { hasDuplicateMembers, parseJsonObject } from '../../lib/tokens/strict-json';

describe('parseJsonObject', () => {
  it.each([
    ['a repeated top-level member', '{"sub":"alice","sub":"admin"}'],
    ['a repeated member in a nested object', '{"a":{"x":1,"x":2}}'],
    ['a repeated member in an object inside an array', '{"a":[{"x":1},{"y":1,"y":2}]}'],
    ['a repeat spelled with a unicode escape', '{"sub":"a","s\\u0075b":"b"}'],
    ['a repeat with whitespace around', '{ "alg" : "RS256" , "alg" : "none" }'],
  ])('refuses %s', (_name, text) => {
    expect(parseJsonObject(text)).toEqual({ error: 'duplicate_member' });
  });

  it.each([
    ['the same name in sibling objects', '{"a":{"x":1},"b":{"x":2}}'],
    ['a value equal to a member name', '{"sub":"sub","x":["sub","sub"]}'],
    ['escaped quotes inside strings', '{"a":"he said \\"a\\":1","b":"\\\\"}'],
  ])('accepts %s', (_name, text) => {
    expect(parseJsonObject(text)).toEqual({ value: JSON.parse(text) });
  });

  it.each(['[1,2]', '"text"', 'null', '42', '{bad json}', ''])('refuses %j as not an object', (text) => {
    expect(parseJsonObject(text)).toEqual({ error: 'malformed' });
  });

  it('agrees with JSON.stringify output, which never repeats members', () => {
    fc.assert(
      fc.property(fc.object({ maxDepth: 3 }), (value) => {
        expect(hasDuplicateMembers(JSON.stringify(value))).toBe(false);
      }),
      { numRuns: 300 },
    );
  });

  it('finds a member appended a second time to any object', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), { minKeys: 1 }), (value) => {
        const text = JSON.stringify(value);
        const [name] = Object.keys(value);
        expect(hasDuplicateMembers(`${text.slice(0, -1)},${JSON.stringify(name)}:0}`)).toBe(true);
      }),
      { numRuns: 300 },
    );
  });
});
