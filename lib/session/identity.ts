import { OptionsError } from '../util/options';

/**
 * Who asserted an identity, and the subject it asserted. Two sources may use the same subject for different
 * people (two OpenID providers both issuing `sub: "42"`), so an identity is always the pair, never the subject.
 */
export interface Identity {
  /**
   * The asserting source: `oidc:<issuer>` for an OpenID provider, `qr:<provider URL>#<appid>` for a QR-login
   * provider, `directory:<name>` for a user directory (the portal's passwords), `basic:<name>` for Basic
   * credentials, or a source of the app's own (`<kind>:<name>`).
   */
  source: string;
  /** The subject within that source (an OIDC `sub`, a QR openid, a directory user id). */
  subject: string;
}

/** The identity source of a user directory that names none (the portal's passwords, the QR provider's users). */
export const DEFAULT_DIRECTORY_SOURCE = 'directory:local';

// A kind, a colon, then printable ASCII without spaces or "|" (the separator of the identity id).
const SOURCE = /^[a-z][a-z0-9-]*:[\x21-\x7b\x7d\x7e]{1,512}$/;
const MAX_SUBJECT = 512;

/**
 * Why `source` cannot name an identity source, or undefined when it can.
 *
 * @example
 * sourceProblem('oidc:https://idp.example.test'); // undefined
 */
export function sourceProblem(source: unknown): string | undefined {
  if (typeof source !== 'string' || !SOURCE.test(source)) {
    return `must be "<kind>:<name>" (e.g. "oidc:https://idp.example.test" or "directory:staff") without spaces or "|", got ${JSON.stringify(source)}`;
  }
  return undefined;
}

/**
 * The user id of an identity: `<source>|<subject>`. The source has no `|`, so the id names exactly one
 * (source, subject) pair and two sources can never produce the same id.
 *
 * @example
 * identityId({ source: 'oidc:https://idp.example.test', subject: '42' }); // 'oidc:https://idp.example.test|42'
 */
export function identityId(identity: Identity): string {
  const problem = sourceProblem(identity.source);
  if (problem !== undefined) throw new OptionsError(`identity source ${problem}`);
  if (typeof identity.subject !== 'string' || identity.subject === '' || identity.subject.length > MAX_SUBJECT) {
    throw new OptionsError(`identity subject must be a non-empty string of at most ${MAX_SUBJECT} characters`);
  }
  return `${identity.source}|${identity.subject}`;
}

/**
 * The identity an id made by {@link identityId} names, or undefined for any other string.
 *
 * @example
 * parseIdentityId('directory:staff|alice'); // { source: 'directory:staff', subject: 'alice' }
 */
export function parseIdentityId(id: string): Identity | undefined {
  const bar = id.indexOf('|');
  if (bar === -1) return undefined;
  const source = id.slice(0, bar);
  const subject = id.slice(bar + 1);
  if (sourceProblem(source) !== undefined || subject === '') return undefined;
  return { source, subject };
}

/**
 * True when two identities are the same (source, subject) pair.
 *
 * @example
 * sameIdentity(req.user, { source: directory.source, subject: 'alice' });
 */
export function sameIdentity(a: Identity, b: Identity): boolean {
  return a.source === b.source && a.subject === b.subject;
}
