import { readFileSync } from 'node:fs';
import path from 'node:path';
import { SECURITY_EVENT_TYPES } from '../../lib';
import { EVENT_FIELDS } from '../../lib/events/security-event';

// docs/security-events.md is the inventory of what is recorded (ASVS 16.1.1): it must list every type with its
// outcome and exactly its reason codes, and only fields an event can carry.

const docs = readFileSync(path.join(__dirname, '..', '..', 'docs', 'security-events.md'), 'utf8');
const rows = new Map<string, string[]>();
for (const line of docs.split('\n').filter((candidate) => /^\| `[a-z_.]+` \| (success|failure) \|/.test(candidate))) {
  const cells = line.split(' | ').map((cell) => cell.replace(/^\| /, '').trim());
  rows.set(cells[0]!.replace(/`/g, ''), cells);
}
const codes = (cell: string | undefined) => [...(cell ?? '').matchAll(/`([^`]+)`/g)].map((match) => match[1]!);

describe('the documented vocabulary', () => {
  it('has a row for every type and no row for a type that does not exist', () => {
    expect([...rows.keys()].sort()).toEqual(Object.keys(SECURITY_EVENT_TYPES).sort());
  });

  it.each(Object.entries(SECURITY_EVENT_TYPES))('lists %s with its outcome and exactly its reason codes', (type, spec) => {
    const cells = rows.get(type)!;
    expect(cells[1]).toBe(spec.outcome);
    expect(codes(cells[2])).toEqual([...spec.reasons]);
  });

  it('names only fields an event can carry', () => {
    const named = [...rows.values()].flatMap((cells) => codes(cells[3]));
    expect(named.length).toBeGreaterThan(20);
    for (const field of named) expect(EVENT_FIELDS.has(field)).toBe(true);
  });
});
