import { readFileSync } from 'node:fs';
import { DEFAULT_DIRECTORY_SOURCE, sourceProblem } from '../session/identity';
import type { KeyValueStore } from '../store/port';
import { checkOptions, OptionsError, type OptionSchema } from '../util/options';
import { hashPassword, parsePasswordHash, verifyPasswordHash, type ParsedPasswordHash } from '../util/password-hash';
import { ConflictError } from '../http/errors';

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
 * {@link fileUserDirectory} and {@link redisUserDirectory}.
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

function validateRecord(record: unknown, where: string): UserRecord {
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

function toDirectoryUser(record: UserRecord): DirectoryUser {
  return {
    id: record.id,
    name: record.name,
    roles: [...record.roles],
    ...(record.attributes ? { attributes: { ...record.attributes } } : {}),
    ...(record.disabled === true ? { disabled: true } : {}),
  };
}

/**
 * A hash to verify against when the user does not exist, so an unknown username costs the same scrypt work as a
 * known one. Built lazily once per parameter set and reused.
 */
const decoys = new Map<string, Promise<ParsedPasswordHash>>();
function decoyFor(template: ParsedPasswordHash): Promise<ParsedPasswordHash> {
  const key = `${template.N}:${template.r}:${template.p}:${template.hash.length}`;
  let decoy = decoys.get(key);
  if (!decoy) {
    decoy = hashPassword(`decoy-${Math.random()}`, { N: template.N, r: template.r, p: template.p }).then(parsePasswordHash);
    decoys.set(key, decoy);
  }
  return decoy;
}

/** Options of {@link fileUserDirectory}. */
export interface FileUserDirectoryOptions {
  /**
   * The identity source of the directory's users, `directory:<name>`: their user ids are `<source>|<id>`.
   * Default `directory:local`.
   */
  source?: string;
}

function directorySourceProblem(source: string): string | undefined {
  return (
    sourceProblem(source) ?? (source.startsWith('directory:') ? undefined : `must be "directory:<name>", got ${JSON.stringify(source)}`)
  );
}

const SOURCE_OPTION = { type: 'string', expected: 'an identity source like "directory:staff"', check: directorySourceProblem } as const;
const FILE_OPTIONS: OptionSchema = { source: SOURCE_OPTION };

/**
 * A read-only directory from a JSON file (an array of {@link UserRecord}) or from records given in code. The file
 * is read and every record validated when this is called, so a broken file stops the app at start-up.
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

  return {
    source: options.source ?? DEFAULT_DIRECTORY_SOURCE,
    async verifyPassword(username: string, password: string): Promise<DirectoryUser | null> {
      const entry = typeof username === 'string' ? byName.get(normalizeUsername(username)) : undefined;
      if (!entry) {
        if (template) await verifyPasswordHash(String(password), await decoyFor(template));
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
}

/** Options of {@link redisUserDirectory}. */
export interface RedisUserDirectoryOptions {
  /** Key namespace inside the store. Default `users`. */
  namespace?: string;
  /**
   * The identity source of the directory's users, `directory:<name>`: their user ids are `<source>|<id>`.
   * Default `directory:local`.
   */
  source?: string;
}

const REDIS_OPTIONS: OptionSchema = {
  namespace: {
    type: 'string',
    check: (namespace: string) => (/^[A-Za-z0-9:_-]+$/.test(namespace) ? undefined : `must match [A-Za-z0-9:_-]+, got "${namespace}"`),
  },
  source: SOURCE_OPTION,
};

/** A {@link UserDirectory} kept in the kit store, with methods to manage its users. */
export interface ManagedUserDirectory extends UserDirectory {
  /** Creates or replaces a user (its username must be free or already its own). */
  put(record: UserRecord): Promise<void>;
  /** Removes a user; true when it existed. */
  remove(id: string): Promise<boolean>;
}

/**
 * A directory in the kit's {@link KeyValueStore} (Redis in production), so several portal instances share it and
 * users can be added at run time. One key per user (`users:id:<id>`) and one per login name
 * (`users:name:<username>` → id), each a single-key operation.
 *
 * @example
 * const users = redisUserDirectory(store, { source: 'directory:staff' });
 * await users.put({ id: 'u1', username: 'alice', name: 'Alice', roles: ['admin'], passwordHash: await hashPassword('pw') });
 */
export function redisUserDirectory(store: KeyValueStore, options: RedisUserDirectoryOptions = {}): ManagedUserDirectory {
  if (!store || typeof store.get !== 'function' || typeof store.setIfAbsent !== 'function') {
    throw new OptionsError('redisUserDirectory: pass the kit store, e.g. redisUserDirectory(new RedisStore(url))');
  }
  checkOptions('redisUserDirectory', options as unknown, REDIS_OPTIONS);
  const namespace = options.namespace ?? 'users';
  const idKey = (id: string) => `${namespace}:id:${encodeURIComponent(id)}`;
  const nameKey = (username: string) => `${namespace}:name:${encodeURIComponent(normalizeUsername(username))}`;
  let decoy: Promise<ParsedPasswordHash> | undefined;

  async function read(id: string): Promise<UserRecord | null> {
    const json = await store.get(idKey(id));
    return json === null ? null : (JSON.parse(json) as UserRecord);
  }

  return {
    source: options.source ?? DEFAULT_DIRECTORY_SOURCE,
    async verifyPassword(username: string, password: string): Promise<DirectoryUser | null> {
      const id = typeof username === 'string' && username.length > 0 ? await store.get(nameKey(username)) : null;
      const record = id === null ? null : await read(id);
      if (!record) {
        decoy ??= hashPassword('decoy').then(parsePasswordHash);
        await verifyPasswordHash(String(password), await decoy);
        return null;
      }
      const ok = await verifyPasswordHash(String(password), record.passwordHash);
      return ok && !record.disabled ? toDirectoryUser(record) : null;
    },
    async findById(id: string): Promise<DirectoryUser | null> {
      const record = await read(id);
      return record ? toDirectoryUser(record) : null;
    },
    async put(record: UserRecord): Promise<void> {
      const valid = validateRecord(record, 'redisUserDirectory.put');
      const claimed = await store.setIfAbsent(nameKey(valid.username), valid.id);
      if (!claimed && (await store.get(nameKey(valid.username))) !== valid.id) {
        throw new ConflictError({
          code: 'username_taken',
          detail: `redisUserDirectory.put: username "${valid.username}" belongs to another user`,
        });
      }
      const previous = await read(valid.id);
      if (previous && normalizeUsername(previous.username) !== normalizeUsername(valid.username)) {
        await store.delete(nameKey(previous.username));
      }
      await store.set(idKey(valid.id), JSON.stringify({ ...valid, roles: [...valid.roles] }));
    },
    async remove(id: string): Promise<boolean> {
      const previous = await read(id);
      if (!previous) return false;
      await store.delete(idKey(id), nameKey(previous.username));
      return true;
    },
  };
}
