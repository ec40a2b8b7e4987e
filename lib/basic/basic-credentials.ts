import { randomBytes } from 'node:crypto';
import { parsePasswordHash, verifyPasswordHash, type ParsedPasswordHash } from '../util/password-hash';
import { checkOptions, OptionsError, type OptionSchema } from '../util/options';
import { constantTimeEqual } from '../util/digest';

/** The user a Basic verifier accepts; `requireBasic` turns it into `req.user` with method `basic`. */
export interface BasicUser {
  id: string;
  /** Display name. Default: the id. */
  name?: string;
  roles?: readonly string[];
  attributes?: Record<string, string | number | boolean | null>;
}

/** Checks a user-id and password; resolves to the user, or null when they do not match. */
export type BasicVerifier<Req = unknown> = (
  username: string,
  password: string,
  req: Req,
) => BasicUser | null | undefined | Promise<BasicUser | null | undefined>;

/**
 * One entry of {@link basicCredentials}: a string (an scrypt hash `scrypt$N$r$p$salt$hash` made by `hashPassword`,
 * or else a plain password), or an object with `password` or `passwordHash` and optional `name` and `roles`.
 */
export type BasicCredentialEntry =
  | string
  | { password: string; passwordHash?: never; name?: string; roles?: readonly string[] }
  | { passwordHash: string; password?: never; name?: string; roles?: readonly string[] };

interface CompiledEntry {
  user: BasicUser;
  plain?: string;
  hash?: ParsedPasswordHash;
}

const HASH_PREFIX = 'scrypt$';
const ENTRY_SCHEMA: OptionSchema = {
  password: {
    type: 'string',
    check: (value: string) =>
      value === ''
        ? 'must be a non-empty string'
        : value.startsWith(HASH_PREFIX)
          ? 'looks like an scrypt hash; pass it as passwordHash'
          : undefined,
  },
  passwordHash: { type: 'string', expected: 'an scrypt hash "scrypt$N$r$p$salt$hash" made by hashPassword' },
  name: { type: 'string' },
  roles: { type: 'string[]', expected: 'an array of role names' },
};
// eslint-disable-next-line no-control-regex
const BAD_USER_ID = /[:\u0000-\u001f\u007f]/;

function compileEntry(username: string, entry: unknown): CompiledEntry {
  if (username === '' || BAD_USER_ID.test(username)) {
    throw new OptionsError(
      `basicCredentials: user-id ${JSON.stringify(username)} must be non-empty, without ":" or control characters (RFC 7617)`,
    );
  }
  const spec = typeof entry === 'string' ? (entry.startsWith(HASH_PREFIX) ? { passwordHash: entry } : { password: entry }) : entry;
  // Each entry follows the kit's one options rule: unknown keys (with "did you mean"), types, exactly one secret.
  checkOptions(`basicCredentials: the entry of "${username}"`, spec, ENTRY_SCHEMA, { exactlyOne: [['password', 'passwordHash']] });
  const { password, passwordHash, name, roles } = spec as { password?: string; passwordHash?: string; name?: string; roles?: string[] };
  const user: BasicUser = { id: username, name: name ?? username, roles: [...(roles ?? [])] };
  if (passwordHash !== undefined) return { user, hash: parsePasswordHash(passwordHash) };
  return { user, plain: (password as string).normalize('NFC') };
}

/**
 * A static Basic verifier over a fixed table of users, for service accounts and small internal tools. Every call
 * does the same work whether or not the user exists and whichever entry kind it has: one SHA-256 comparison with
 * `timingSafeEqual`, plus one scrypt derivation when the table holds any hash, so timing reveals neither which
 * user-ids exist nor how they are stored.
 *
 * @example
 * app.use('/metrics', requireBasic({
 *   realm: 'metrics',
 *   verify: basicCredentials({ prometheus: { passwordHash: process.env.METRICS_PASSWORD_HASH ?? '' } }),
 * }));
 */
export function basicCredentials(users: Readonly<Record<string, BasicCredentialEntry>>): BasicVerifier {
  if (users === null || typeof users !== 'object' || Array.isArray(users)) {
    throw new OptionsError("basicCredentials: pass a table of users, e.g. { alice: { passwordHash: 'scrypt$…' } }");
  }
  const table = new Map<string, CompiledEntry>();
  for (const [username, entry] of Object.entries(users)) table.set(username, compileEntry(username, entry));
  if (table.size === 0) throw new OptionsError('basicCredentials: the table of users is empty; nobody could log in');

  const firstHash = [...table.values()].find((entry) => entry.hash)?.hash;
  // Decoys with the same shape as real entries, used when the user is unknown or has the other entry kind.
  const decoyPlain = randomBytes(24).toString('base64url');
  const decoyHash: ParsedPasswordHash | undefined = firstHash && {
    ...firstHash,
    salt: randomBytes(firstHash.salt.length),
    hash: randomBytes(firstHash.hash.length),
  };

  return async function verifyBasicCredentials(username: string, password: string): Promise<BasicUser | null> {
    const entry = table.get(username);
    // NFC, as the scrypt path does, so "ä" typed as one code point or as "a" + combining mark is the same password.
    const plainMatches = constantTimeEqual(password.normalize('NFC'), entry?.plain ?? decoyPlain);
    const hashMatches = decoyHash ? await verifyPasswordHash(password, entry?.hash ?? decoyHash) : false;
    if (!entry) return null;
    const matches = entry.hash ? hashMatches : plainMatches;
    return matches ? { ...entry.user, roles: [...(entry.user.roles ?? [])] } : null;
  };
}
