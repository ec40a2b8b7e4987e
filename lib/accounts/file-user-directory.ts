import { readFileSync } from 'node:fs';
import { checkOptions, OptionsError, type OptionSchema } from '../util/options';
import { parsePasswordHash, verifyPasswordHash, type ParsedPasswordHash } from '../util/password-hash';
import {
  DEFAULT_DIRECTORY_SOURCE,
  normalizeUsername,
  SOURCE_OPTION,
  toDirectoryUser,
  validateRecord,
  verifyAgainstDecoy,
  type DirectoryUser,
  type UserDirectory,
  type UserRecord,
} from './user-directory';
import { WRITE_OPERATIONS } from './writable-user-directory';

/** Options of {@link fileUserDirectory}. */
export interface FileUserDirectoryOptions {
  /**
   * The identity source of the directory's users, `directory:<name>`: their user ids are `<source>|<id>`.
   * Default `directory:local`.
   */
  source?: string;
}

const FILE_OPTIONS: OptionSchema = { source: SOURCE_OPTION };

/** Every write of a writable directory, answering with what to use instead: a file cannot be changed at run time. */
function readOnlyWrites(): Record<string, () => Promise<never>> {
  return Object.fromEntries(
    WRITE_OPERATIONS.map((operation) => [
      operation,
      () =>
        Promise.reject(
          new OptionsError(
            `fileUserDirectory is read-only: ${operation}() needs a writable directory ` +
              '(memoryUserDirectory, redisUserDirectory or postgresUserDirectory); edit the file and restart to change its users',
          ),
        ),
    ]),
  );
}

/**
 * A **read-only** directory from a JSON file (an array of {@link UserRecord}) or from records given in code. The
 * file is read and every record validated when this is called, so a broken file stops the app at start-up. Users
 * cannot change their password, reset it by email or be disabled at run time: use a writable directory
 * ({@link redisUserDirectory}, {@link postgresUserDirectory}) for that. A write method called on it anyway (from
 * JavaScript, or through a cast) rejects with an {@link OptionsError} that says so.
 *
 * @example
 * const users = fileUserDirectory('config/users.json', { source: 'directory:staff' });
 * app.use(loginPortal({ users, store }));
 */
export function fileUserDirectory(pathOrRecords: string | readonly UserRecord[], options: FileUserDirectoryOptions = {}): UserDirectory {
  const where = 'fileUserDirectory';
  checkOptions(where, options as unknown, FILE_OPTIONS);
  let raw: unknown;
  if (typeof pathOrRecords === 'string') {
    try {
      raw = JSON.parse(readFileSync(pathOrRecords, 'utf8'));
    } catch (error) {
      throw new OptionsError(`${where}: cannot read users from "${pathOrRecords}": ${(error as Error).message}`, { cause: error });
    }
  } else {
    raw = pathOrRecords;
  }
  if (!Array.isArray(raw)) throw new OptionsError(`${where}: expected an array of user records (or a path to a JSON file holding one)`);
  const byName = new Map<string, { record: UserRecord; hash: ParsedPasswordHash }>();
  const byId = new Map<string, UserRecord>();
  for (const item of raw) {
    const record = validateRecord(item, where);
    const name = normalizeUsername(record.username);
    if (byName.has(name)) throw new OptionsError(`${where}: username "${record.username}" appears twice`);
    if (byId.has(record.id)) throw new OptionsError(`${where}: id "${record.id}" appears twice`);
    // Copied, so a caller changing its array afterwards cannot change who may log in.
    const copy: UserRecord = { ...record, roles: [...record.roles] };
    byName.set(name, { record: copy, hash: parsePasswordHash(copy.passwordHash) });
    byId.set(copy.id, copy);
  }
  const template = byName.values().next().value?.hash ?? null;

  const directory: UserDirectory = {
    source: options.source ?? DEFAULT_DIRECTORY_SOURCE,
    async verifyPassword(username: string, password: string): Promise<DirectoryUser | null> {
      const entry = typeof username === 'string' ? byName.get(normalizeUsername(username)) : undefined;
      if (!entry) {
        if (template) await verifyAgainstDecoy(password, template);
        return null;
      }
      const ok = await verifyPasswordHash(String(password), entry.hash);
      return ok && !entry.record.disabled ? toDirectoryUser(entry.record) : null;
    },
    async findById(id: string): Promise<DirectoryUser | null> {
      const record = byId.get(id);
      return record ? toDirectoryUser(record) : null;
    },
  };
  // Not in the type (a read-only directory has no writes to offer), but there for a caller that tries one anyway.
  return Object.assign(directory, readOnlyWrites());
}
