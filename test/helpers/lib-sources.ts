import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

/** The kit's source directory. */
export const LIB = path.join(__dirname, '..', '..', 'lib');

/**
 * Every `.ts` file under `dir` (default: lib/), for tests that hold the whole source to a rule.
 *
 * @example
 * const files = libSourceFiles(); // every .ts file under lib/
 */
export function libSourceFiles(dir = LIB): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return libSourceFiles(full);
    return entry.name.endsWith('.ts') ? [full] : [];
  });
}

/**
 * A source's text without its comment lines (TSDoc and `//` lines), so examples in comments do not count as code.
 *
 * @example
 * const code = codeOf(readFileSync(file, 'utf8'));
 */
export function codeOf(source: string): string {
  return source.replace(/^\s*(\*|\/\/|\/\*\*).*$/gm, '');
}

/**
 * The code of every lib/ source file, by path relative to lib/.
 *
 * @example
 * for (const [file, code] of libCode()) if (code.includes('req.host')) fail(file);
 */
export function libCode(): Map<string, string> {
  return new Map(libSourceFiles().map((file) => [path.relative(LIB, file), codeOf(readFileSync(file, 'utf8'))]));
}
