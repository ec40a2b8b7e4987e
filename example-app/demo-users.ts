import { hashPassword } from '../lib/portal/password-hash';
import type { UserRecord } from '../lib/portal/user-directory';

/**
 * The identity source of the demo directory: the portal's passwords, the QR provider's approvers and the demo
 * identity provider's accounts are all its users, so a user id is `directory:demo|<id>`.
 */
export const DEMO_DIRECTORY_SOURCE = 'directory:demo';

/** The demo accounts, documented in docs/portal-and-demo.md and relied upon by the tests. */
export const DEMO_ACCOUNTS = [
  { id: 'alice', username: 'alice', password: 'alice-password', name: 'Alice Example', roles: ['admin'] },
  { id: 'bob', username: 'bob', password: 'bob-password', name: 'Bob Example', roles: [] as string[] },
] as const;

/**
 * The demo accounts as directory records, hashed at start-up (the passwords are public demo values; real
 * deployments keep only the hashes, made once with `hashPassword`).
 *
 * @example
 * const users = fileUserDirectory(await demoUserRecords());
 */
export async function demoUserRecords(): Promise<UserRecord[]> {
  return Promise.all(
    DEMO_ACCOUNTS.map(async (account) => ({
      id: account.id,
      username: account.username,
      name: account.name,
      roles: [...account.roles],
      passwordHash: await hashPassword(account.password),
    })),
  );
}
