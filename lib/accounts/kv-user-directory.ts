import { ConflictError } from '../http/errors';
import { MemoryStore } from '../store/memory-store';
import type { KeyValueStore } from '../store/port';
import { sha256 } from '../util/digest';
import { checkOptions, OptionsError, type OptionSchema } from '../util/options';
import {
  accountFinders,
  accountOf,
  byUsername,
  checkAccountSearch,
  checkEmail,
  checkPasswordHash,
  matchesSearch,
  newStoredAccount,
  normalizeEmail,
  withDisabled,
  withEmail,
  withPasswordHash,
  versionMatches,
  type StoredAccount,
} from './account-record';
import { DEFAULT_DIRECTORY_SOURCE, normalizeUsername, SOURCE_OPTION } from './user-directory';
import type { Account, AccountPage, AccountSearch, NewAccount, SetEmailOptions, WritableUserDirectory } from './writable-user-directory';

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

/** Options of {@link memoryUserDirectory}. */
export interface MemoryUserDirectoryOptions {
  /** The identity source of the directory's users, `directory:<name>`. Default `directory:local`. */
  source?: string;
}

const OPTIONS: OptionSchema = {
  namespace: {
    type: 'string',
    check: (namespace: string) => (/^[A-Za-z0-9:_-]+$/.test(namespace) ? undefined : `must match [A-Za-z0-9:_-]+, got "${namespace}"`),
  },
  source: SOURCE_OPTION,
};

// A compare-and-set loop gives up after this many lost races: only a write storm on one account gets that far.
const MAX_ATTEMPTS = 64;
// A username or address claimed for an account whose record never came (the writer died in between) is taken over
// after this long; a live writer needs milliseconds between the claim and the record.
const CLAIM_LEASE_MILLIS = 60_000;

/** A digest, so an id or name with `{`, `}` or `:` can neither break the Cluster hash tag nor make two keys meet. */
function tag(text: string): string {
  return sha256(text, 'base64url').slice(0, 22);
}

interface Claim {
  id: string;
  at: number;
}

function parseClaim(raw: string): Claim {
  return JSON.parse(raw) as Claim;
}

/**
 * The {@link WritableUserDirectory} on the kit's {@link KeyValueStore}: Redis (single node, Sentinel or Cluster) for
 * several portal instances, or a {@link MemoryStore} for one process. One key per account
 * (`users:{<digest of id>}:account`, changed only by compare-and-set), one per username and one per address
 * (`users:name:{<digest>}`, `users:email:{<digest>}`, each naming the account's id, taken with SET NX), and a set of
 * all ids for the admin listing. Every operation touches one key at a time, so it works unchanged on a Cluster.
 * Listing reads every account: fine for thousands of accounts; use {@link postgresUserDirectory} for more.
 *
 * @example
 * const users = redisUserDirectory(store, { source: 'directory:staff' });
 * await users.createUser({ username: 'alice', name: 'Alice', roles: ['admin'], passwordHash: await hashPassword(password) });
 */
export function redisUserDirectory(store: KeyValueStore, options: RedisUserDirectoryOptions = {}): WritableUserDirectory {
  if (!store || typeof store.get !== 'function' || typeof store.compareAndSet !== 'function') {
    throw new OptionsError('redisUserDirectory: pass the kit store, e.g. redisUserDirectory(new RedisStore(url))');
  }
  checkOptions('redisUserDirectory', options as unknown, OPTIONS);
  const namespace = options.namespace ?? 'users';
  const keys = {
    account: (id: string) => `${namespace}:{${tag(id)}}:account`,
    username: (username: string) => `${namespace}:name:{${tag(normalizeUsername(username))}}`,
    email: (email: string) => `${namespace}:email:{${tag(normalizeEmail(email))}}`,
    ids: `${namespace}:{index}:ids`,
    // Read, never written, for a name or address nobody holds: see resolve().
    decoy: `${namespace}:{decoy}:account`,
  };

  async function read(id: string): Promise<{ raw: string; stored: StoredAccount } | null> {
    const raw = await store.get(keys.account(id));
    if (raw === null) return null;
    const stored = JSON.parse(raw) as StoredAccount;
    // A digest collision of two ids is not a match.
    return stored.id === id ? { raw, stored } : null;
  }

  /** True when the account still holds this index key (its record names the username or address). */
  function holds(stored: StoredAccount | undefined, key: string): boolean {
    return (
      stored !== undefined && (keys.username(stored.username) === key || (stored.email !== undefined && keys.email(stored.email) === key))
    );
  }

  /** The account an index key names, when its record still holds the key. */
  async function resolve(key: string): Promise<StoredAccount | null> {
    const raw = await store.get(key);
    if (raw === null) {
      // A known name costs a second read (its account); an unknown one does the same, so the time to answer does not
      // tell which names exist.
      await store.get(keys.decoy);
      return null;
    }
    const found = await read(parseClaim(raw).id);
    return found && holds(found.stored, key) ? found.stored : null;
  }

  /**
   * Takes a username or address key for `id`; false when another account holds it. A claim whose account does not
   * hold it (a writer died between claim and record, or a removal was cut short) is taken over once its lease is out.
   */
  async function claim(key: string, id: string): Promise<boolean> {
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt += 1) {
      const mine = JSON.stringify({ id, at: Date.now() } satisfies Claim);
      if (await store.setIfAbsent(key, mine)) return true;
      const current = await store.get(key);
      if (current === null) continue;
      const holder = parseClaim(current);
      if (holder.id === id) return true;
      if (holds((await read(holder.id))?.stored, key) || Date.now() - holder.at < CLAIM_LEASE_MILLIS) return false;
      if (await store.compareAndSet(key, current, mine)) return true;
    }
    return false;
  }

  /** Frees an index key if it still names `id`. */
  async function release(key: string, id: string): Promise<void> {
    const current = await store.get(key);
    if (current !== null && parseClaim(current).id === id) await store.delete(key);
  }

  /**
   * Applies `change` to the stored account with compare-and-set, retrying when another write came in between.
   * `change` answers null when its condition fails (nothing is written), or the record itself to write nothing.
   */
  async function update(
    id: string,
    change: (stored: StoredAccount) => StoredAccount | null,
  ): Promise<{ before: StoredAccount; after: StoredAccount } | null> {
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt += 1) {
      const found = await read(id);
      if (!found) return null;
      const after = change(found.stored);
      if (after === null) return null;
      if (after === found.stored || (await store.compareAndSet(keys.account(id), found.raw, JSON.stringify(after)))) {
        return { before: found.stored, after };
      }
    }
    throw new ConflictError({ code: 'account_busy', detail: 'redisUserDirectory: the account kept changing; try again' });
  }

  return {
    source: options.source ?? DEFAULT_DIRECTORY_SOURCE,

    ...accountFinders({
      byId: async (id) => (await read(id))?.stored ?? null,
      byUsername: (username) => resolve(keys.username(username)),
      byEmail: (email) => resolve(keys.email(email)),
    }),

    async createUser(input: NewAccount): Promise<Account> {
      const stored = newStoredAccount(input, Date.now(), 'redisUserDirectory.createUser');
      const usernameKey = keys.username(stored.username);
      if (!(await claim(usernameKey, stored.id))) {
        throw new ConflictError({ code: 'username_taken', detail: `the username "${stored.username}" belongs to another account` });
      }
      const emailKey = stored.email === undefined ? undefined : keys.email(stored.email);
      if (emailKey !== undefined && !(await claim(emailKey, stored.id))) {
        await release(usernameKey, stored.id);
        throw new ConflictError({ code: 'email_taken', detail: 'the email address belongs to another account' });
      }
      if (!(await store.setIfAbsent(keys.account(stored.id), JSON.stringify(stored)))) {
        // The id is another account's: its claims (if these keys were its own) stay as they were.
        const existing = (await read(stored.id))?.stored;
        if (!holds(existing, usernameKey)) await release(usernameKey, stored.id);
        if (emailKey !== undefined && !holds(existing, emailKey)) await release(emailKey, stored.id);
        throw new ConflictError({ code: 'id_taken', detail: `an account with the id "${stored.id}" exists` });
      }
      await store.addToSet(keys.ids, [stored.id]);
      return accountOf(stored);
    },

    async setPasswordHash(id, passwordHash, condition = {}): Promise<Account | null> {
      const hash = checkPasswordHash(passwordHash, 'redisUserDirectory.setPasswordHash');
      const now = Date.now();
      const result = await update(id, (stored) =>
        versionMatches(stored, condition.ifCredentialVersion) ? withPasswordHash(stored, hash, now) : null,
      );
      return result && accountOf(result.after);
    },

    async setEmail(id: string, email: string | null, options: SetEmailOptions = {}): Promise<Account | null> {
      const address = email === null ? null : checkEmail(email, 'redisUserDirectory.setEmail');
      const current = await read(id);
      if (!current) return null;
      const newKey = address === null ? undefined : keys.email(address);
      // The key is claimed before the record names the address, so no reader finds the record under an address
      // whose key another account holds; a claim the record never came to hold is released below (or by its lease).
      if (newKey !== undefined && !holds(current.stored, newKey) && !(await claim(newKey, id))) {
        throw new ConflictError({ code: 'email_taken', detail: 'the email address belongs to another account' });
      }
      const now = Date.now();
      const result = await update(id, (stored) =>
        versionMatches(stored, options.ifCredentialVersion) ? withEmail(stored, address, options.verified === true, now) : null,
      ).catch(async (error: unknown) => {
        if (newKey !== undefined) await release(newKey, id);
        throw error;
      });
      const final = result?.after ?? (await read(id))?.stored;
      const touched = new Set<string>(newKey === undefined ? [] : [newKey]);
      for (const previous of [current.stored.email, result?.before.email]) if (previous !== undefined) touched.add(keys.email(previous));
      for (const key of touched) if (!holds(final, key)) await release(key, id);
      return result && accountOf(result.after);
    },

    async setDisabled(id: string, disabled: boolean): Promise<Account | null> {
      const now = Date.now();
      const result = await update(id, (stored) => withDisabled(stored, disabled === true, now));
      return result && accountOf(result.after);
    },

    async remove(id: string): Promise<boolean> {
      const found = await read(id);
      if (!found) return false;
      if ((await store.delete(keys.account(id))) === 0) return false;
      await release(keys.username(found.stored.username), id);
      if (found.stored.email !== undefined) await release(keys.email(found.stored.email), id);
      await store.removeFromSet(keys.ids, [id]);
      return true;
    },

    async listAccounts(query?: AccountSearch): Promise<AccountPage> {
      const { search, offset, limit } = checkAccountSearch(query, 'redisUserDirectory.listAccounts');
      const ids = await store.members(keys.ids);
      const found = await Promise.all(ids.map((id) => read(id)));
      const matching = found.flatMap((entry) => (entry && matchesSearch(entry.stored, search) ? [entry.stored] : [])).sort(byUsername);
      return { accounts: matching.slice(offset, offset + limit).map(accountOf), total: matching.length, offset, limit };
    },
  };
}

/**
 * A {@link WritableUserDirectory} in this process's memory: for tests, demos and single-process tools. Its users are
 * lost on restart and not shared between processes; use {@link redisUserDirectory} or {@link postgresUserDirectory}
 * behind a load balancer.
 *
 * @example
 * const users = memoryUserDirectory();
 * await users.createUser({ username: 'alice', name: 'Alice', email: 'alice@example.com' });
 */
export function memoryUserDirectory(options: MemoryUserDirectoryOptions = {}): WritableUserDirectory {
  checkOptions('memoryUserDirectory', options as unknown, { source: SOURCE_OPTION });
  return redisUserDirectory(new MemoryStore(), options);
}
