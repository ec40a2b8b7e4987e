import type { DirectoryUser, UserDirectory } from './user-directory';

/**
 * An account as a writable directory gives it: the {@link DirectoryUser} the portal signs in, plus what account
 * pages and admin pages show. Never the password hash. Times are epoch milliseconds, like session times.
 */
export interface Account extends DirectoryUser {
  /** Login name as it was given; matched case-insensitively (NFKC). */
  username: string;
  /** The address mail goes to, as it was given; matched case-insensitively. Absent when the account has none. */
  email?: string;
  /** True once the user proved they read mail at `email`; false again when the address changes. */
  emailVerified: boolean;
  /** A disabled account cannot sign in; `verifyPassword` answers null for it as for a wrong password. */
  disabled: boolean;
  /** False for an account created without a password (it signs in only after a reset link, or by another method). */
  hasPassword: boolean;
  /**
   * Grows by one with every change a reset link, a verification link or a session may have been granted on: a new
   * password, another email address, disabling or enabling. A link or session that recorded an older value is stale.
   */
  credentialVersion: number;
  createdAt: number;
  /** The last change of any kind. */
  changedAt: number;
  /** The last password change; absent while the account never had one set after creation. */
  passwordChangedAt?: number;
}

/** What {@link WritableUserDirectory.createUser} takes. */
export interface NewAccount {
  /** The user id (the subject of `<source>|<id>`): 1 to 128 printable ASCII characters without spaces. Default a random UUID. */
  id?: string;
  username: string;
  name: string;
  roles?: string[];
  attributes?: Record<string, string | number | boolean | null>;
  email?: string;
  /** Default false. */
  emailVerified?: boolean;
  /** `scrypt$N$r$p$salt$hash` from `hashPassword`; without it the account has no password until a reset sets one. */
  passwordHash?: string;
  /** Default false. */
  disabled?: boolean;
}

/** A write that happens only while the account's credential version is still the one the caller read. */
export interface CredentialVersionCondition {
  /**
   * Change nothing (and answer null) unless the account's `credentialVersion` equals this: how a reset link issued
   * for version 3 fails once anything moved the account to version 4, however the two writes interleave.
   */
  ifCredentialVersion?: number;
}

/** Options of {@link WritableUserDirectory.setEmail}. */
export interface SetEmailOptions extends CredentialVersionCondition {
  /** Whether the address is proven (a verification link was followed). Default false. */
  verified?: boolean;
}

/** What {@link WritableUserDirectory.listAccounts} takes: a page of accounts in username order. */
export interface AccountSearch {
  /** Case-insensitive text to find in the username, the name or the email address. */
  search?: string;
  /** Accounts to skip. Default 0. */
  offset?: number;
  /** Accounts per page, 1 to 500. Default 50. */
  limit?: number;
}

/** A page of accounts and how many match in all. */
export interface AccountPage {
  accounts: Account[];
  total: number;
  offset: number;
  limit: number;
}

/**
 * A {@link UserDirectory} the kit can change: what password changes, reset and verification links, and admin pages
 * need. Every write is atomic on its account (concurrent writes never lose one another, a conditional write is
 * decided on the current state); usernames and email addresses are unique, compared case-insensitively. A write to
 * an account that does not exist, or whose credential version is not the expected one, answers null and changes
 * nothing. Input that cannot be stored (an empty username, a malformed address or hash) is refused with a 422
 * `UnprocessableEntityError`; a taken username or address with a 409 `ConflictError` (`username_taken`,
 * `email_taken`); an unreachable backend with `StoreUnavailableError` (503).
 *
 * The kit ships {@link memoryUserDirectory}, {@link redisUserDirectory} and {@link postgresUserDirectory}, all held
 * to one contract test; {@link fileUserDirectory} is read-only.
 */
export interface WritableUserDirectory extends UserDirectory {
  readonly source: string;
  verifyPassword(username: string, password: string): Promise<Account | null>;
  findById(id: string): Promise<Account | null>;
  /** The account with this username (case-insensitive), enabled or not, else null. */
  findByUsername(username: string): Promise<Account | null>;
  /** The account with this email address (case-insensitive), enabled or not, verified or not, else null. */
  findByEmail(email: string): Promise<Account | null>;
  /** Creates an account; a taken id, username or address is a 409 and creates nothing. */
  createUser(account: NewAccount): Promise<Account>;
  /** Replaces the password hash in one write, records `passwordChangedAt` and bumps the credential version. */
  setPasswordHash(id: string, passwordHash: string, condition?: CredentialVersionCondition): Promise<Account | null>;
  /**
   * Sets (or, with null, removes) the email address and whether it is verified. A new address bumps the credential
   * version (links sent to the old one die); marking the same address verified does not.
   */
  setEmail(id: string, email: string | null, options?: SetEmailOptions): Promise<Account | null>;
  /** Disables or enables the account; a change bumps the credential version. */
  setDisabled(id: string, disabled: boolean): Promise<Account | null>;
  /** Removes the account and frees its username and address; true when it existed. */
  remove(id: string): Promise<boolean>;
  /** A page of accounts in username order, optionally only those matching `search`. */
  listAccounts(query?: AccountSearch): Promise<AccountPage>;
}

/**
 * The kit's earlier name of {@link WritableUserDirectory}.
 *
 * @deprecated Use {@link WritableUserDirectory}.
 */
export type ManagedUserDirectory = WritableUserDirectory;

/** The methods that change a directory, which a read-only directory refuses by name. */
export const WRITE_OPERATIONS = ['createUser', 'setPasswordHash', 'setEmail', 'setDisabled', 'remove'] as const;

/**
 * True when `users` can be changed by the kit (password changes, resets, admin operations): it has every method of
 * {@link WritableUserDirectory}. A {@link fileUserDirectory} is not.
 *
 * @example
 * if (!isWritableUserDirectory(users)) throw new Error('password reset needs redisUserDirectory or postgresUserDirectory');
 */
export function isWritableUserDirectory(users: UserDirectory): users is WritableUserDirectory {
  const candidate = users as unknown as Partial<Record<string, unknown>>;
  // fileUserDirectory carries the write methods only to refuse them; it has no finders or listing.
  return [...WRITE_OPERATIONS, 'findByUsername', 'findByEmail', 'listAccounts'].every((name) => typeof candidate[name] === 'function');
}
