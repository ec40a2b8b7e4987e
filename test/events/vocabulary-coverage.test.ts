import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { SECURITY_EVENT_TYPES, type SecurityEventType } from '../../lib';

/** The test that performs the action and finds exactly the expected event, by file and test name. */
interface Proof {
  file: string;
  test: string;
}

/** A type no kit code emits yet: its docs row says "reserved" and who will emit it. */
interface Reserved {
  reserved: string;
}

const ROOT = resolve(__dirname, '../..');

/**
 * Every type of the vocabulary and the test proving it is recorded where the decision happens. The record is
 * typed by the vocabulary, so a new type does not compile without a row here, and the tests below fail when a
 * row names a test that does not exist or a reserved type whose docs row no longer says so.
 */
const PROOFS: Record<SecurityEventType, Proof | Reserved> = {
  'signin.succeeded': {
    file: 'test/portal/password-login-events.test.ts',
    test: 'records signin.succeeded and session.created for a sign-in, with the user and the new session',
  },
  'signin.failed': {
    file: 'test/portal/password-login-events.test.ts',
    test: 'records signin.failed (bad_credentials) with the username only as a keyed hash',
  },
  'request.throttled': {
    file: 'test/portal/password-login-events.test.ts',
    test: 'records request.throttled with the limit that refused, and no signin.failed',
  },
  'stepup.succeeded': {
    file: 'test/events/factor-events.test.ts',
    test: 'records stepup.failed for a wrong code, then stepup.succeeded and factor.used for a right one',
  },
  'stepup.failed': {
    file: 'test/events/factor-events.test.ts',
    test: 'records stepup.failed for a wrong code, then stepup.succeeded and factor.used for a right one',
  },
  'factor.added': {
    file: 'test/events/factor-events.test.ts',
    test: 'records factor.added for the authenticator app and its recovery codes',
  },
  'factor.removed': {
    file: 'test/events/factor-events.test.ts',
    test: 'records a recovery code used with the codes remaining, new codes and the app removed',
  },
  'factor.renamed': { file: 'test/events/factor-events.test.ts', test: 'records a passkey added, used to sign in, renamed, and removed' },
  'factor.used': {
    file: 'test/events/factor-events.test.ts',
    test: 'records a recovery code used with the codes remaining, new codes and the app removed',
  },
  'password.changed': {
    file: 'test/portal/accounts/password-change.test.ts',
    test: 'renews the session id, ends the other sessions (by default) and mails the user',
  },
  'password.change_refused': {
    file: 'test/portal/accounts/password-change.test.ts',
    test: 'refuses a wrong current password, a common one and a breached one, each with a reason a person reads, changing nothing',
  },
  'password.reset_requested': {
    file: 'test/portal/accounts/password-reset.test.ts',
    test: 'sets a new password once, moving its token out of the URL, and ends every session of the user',
  },
  'password.reset': {
    file: 'test/portal/accounts/password-reset.test.ts',
    test: 'sets a new password once, moving its token out of the URL, and ends every session of the user',
  },
  'password.reset_refused': {
    file: 'test/portal/accounts/password-reset.test.ts',
    test: 'cannot reset without proving it: no code, a wrong code, then the right one',
  },
  'email.changed': {
    file: 'test/portal/accounts/password-change.test.ts',
    test: 'applies the new address only when its link is opened, and tells the old address',
  },
  'account.created': { reserved: 'the accounts administration' },
  'account.disabled': {
    file: 'test/accounts/account-admin.test.ts',
    test: 'disabling ends every session of the user at once: each instance answers 401 at the next request, cached or not',
  },
  'account.enabled': {
    file: 'test/accounts/account-admin.test.ts',
    test: 'enables a disabled account again',
  },
  'account.removed': {
    file: 'test/accounts/account-admin.test.ts',
    test: 'removing ends every session too, and the account is gone',
  },
  'notification.sent': {
    file: 'test/portal/accounts/password-change.test.ts',
    test: 'renews the session id, ends the other sessions (by default) and mails the user',
  },
  'notification.failed': {
    file: 'test/portal/accounts/password-change.test.ts',
    test: 'does not undo the change it reports, and is recorded as notification.failed',
  },
  'session.created': {
    file: 'test/session/session-events.test.ts',
    test: 'records session.created at login, with the request facts and the handle, never the session id',
  },
  'session.renewed': {
    file: 'test/session/session-events.test.ts',
    test: 'records session.renewed after a step-up, naming the new and the previous handle',
  },
  'session.ended': {
    file: 'test/session/session-events.test.ts',
    test: "records session.ended (admin) for another user's sessions, with who ended them and not the admin's session",
  },
  'csrf.refused': {
    file: 'test/session/session-events.test.ts',
    test: 'records csrf.refused where the session cookie refuses a cross-site request, with the user it rode on',
  },
  'access.denied': {
    file: 'test/events/access-events.test.ts',
    test: 'records access.denied (rule_denied) with the rule and the route, and nothing for a bypass',
  },
  'token.refused': { file: 'test/tokens/token-events.test.ts', test: 'records a tampered token as bad_signature, without the token' },
  'refresh_token.reused': {
    file: 'test/tokens/token-events.test.ts',
    test: 'records a rotated token presented again as reused, with the presenting request, and its grant is revoked',
  },
  'dpop.proof_refused': {
    file: 'test/tokens/token-events.test.ts',
    test: 'records dpop.proof_refused (token_not_bound) for an unbound token sent as DPoP, without the token',
  },
  'client_assertion.refused': {
    file: 'test/provider/level-three.test.ts',
    test: 'refuses a replayed client assertion with 401 invalid_client, recorded as replayed',
  },
  'provider.token.issued': {
    file: 'test/provider/provider-events.test.ts',
    test: 'records provider.token.issued for a code exchange, with the client and the user',
  },
  'provider.token.refused': {
    file: 'test/provider/provider-events.test.ts',
    test: 'records provider.token.refused (invalid_grant) for a code used twice, and the grant revoked',
  },
  'provider.authorization.refused': {
    file: 'test/provider/provider-events.test.ts',
    test: 'records provider.authorization.refused for a request without PKCE',
  },
  'provider.consent.granted': {
    file: 'test/provider/provider-events.test.ts',
    test: 'records provider.consent.granted with the scopes, and provider.consent.denied',
  },
  'provider.consent.denied': {
    file: 'test/provider/provider-events.test.ts',
    test: 'records provider.consent.granted with the scopes, and provider.consent.denied',
  },
  'provider.consent.withdrawn': {
    file: 'test/provider/connected-apps.test.ts',
    test: 'withdraws a grant: the refresh token stops working at once, a back-channel logout is sent, consent is asked again',
  },
  'provider.grant.revoked': {
    file: 'test/provider/provider-events.test.ts',
    test: 'records provider.grant.revoked (token_revocation) at the revocation endpoint',
  },
  'provider.backchannel.failed': {
    file: 'test/provider/provider-events.test.ts',
    test: 'records provider.backchannel.failed for a client that does not take its logout token, and its grant revoked',
  },
  'provider.par.refused': {
    file: 'test/provider/level-three.test.ts',
    test: 'answers a malformed pushed request with 400 and the RFC error, recorded as provider.par.refused',
  },
  'qr.scanned': {
    file: 'test/qr/qr-events.test.ts',
    test: 'records qr.scanned and qr.confirmed with the phone user and the relying app, never the auth_code',
  },
  'qr.confirmed': {
    file: 'test/qr/qr-events.test.ts',
    test: 'records qr.scanned and qr.confirmed with the phone user and the relying app, never the auth_code',
  },
  'qr.denied': { file: 'test/qr/qr-events.test.ts', test: 'records qr.denied' },
  'qr.expired': { file: 'test/qr/qr-events.test.ts', test: 'records qr.expired for a decision on an expired request' },
  'qr.refused': { file: 'test/qr/qr-events.test.ts', test: 'records qr.refused (not_scanner) when another user tries to decide' },
  'store.unavailable': {
    file: 'test/http/error-handler-events.test.ts',
    test: 'records a store outage answered 503 as store.unavailable, without the auth_code or the query, and prints no line',
  },
  'error.internal': {
    file: 'test/http/error-handler-events.test.ts',
    test: 'records an unexpected error as error.internal with its name, never its message',
  },
};

const docs = readFileSync(resolve(ROOT, 'docs/security-events.md'), 'utf8');
const sources = new Map<string, string>();
const source = (file: string) => {
  let text = sources.get(file);
  if (text === undefined) {
    text = readFileSync(resolve(ROOT, file), 'utf8');
    sources.set(file, text);
  }
  return text;
};
/** The "Emitted by" cell of a type's row in the docs. */
const emittedBy = (type: string) => {
  const row = docs.split('\n').find((line) => line.startsWith(`| \`${type}\` |`));
  return row?.split('|').at(-2)?.trim();
};

describe('every event type is proven by a test', () => {
  it('lists exactly the types of the vocabulary', () => {
    expect(Object.keys(PROOFS).sort()).toEqual(Object.keys(SECURITY_EVENT_TYPES).sort());
  });

  it.each(Object.entries(PROOFS).filter((entry): entry is [string, Proof] => 'file' in entry[1]))(
    '%s: the named test exists, and its file waits for that event',
    (type, proof) => {
      const text = source(proof.file);
      const quoted = [`'${proof.test}'`, `"${proof.test}"`, `\`${proof.test}\``];
      expect(quoted.some((title) => text.includes(`it(${title}`))).toBe(true);
      expect(text).toContain(`'${type}'`);
      // An emitted type is documented with who emits it, not as reserved.
      expect(emittedBy(type)).not.toMatch(/^reserved/);
    },
  );

  it.each(Object.entries(PROOFS).filter((entry): entry is [string, Reserved] => 'reserved' in entry[1]))(
    '%s: reserved in the docs (no test can perform it yet)',
    (type) => {
      expect(emittedBy(type)).toMatch(/^reserved/);
    },
  );
});
