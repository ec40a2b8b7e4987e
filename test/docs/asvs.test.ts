import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';

// docs/asvs.md answers, for every requirement of the ASVS 5.0 chapters the kit touches, whether it holds and how
// that is known. This keeps the table honest: one row per requirement id (the ids, from the OWASP/ASVS 5.0 sources,
// are in asvs-5.0-ids.json), a status from a fixed set, and for MET a test that exists under the name cited.

const root = path.join(__dirname, '..', '..');
const chapters = JSON.parse(readFileSync(path.join(__dirname, 'asvs-5.0-ids.json'), 'utf8')) as Record<string, string[]>;
const STATUSES = ['MET', 'N/A', "APP'S PART", 'NOT MET'] as const;
type Status = (typeof STATUSES)[number];

interface Row {
  id: string;
  level: string;
  status: string;
  evidence: string;
  line: number;
}

// A citation: `test/area/file.test.ts` › "the name of the test, or a part of it".
const CITATION = /`(test\/[^`\s]+\.test\.ts)` › "([^"]+)"/g;

function tableRows(markdown: string): Row[] {
  const rows: Row[] = [];
  markdown.split('\n').forEach((text, index) => {
    const cells = /^\|\s*(\d+\.\d+\.\d+)\s*\|(.*)\|\s*$/.exec(text);
    if (!cells) return;
    const [level = '', , status = '', ...evidence] = (cells[2] ?? '').split('|').map((cell) => cell.trim());
    rows.push({ id: cells[1] ?? '', level, status, evidence: evidence.join('|'), line: index + 1 });
  });
  return rows;
}

function citations(evidence: string): Array<{ file: string; name: string }> {
  return [...evidence.matchAll(CITATION)].map((match) => ({ file: match[1] ?? '', name: match[2] ?? '' }));
}

describe('docs/asvs.md', () => {
  const rows = tableRows(readFileSync(path.join(root, 'docs', 'asvs.md'), 'utf8'));
  const ids = Object.values(chapters).flat();

  it('has one row for every requirement of the chapters, and none for an id ASVS 5.0 does not have', () => {
    expect(ids.length).toBe(139);
    const seen = rows.map((row) => row.id);
    expect(ids.filter((id) => !seen.includes(id))).toEqual([]);
    expect(seen.filter((id) => !ids.includes(id))).toEqual([]);
    expect(seen.filter((id, index) => seen.indexOf(id) !== index)).toEqual([]);
  });

  it('gives each row a level 1 to 3, a status of the four, and something in the evidence column', () => {
    const bad = rows.filter(
      (row) => !['1', '2', '3'].includes(row.level) || !STATUSES.includes(row.status as Status) || row.evidence === '',
    );
    expect(bad.map((row) => `line ${row.line}: ${row.id}`)).toEqual([]);
  });

  it('cites for every MET row a test, and in every row only test files that exist and test names they hold', () => {
    const problems: string[] = [];
    const files = new Map<string, string>();
    for (const row of rows) {
      const cited = citations(row.evidence);
      if (row.status === 'MET' && cited.length === 0) problems.push(`${row.id}: MET without a cited test`);
      for (const { file, name } of cited) {
        const full = path.join(root, file);
        if (!existsSync(full)) {
          problems.push(`${row.id}: ${file} does not exist`);
          continue;
        }
        if (!files.has(file)) files.set(file, readFileSync(full, 'utf8'));
        if (!files.get(file)!.includes(name)) problems.push(`${row.id}: ${file} has no test "${name}"`);
      }
    }
    expect(problems).toEqual([]);
  });

  it('counts the rows of each status per chapter as the Counts table says', () => {
    const markdown = readFileSync(path.join(root, 'docs', 'asvs.md'), 'utf8');
    const expected = Object.keys(chapters).map((chapter) => {
      const mine = rows.filter((row) => `V${row.id.split('.')[0]}` === chapter);
      const counts = STATUSES.map((status) => mine.filter((row) => row.status === status).length);
      return `| ${chapter} | ${counts.join(' | ')} | ${mine.length} |`;
    });
    const totals = STATUSES.map((status) => rows.filter((row) => row.status === status).length);
    expected.push(`| all | ${totals.join(' | ')} | ${rows.length} |`);
    const written = markdown.split('\n').filter((line) => /^\| (V\d+|all) \|/.test(line));
    expect(written).toEqual(expected);
  });

  it('finds citations the way the table writes them (the scan itself works)', () => {
    const [row] = tableRows('| 9.9.9 | 2 | x | MET | `test/a/b.test.ts` › "one name"; `test/c.test.ts` › "another" |');
    expect(row).toMatchObject({ id: '9.9.9', level: '2', status: 'MET' });
    expect(citations(row?.evidence ?? '')).toEqual([
      { file: 'test/a/b.test.ts', name: 'one name' },
      { file: 'test/c.test.ts', name: 'another' },
    ]);
  });
});
