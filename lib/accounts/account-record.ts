import { randomUUID } from 'node:crypto';
import { UnprocessableEntityError, type FieldError } from '../http/errors';
import { parsePasswordHash, verifyPasswordHash, type ParsedPasswordHash } from '../util/password-hash';
import { normalizeUsername, verifyAgainstDecoy } from './user-directory';
import type { Account, AccountSearch, NewAccount, WritableUserDirectory } from './writable-user-directory';

/** An account as the adapters store it: the {@link Account} fields plus the hash. */
export interface StoredAccount extends Omit<Account, 'hasPassword'> {
  passwordHash?: string;
}

const MAX_NAME = 256;
const MAX_EMAIL = 254;
const ID = /^[\x21-\x7e]{1,128}$/;
// One "@", something on each side, no spaces or controls: enough to refuse a typo; the mail proves the rest.
const EMAIL = /^[^\s@\p{Cc}]+@[^\s@\p{Cc}]+\.[^\s@\p{Cc}]+$/u;
const CONTROL = /\p{Cc}/u;
/** The default and largest page of {@link AccountSearch}. */
const DEFAULT_LIMIT = 50;
const MAX_LIMIT = 500;

/**
 * The key an email address is unique under: trimmed, NFKC, lower-case. (Strictly the part before "@" is case
 * sensitive; no mail provider in use treats it so, and two accounts differing only in case would be a trap.)
 *
 * @example
 * normalizeEmail(' Alice@Example.COM '); // 'alice@example.com'
 */
export function normalizeEmail(email: string): string {
  return email.normalize('NFKC').trim().toLowerCase();
}

function refuse(where: string, errors: FieldError[]): never {
  throw new UnprocessableEntityError(errors, { detail: `${where}: ${errors.map((e) => `${e.field} ${e.message}`).join('; ')}` });
}

function textProblem(value: unknown, max: number): string | undefined {
  if (typeof value !== 'string' || value.trim() === '') return 'must be a non-empty string';
  if ([...value].length > max) return `must be at most ${max} characters`;
  if (CONTROL.test(value)) return 'must not contain control characters';
  return undefined;
}

/** The address to store (trimmed), or a 422 naming the problem. */
export function checkEmail(email: unknown, where: string): string {
  if (typeof email !== 'string' || email.trim().length > MAX_EMAIL || !EMAIL.test(email.trim())) {
    refuse(where, [{ field: 'email', message: 'must be an email address like name@example.com' }]);
  }
  return email.trim();
}

/** A password hash the directory can verify later, or a 422 (nothing is stored that would lock the user out). */
export function checkPasswordHash(passwordHash: unknown, where: string): string {
  try {
    parsePasswordHash(passwordHash as string);
  } catch (error) {
    refuse(where, [{ field: 'passwordHash', message: `must be made by hashPassword(): ${(error as Error).message}` }]);
  }
  return passwordHash as string;
}

/** Validates a {@link NewAccount} and builds the record to store, or throws a 422 listing every field at fault. */
export function newStoredAccount(input: NewAccount, now: number, where: string): StoredAccount {
  const given = (input ?? {}) as Partial<NewAccount>;
  const errors: FieldError[] = [];
  if (given.id !== undefined && (typeof given.id !== 'string' || !ID.test(given.id))) {
    errors.push({ field: 'id', message: 'must be 1 to 128 printable ASCII characters without spaces' });
  }
  const usernameProblem = textProblem(given.username, MAX_NAME);
  if (usernameProblem) errors.push({ field: 'username', message: usernameProblem });
  const nameProblem = textProblem(given.name, MAX_NAME);
  if (nameProblem) errors.push({ field: 'name', message: nameProblem });
  if (given.roles !== undefined && (!Array.isArray(given.roles) || !given.roles.every((role) => typeof role === 'string'))) {
    errors.push({ field: 'roles', message: 'must be an array of strings' });
  }
  if (
    given.attributes !== undefined &&
    (typeof given.attributes !== 'object' || given.attributes === null || Array.isArray(given.attributes))
  ) {
    errors.push({ field: 'attributes', message: 'must be an object of strings, numbers, booleans or nulls' });
  }
  for (const flag of ['emailVerified', 'disabled'] as const) {
    if (given[flag] !== undefined && typeof given[flag] !== 'boolean') errors.push({ field: flag, message: 'must be true or false' });
  }
  if (errors.length > 0) refuse(where, errors);
  const email = given.email === undefined ? undefined : checkEmail(given.email, where);
  const passwordHash = given.passwordHash === undefined ? undefined : checkPasswordHash(given.passwordHash, where);
  return {
    id: given.id ?? randomUUID(),
    username: (given.username as string).trim(),
    name: (given.name as string).trim(),
    roles: [...(given.roles ?? [])],
    ...(given.attributes ? { attributes: { ...given.attributes } } : {}),
    ...(email === undefined ? {} : { email }),
    emailVerified: email !== undefined && given.emailVerified === true,
    disabled: given.disabled === true,
    ...(passwordHash === undefined ? {} : { passwordHash }),
    credentialVersion: 1,
    createdAt: now,
    changedAt: now,
  };
}

/** What callers see of a stored account: no hash, copies of the arrays and maps. */
export function accountOf(stored: StoredAccount): Account {
  const { passwordHash, ...rest } = stored;
  return {
    ...rest,
    roles: [...stored.roles],
    ...(stored.attributes ? { attributes: { ...stored.attributes } } : {}),
    hasPassword: passwordHash !== undefined,
  };
}

/** True when a write conditional on `expected` (see `ifCredentialVersion`) may go ahead on `stored`. */
export function versionMatches(stored: StoredAccount, expected: number | undefined): boolean {
  return expected === undefined || stored.credentialVersion === expected;
}

/** The account with a new password hash: one more credential version, the time recorded. */
export function withPasswordHash(stored: StoredAccount, passwordHash: string, now: number): StoredAccount {
  return { ...stored, passwordHash, credentialVersion: stored.credentialVersion + 1, changedAt: now, passwordChangedAt: now };
}

/** The account with another (or no) address; only a new address bumps the credential version. */
export function withEmail(stored: StoredAccount, email: string | null, verified: boolean, now: number): StoredAccount {
  const { email: _previous, ...rest } = stored;
  const changed =
    (email === null ? undefined : normalizeEmail(email)) !== (stored.email === undefined ? undefined : normalizeEmail(stored.email));
  return {
    ...rest,
    ...(email === null ? {} : { email }),
    emailVerified: email !== null && verified,
    credentialVersion: stored.credentialVersion + (changed ? 1 : 0),
    changedAt: now,
  };
}

/** The account disabled or enabled; a change bumps the credential version, setting the same state changes nothing. */
export function withDisabled(stored: StoredAccount, disabled: boolean, now: number): StoredAccount {
  if (stored.disabled === disabled) return stored;
  return { ...stored, disabled, credentialVersion: stored.credentialVersion + 1, changedAt: now };
}

/** The checked paging and search of an {@link AccountSearch}, the search text folded like the keys it is compared with. */
export function checkAccountSearch(query: AccountSearch | undefined, where: string): { search: string; offset: number; limit: number } {
  const given = (query ?? {}) as Partial<AccountSearch>;
  const errors: FieldError[] = [];
  if (given.search !== undefined && (typeof given.search !== 'string' || given.search.length > MAX_NAME || CONTROL.test(given.search))) {
    errors.push({ field: 'search', message: `must be text of at most ${MAX_NAME} characters` });
  }
  if (given.offset !== undefined && (!Number.isInteger(given.offset) || given.offset < 0)) {
    errors.push({ field: 'offset', message: 'must be a whole number from 0' });
  }
  if (given.limit !== undefined && (!Number.isInteger(given.limit) || given.limit < 1 || given.limit > MAX_LIMIT)) {
    errors.push({ field: 'limit', message: `must be a whole number from 1 to ${MAX_LIMIT}` });
  }
  if (errors.length > 0) refuse(where, errors);
  return { search: normalizeUsername(given.search ?? ''), offset: given.offset ?? 0, limit: given.limit ?? DEFAULT_LIMIT };
}

/** True when the folded search text is in the account's username, name or address. */
export function matchesSearch(account: StoredAccount, search: string): boolean {
  if (search === '') return true;
  return [account.username, account.name, account.email ?? ''].some((text) => normalizeUsername(text).includes(search));
}

/** Username order, the id breaking ties (two usernames may fold alike only in the past, but the order must be total). */
export function byUsername(a: StoredAccount, b: StoredAccount): number {
  const left = normalizeUsername(a.username);
  const right = normalizeUsername(b.username);
  return left < right ? -1 : left > right ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

/** How an adapter reads one stored account; each answers null when there is none. */
export interface AccountLookup {
  byId(id: string): Promise<StoredAccount | null>;
  /** Given the username as typed; the adapter folds it. */
  byUsername(username: string): Promise<StoredAccount | null>;
  /** Given the address as typed; the adapter folds it. */
  byEmail(email: string): Promise<StoredAccount | null>;
}

const given = (text: unknown): text is string => typeof text === 'string' && text.trim() !== '';

/**
 * The reading half of a {@link WritableUserDirectory} over an adapter's lookups: the same answers, and the same scrypt
 * work for an unknown username, a disabled account and an account without a password, whatever the backend. The
 * decoy hash an unknown username is checked against takes the scrypt parameters of the last hash this directory read,
 * so it costs what a known username costs even when the records use other parameters than the defaults (until the
 * first read of a hash, the defaults).
 */
export function accountFinders(
  lookup: AccountLookup,
): Pick<WritableUserDirectory, 'verifyPassword' | 'findById' | 'findByUsername' | 'findByEmail'> {
  let template: ParsedPasswordHash | null = null;
  /** The account's parsed hash (null without one, or when it does not parse), remembered as the decoy's template. */
  const hashOf = (stored: StoredAccount | null): ParsedPasswordHash | null => {
    if (stored?.passwordHash === undefined) return null;
    try {
      template = parsePasswordHash(stored.passwordHash);
      return template;
    } catch {
      return null;
    }
  };
  const view = (stored: StoredAccount | null) => {
    hashOf(stored);
    return stored ? accountOf(stored) : null;
  };
  return {
    async verifyPassword(username: string, password: string): Promise<Account | null> {
      const stored = given(username) ? await lookup.byUsername(username) : null;
      const hash = hashOf(stored);
      if (!stored || !hash) return verifyAgainstDecoy(password, template).then(() => null);
      const ok = await verifyPasswordHash(String(password), hash);
      return ok && !stored.disabled ? accountOf(stored) : null;
    },
    findById: async (id: string) => view(typeof id === 'string' ? await lookup.byId(id) : null),
    findByUsername: async (username: string) => view(given(username) ? await lookup.byUsername(username) : null),
    findByEmail: async (email: string) => view(given(email) ? await lookup.byEmail(email) : null),
  };
}
