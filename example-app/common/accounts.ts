/**
 * The demo's accounts: one directory, shared by the login portal (passwords), the QR provider (who may confirm a
 * scan) and the demo identity provider (its users are these accounts too). Its identity source is
 * `directory:demo`, so a user id is `directory:demo|<id>`.
 */
import { fileUserDirectory, type UserDirectory } from 'express-sso-kit';

/** The identity source of the demo directory. */
export const DEMO_DIRECTORY_SOURCE = 'directory:demo';

/** The demo accounts with their public demo passwords, as docs/portal-and-demo.md lists them. */
export const DEMO_ACCOUNTS = [
  { id: 'alice', username: 'alice', password: 'alice-password', name: 'Alice Example', roles: ['admin'] },
  { id: 'bob', username: 'bob', password: 'bob-password', name: 'Bob Example', roles: [] as string[] },
] as const;

// Only the scrypt hashes go into the directory, made once with `hashPassword(password)`, as a real one keeps them.
const PASSWORD_HASHES: Record<string, string> = {
  alice: 'scrypt$32768$8$1$xxkhsYHmhWSDGGPcdooOig$fuwEaQWr5mT3dBj86pn0VhEiCIN74s9K64Id9QLSJyM',
  bob: 'scrypt$32768$8$1$WUV0MSzR8GX9LTI9lhVQGA$qo9C7XCyuFcyGsukRg8oEcHEk7bUV21spT2RcuQyWVo',
};

/**
 * The demo directory (read-only, in code; a real one reads a JSON file or the store).
 *
 * @example
 * app.use(loginPortal({ users: demoDirectory(), store }));
 */
export function demoDirectory(): UserDirectory {
  return fileUserDirectory(
    DEMO_ACCOUNTS.map(({ id, username, name, roles }) => ({ id, username, name, roles: [...roles], passwordHash: PASSWORD_HASHES[id]! })),
    { source: DEMO_DIRECTORY_SOURCE },
  );
}
