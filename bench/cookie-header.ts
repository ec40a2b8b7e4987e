/**
 * Micro-benchmark of reading the session cookie from a Cookie header, the first thing every request pays for:
 * the kit's reader (RFC 6265 pairs, a second value of the name detected; the session engine uses the raw form and
 * decodes only values it has not verified before) against the reader it replaced (first match, decoded, no
 * duplicate check) and against `cookie.parse` (the whole header into an object, every value decoded).
 *
 *   npx tsx bench/cookie-header.ts
 */
import { parse } from 'cookie';
import { readCookie, readRawCookie } from '../lib/session/cookie-header';

const NAME = '__Secure-sso.sid';
const SESSION = `${NAME}=s%3A${'a'.repeat(32)}.${'b'.repeat(43)}`;
const OTHERS = '_ga=GA1.2.1234567890.1700000000; theme=dark; lang=en-GB; consent=analytics%3Dno%26ads%3Dno';

const HEADERS: ReadonlyArray<[string, string]> = [
  ['anonymous: four other cookies', OTHERS],
  ['session cookie alone', SESSION],
  ['session cookie after four others', `${OTHERS}; ${SESSION}`],
  ['session cookie sent twice, same value', `${SESSION}; ${OTHERS}; ${SESSION}`],
];

/** The reader before this change: the first `name=` after a `;` or space, no duplicate check. */
function firstMatch(header: string | undefined, prefix: string): string | undefined {
  if (header === undefined) return undefined;
  let index = header.indexOf(prefix);
  while (index !== -1) {
    const before = index === 0 ? 59 : header.charCodeAt(index - 1);
    if (before === 59 || before === 32) {
      const start = index + prefix.length;
      const end = header.indexOf(';', start);
      const raw = (end === -1 ? header.slice(start) : header.slice(start, end)).trim();
      if (raw.indexOf('%') === -1) return raw;
      try {
        return decodeURIComponent(raw);
      } catch {
        return undefined;
      }
    }
    index = header.indexOf(prefix, index + 1);
  }
  return undefined;
}

const READERS: ReadonlyArray<[string, (header: string) => unknown]> = [
  ['readRawCookie (kit, hot path)', (header) => readRawCookie(header, NAME)],
  ['readCookie (kit, decoded)', (header) => readCookie(header, NAME)],
  ['first match (before)', (header) => firstMatch(header, `${NAME}=`)],
  ['cookie.parse', (header) => parse(header)[NAME]],
];

function nanosecondsPerCall(read: (header: string) => unknown, header: string, calls: number): number {
  let sink = 0;
  const start = process.hrtime.bigint();
  for (let i = 0; i < calls; i += 1) {
    const value = read(header);
    if (value !== undefined) sink += 1;
  }
  const elapsed = Number(process.hrtime.bigint() - start);
  if (sink === -1) console.log(sink); // keeps the loop from being optimized away
  return elapsed / calls;
}

const CALLS = 1_000_000;
const ROUNDS = 5;
console.log(`node ${process.version}; ${CALLS.toLocaleString('en')} calls per round, best of ${ROUNDS} rounds (ns per call)\n`);
const columns = READERS.map(([name]) => name);
console.log(`| header | ${columns.join(' | ')} |`);
console.log(`|---|${columns.map(() => '---:').join('|')}|`);
for (const [label, header] of HEADERS) {
  const cells = READERS.map(([, read]) => {
    nanosecondsPerCall(read, header, CALLS / 10); // warm-up
    let best = Infinity;
    for (let round = 0; round < ROUNDS; round += 1) best = Math.min(best, nanosecondsPerCall(read, header, CALLS));
    return best.toFixed(0);
  });
  console.log(`| ${label} | ${cells.join(' | ')} |`);
}
