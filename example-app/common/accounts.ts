/**
 * The demo's accounts: one directory, shared by the login portal (passwords), the QR provider (who may confirm a
 * scan) and the demo identity provider (its users are these accounts too). Its identity source is
 * `directory:demo`, so a user id is `directory:demo|<id>`.
 */
import { fileUserDirectory, redisUserDirectory, type KeyValueStore, type UserDirectory, type WritableUserDirectory } from 'express-sso-kit';

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

/**
 * The demo accounts in the store, where the admin site can disable, enable and remove them and the portal can change
 * passwords and mail reset links: the same accounts and hashes as {@link demoDirectory}, each with an address
 * (`alice@<domain>`), created in the store by the first call of each process when missing (a removed account comes
 * back when the demo restarts; a password changed at the portal stays changed).
 *
 * @example
 * app.use(loginPortal({ users: demoAccountDirectory(store, config.domain), store }));
 */
export function demoAccountDirectory(store: KeyValueStore, domain: string): WritableUserDirectory {
  const users = redisUserDirectory(store, { source: DEMO_DIRECTORY_SOURCE, namespace: 'demo-users' });
  let seeded: Promise<void> | undefined;
  const seed = (): Promise<void> => {
    seeded ??= Promise.all(
      DEMO_ACCOUNTS.map(async ({ id, username, name, roles }) => {
        if (await users.findById(id)) return;
        // Another site of the demo may create it at the same moment: its 409 means the account is there.
        const account = { id, username, name, roles: [...roles], email: `${username}@${domain}`, emailVerified: true };
        await users.createUser({ ...account, passwordHash: PASSWORD_HASHES[id]! }).catch(async (error: unknown) => {
          if (!(await users.findById(id))) throw error;
        });
      }),
    ).then(
      () => undefined,
      (error: unknown) => {
        seeded = undefined; // the store was down: try again with the next call
        throw error;
      },
    );
    return seeded;
  };
  return new Proxy(users, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver) as unknown;
      if (typeof value !== 'function') return value;
      return async (...args: unknown[]) => {
        await seed();
        return (value as (...parameters: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}

/** Where the auth site records the port of its mail catcher, so the admin site's "Send a reset link" mails there too. */
export const DEMO_MAIL_PORT_KEY = 'demo-mail:smtp-port';
