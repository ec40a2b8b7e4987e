import { DEFAULT_DIRECTORY_SOURCE, sourceProblem } from '../session/identity';
import { OptionsError, type OptionSpec } from '../util/options';
import { hashPassword, parsePasswordHash, verifyPasswordHash, type ParsedPasswordHash } from '../util/password-hash';

export { DEFAULT_DIRECTORY_SOURCE };

/** A user as a directory gives it to the portal: what goes into the session, never the password hash. */
export interface DirectoryUser {
  id: string;
  name: string;
  roles: string[];
  attributes?: Record<string, string | number | boolean | null>;
  /**
   * True for a disabled user, as `findById` reports it: sign-ins that check no password (passkeys) refuse them.
   * `verifyPassword` never returns a disabled user.
   */
  disabled?: boolean;
}

/**
 * Where the portal checks passwords. Implement it over your own user store (LDAP, a database); the kit ships
 * {@link fileUserDirectory} (read-only) and the writable {@link redisUserDirectory}, {@link memoryUserDirectory}
 * and {@link postgresUserDirectory}.
 */
export interface UserDirectory {
  /**
   * The identity source of this directory's users, `directory:<name>`; their user ids are `<source>|<id>`.
   * Default {@link DEFAULT_DIRECTORY_SOURCE}.
   */
  readonly source?: string;
  /**
   * The user when the password is right, else null. Must do the same work whether or not the user exists, and
   * must answer null for a disabled user, so the portal cannot be used to learn which accounts exist.
   */
  verifyPassword(username: string, password: string): Promise<DirectoryUser | null>;
  /** The user with this id (enabled or not is the caller's business), else null. */
  findById(id: string): Promise<DirectoryUser | null>;
}

/** One stored user: {@link DirectoryUser} plus the login name, the scrypt hash and an optional disabled flag. */
export interface UserRecord extends DirectoryUser {
  /** Login name; matched case-insensitively. */
  username: string;
  /** `scrypt$N$r$p$salt$hash`, made with {@link hashPassword}. */
  passwordHash: string;
  /** A disabled user cannot log in; the portal answers exactly as for a wrong password. */
  disabled?: boolean;
}

/**
 * Usernames are compared case-insensitively and after Unicode normalization, so `Alice` and `alice` are one account.
 *
 * @example
 * normalizeUsername(' Alice '); // 'alice'
 */
export function normalizeUsername(username: string): string {
  return username.normalize('NFKC').trim().toLowerCase();
}

/** Checks a {@link UserRecord} given in code or read from a file, naming the record and the field at fault. */
export function validateRecord(record: unknown, where: string): UserRecord {
  const r = record as Partial<UserRecord> | null;
  if (!r || typeof r !== 'object') throw new OptionsError(`${where}: each user record must be an object`);
  for (const field of ['id', 'username', 'name', 'passwordHash'] as const) {
    if (typeof r[field] !== 'string' || r[field].length === 0) {
      throw new OptionsError(`${where}: user record ${JSON.stringify(r.id ?? r.username ?? '?')} needs a non-empty string "${field}"`);
    }
  }
  if (!Array.isArray(r.roles) || !r.roles.every((role) => typeof role === 'string')) {
    throw new OptionsError(`${where}: user record "${String(r.id)}" needs "roles", an array of strings (may be empty)`);
  }
  if (r.disabled !== undefined && typeof r.disabled !== 'boolean') {
    throw new OptionsError(`${where}: user record "${String(r.id)}" has a non-boolean "disabled"`);
  }
  try {
    parsePasswordHash(r.passwordHash as string);
  } catch (error) {
    throw new OptionsError(`${where}: user record "${String(r.id)}" has a bad passwordHash: ${(error as Error).message}`, { cause: error });
  }
  return r as UserRecord;
}

/** The part of a record the portal may see: no hash, copies of the arrays and maps so no caller can change the record. */
export function toDirectoryUser(record: DirectoryUser): DirectoryUser {
  return {
    id: record.id,
    name: record.name,
    roles: [...record.roles],
    ...(record.attributes ? { attributes: { ...record.attributes } } : {}),
    ...(record.disabled === true ? { disabled: true } : {}),
  };
}

/**
 * A hash to verify against when the user does not exist (or has no password), so an unknown username costs the same
 * scrypt work as a known one. Built lazily once per parameter set and reused.
 */
const decoys = new Map<string, Promise<ParsedPasswordHash>>();
function decoyFor(template: Pick<ParsedPasswordHash, 'N' | 'r' | 'p' | 'hash'> | null): Promise<ParsedPasswordHash> {
  const key = template ? `${template.N}:${template.r}:${template.p}:${template.hash.length}` : 'default';
  let decoy = decoys.get(key);
  if (!decoy) {
    const params = template ? { N: template.N, r: template.r, p: template.p } : {};
    decoy = hashPassword(`decoy-${Math.random()}`, params).then(parsePasswordHash);
    decoys.set(key, decoy);
  }
  return decoy;
}

/**
 * Spends the work of one password check on a decoy hash and answers false: what a directory does for an unknown
 * username, a user without a password, or a hash it cannot read, so the answer time tells nothing.
 *
 * @example
 * if (!record) return (await verifyAgainstDecoy(password), null);
 */
export async function verifyAgainstDecoy(password: unknown, template: ParsedPasswordHash | null = null): Promise<false> {
  await verifyPasswordHash(String(password), await decoyFor(template));
  return false;
}

function directorySourceProblem(source: string): string | undefined {
  return (
    sourceProblem(source) ?? (source.startsWith('directory:') ? undefined : `must be "directory:<name>", got ${JSON.stringify(source)}`)
  );
}

/** The `source` option every kit directory takes. */
export const SOURCE_OPTION: OptionSpec = {
  type: 'string',
  expected: 'an identity source like "directory:staff"',
  check: directorySourceProblem,
};
