/**
 * The one vocabulary of security events: every authentication and authorization decision the kit makes (and those
 * an app makes with the kit's types), by type, with its outcome, the reason codes it may carry and the fields of its
 * own. The same names are used in the logs, in the metrics (`type`, `outcome`, `reason` labels) and in the stores a
 * user's activity page reads. docs/security-events.md documents every row; a test holds the two together.
 */

/** Whether the decision let the person (or client) through. */
export type SecurityEventOutcome = 'success' | 'failure';

/** One row of {@link SECURITY_EVENT_TYPES}. */
export interface SecurityEventTypeSpec {
  readonly outcome: SecurityEventOutcome;
  /** Every reason code the type may carry; anything else is reported as `other`. */
  readonly reasons: readonly string[];
  /** What happened, in one sentence. */
  readonly about: string;
}

const TOKEN_REASONS = [
  'missing',
  'invalid_request',
  'malformed',
  'too_large',
  'duplicate_member',
  'unsupported_alg',
  'unsupported_crit',
  'alg_mismatch',
  'unknown_kid',
  'bad_signature',
  'expired',
  'not_yet_valid',
  'issued_in_future',
  'too_old',
  'missing_claim',
  'invalid_claim',
  'wrong_issuer',
  'wrong_audience',
  'wrong_typ',
  'wrong_nonce',
  'revoked',
  'insufficient_authentication',
  'dpop_required',
  'other',
] as const;

/**
 * Every event type, its outcome, its reason codes and what it means.
 *
 * @example
 * SECURITY_EVENT_TYPES['signin.failed'].reasons.includes('bad_credentials'); // true
 */
export const SECURITY_EVENT_TYPES = {
  'signin.succeeded': { outcome: 'success', reasons: ['authenticated'], about: 'A person signed in (password, passkey, OIDC, QR).' },
  'signin.failed': {
    outcome: 'failure',
    reasons: [
      'bad_credentials',
      'missing_credentials',
      'account_disabled',
      'account_not_linked',
      'state_mismatch',
      'login_expired',
      'invalid_issuer',
      'invalid_request',
      'invalid_grant',
      'invalid_id_token',
      'provider_denied',
      'provider_error',
      'provider_misbehaved',
      'provider_unavailable',
      'cancelled',
      'passkey_rejected',
      'session_limit',
      'other',
    ],
    about: 'A sign-in was refused: wrong credentials, or a login response that did not check out.',
  },
  'request.throttled': {
    outcome: 'failure',
    reasons: [
      'login_per_network',
      'login_per_account_and_network',
      'login_per_account',
      'second_factor',
      'passkey',
      'password_reset_per_address',
      'password_reset_per_network',
      'qr_requests',
      'qr_tokens',
      'other',
    ],
    about: 'An attempt was refused by a throttle before anything was checked; the reason names the limit.',
  },
  'stepup.succeeded': { outcome: 'success', reasons: ['authenticated'], about: 'A signed-in person proved a further factor.' },
  'stepup.failed': {
    outcome: 'failure',
    reasons: ['wrong_code', 'wrong_password', 'code_reused', 'passkey_rejected', 'expired', 'other'],
    about: 'A further factor was refused at the step-up page.',
  },
  'factor.added': { outcome: 'success', reasons: ['enrolled'], about: 'A second factor or passkey was added.' },
  'factor.removed': { outcome: 'success', reasons: ['self_service', 'admin'], about: 'A second factor or passkey was removed.' },
  'factor.renamed': { outcome: 'success', reasons: ['self_service'], about: 'A passkey was renamed.' },
  'factor.used': {
    outcome: 'success',
    reasons: ['signin', 'stepup'],
    about: 'A factor was used (a recovery code is factor `recovery_code`, with the codes remaining).',
  },
  'password.changed': { outcome: 'success', reasons: ['self_service', 'reset', 'admin'], about: 'A password was changed.' },
  'password.change_refused': {
    outcome: 'failure',
    reasons: ['wrong_current_password', 'policy', 'breached', 'other'],
    about: 'A password change was refused.',
  },
  'password.reset_requested': {
    outcome: 'success',
    reasons: ['self_service', 'admin'],
    about: 'A password reset link was asked for (the answer is the same for unknown addresses).',
  },
  'password.reset': { outcome: 'success', reasons: ['link'], about: 'A password was set through a reset link.' },
  'password.reset_refused': {
    outcome: 'failure',
    reasons: ['invalid_link', 'expired_link', 'used_link', 'second_factor_required', 'policy'],
    about: 'A reset link was refused.',
  },
  'email.changed': { outcome: 'success', reasons: ['verified', 'admin'], about: 'An account email address changed.' },
  'account.created': { outcome: 'success', reasons: ['admin', 'self_service'], about: 'An account was created.' },
  'account.disabled': { outcome: 'success', reasons: ['admin'], about: 'An account was disabled; its sessions end.' },
  'account.enabled': { outcome: 'success', reasons: ['admin'], about: 'A disabled account was enabled again.' },
  'account.removed': { outcome: 'success', reasons: ['admin', 'self_service'], about: 'An account was removed; its sessions end.' },
  'notification.sent': { outcome: 'success', reasons: ['delivered'], about: 'A security notification mail was handed to the mailer.' },
  'notification.failed': { outcome: 'failure', reasons: ['mailer_error'], about: 'A security notification mail could not be sent.' },
  'session.created': { outcome: 'success', reasons: ['login'], about: 'A signed-in session was created (a new session id).' },
  'session.renewed': {
    outcome: 'success',
    reasons: ['step_up', 'password_changed', 'reauthenticated'],
    about: 'A signed-in session got a new id, keeping its user (after a step-up, a password change).',
  },
  'session.ended': {
    outcome: 'success',
    reasons: [
      'logout',
      'expired',
      'revoked',
      'everywhere',
      'admin',
      'backchannel',
      'provider_logout',
      'account_disabled',
      'account_removed',
      'password_changed',
      'session_limit',
    ],
    about: 'One or more sessions ended; the reason says how.',
  },
  'csrf.refused': {
    outcome: 'failure',
    reasons: ['cross_site', 'no_host', 'origin_not_allowed', 'referer_not_allowed', 'no_origin'],
    about: 'A state-changing request was refused because it did not come from an allowed page.',
  },
  'access.denied': {
    outcome: 'failure',
    reasons: [
      'no_rule',
      'rule_denied',
      'permission_denied',
      'not_authenticated',
      'insufficient_authentication',
      'insufficient_scope',
      'insufficient_claims',
      'untrusted_proxy',
      'malformed_request',
    ],
    about: 'An authenticated (or anonymous) request was refused by an access rule or permission.',
  },
  'token.refused': { outcome: 'failure', reasons: TOKEN_REASONS, about: 'A Bearer (or DPoP) access token was refused.' },
  'refresh_token.reused': {
    outcome: 'failure',
    reasons: ['reused', 'client_mismatch', 'key_mismatch'],
    about:
      'A rotated refresh token came back (or another client, or a request without its DPoP key, presented it): its whole grant was revoked.',
  },
  'dpop.proof_refused': {
    outcome: 'failure',
    reasons: [
      'proof_missing',
      'proof_multiple',
      'proof_malformed',
      'proof_too_large',
      'duplicate_member',
      'wrong_typ',
      'unsupported_alg',
      'unsupported_crit',
      'bad_jwk',
      'private_jwk',
      'bad_signature',
      'missing_claim',
      'invalid_claim',
      'wrong_htm',
      'wrong_htu',
      'stale',
      'issued_in_future',
      'wrong_ath',
      'nonce_required',
      'wrong_nonce',
      'replayed',
      'key_mismatch',
      'token_not_bound',
      'bound_token_as_bearer',
      'dpop_required',
      'scheme_mismatch',
    ],
    about: 'A DPoP proof, or the way a request used one, was refused (the reasons are those of DpopError).',
  },
  'client_assertion.refused': {
    outcome: 'failure',
    reasons: ['invalid', 'replayed', 'wrong_audience', 'expired', 'unknown_key', 'other'],
    about: 'A client authentication assertion (private_key_jwt) was refused.',
  },
  'provider.token.issued': {
    outcome: 'success',
    reasons: ['authorization_code', 'refresh_token', 'client_credentials', 'other'],
    about: 'The OpenID Provider issued tokens at its token endpoint; the reason is the grant type.',
  },
  'provider.token.refused': {
    outcome: 'failure',
    reasons: [
      'invalid_grant',
      'invalid_client',
      'unauthorized_client',
      'invalid_request',
      'invalid_scope',
      'unsupported_grant_type',
      'invalid_dpop_proof',
      'use_dpop_nonce',
      'other',
    ],
    about: 'The OpenID Provider refused a token request.',
  },
  'provider.authorization.refused': {
    outcome: 'failure',
    reasons: [
      'invalid_request',
      'invalid_client',
      'invalid_redirect_uri',
      'unauthorized_client',
      'access_denied',
      'login_required',
      'consent_required',
      'interaction_required',
      'invalid_scope',
      'invalid_request_uri',
      'unsupported_response_type',
      'other',
    ],
    about: 'The OpenID Provider refused an authorization request.',
  },
  'provider.consent.granted': { outcome: 'success', reasons: ['user'], about: 'A person allowed a client the scopes it asked for.' },
  'provider.consent.denied': { outcome: 'failure', reasons: ['user'], about: 'A person refused a client at the consent page.' },
  'provider.consent.withdrawn': { outcome: 'success', reasons: ['user', 'admin'], about: 'A consent given to a client was withdrawn.' },
  'provider.grant.revoked': {
    outcome: 'success',
    reasons: ['token_revocation', 'token_reuse', 'session_ended', 'consent_withdrawn', 'account_disabled', 'other'],
    about: "A client's grant (its codes, access and refresh tokens) was revoked.",
  },
  'provider.backchannel.failed': {
    outcome: 'failure',
    reasons: ['delivery_failed'],
    about: 'A back-channel logout token could not be delivered to a client (its tokens are revoked anyway).',
  },
  'provider.par.refused': {
    outcome: 'failure',
    reasons: ['invalid_request', 'invalid_client', 'request_uri_reused', 'other'],
    about: 'A pushed authorization request was refused.',
  },
  'qr.scanned': { outcome: 'success', reasons: ['scanned'], about: 'A signed-in phone user scanned a QR login request.' },
  'qr.confirmed': { outcome: 'success', reasons: ['confirmed'], about: 'The scanning user confirmed a QR login.' },
  'qr.denied': { outcome: 'failure', reasons: ['denied'], about: 'The scanning user denied a QR login.' },
  'qr.expired': { outcome: 'failure', reasons: ['expired'], about: 'A decision arrived for a QR login request that had expired.' },
  'qr.refused': {
    outcome: 'failure',
    reasons: ['not_scanner', 'illegal_transition'],
    about: 'A QR login decision was refused: not the user who scanned, or not allowed in its state.',
  },
  'store.unavailable': {
    outcome: 'failure',
    reasons: ['store_unavailable'],
    about: 'A store (Redis, PostgreSQL) did not answer and the request was answered 503 (fail closed).',
  },
  'error.internal': {
    outcome: 'failure',
    reasons: ['internal_error', 'bad_gateway', 'dependency_unavailable', 'other'],
    about: 'A request was answered 5xx for another reason than a store outage (the error handler line).',
  },
} as const satisfies Record<string, SecurityEventTypeSpec>;

/** Every event type of the vocabulary. */
export type SecurityEventType = keyof typeof SECURITY_EVENT_TYPES;

/** The reason codes of one type. */
export type SecurityEventReason<T extends SecurityEventType> = (typeof SECURITY_EVENT_TYPES)[T]['reasons'][number];

/** Second factors and passkeys, as events name them. */
export type SecurityEventFactor = 'totp' | 'recovery_code' | 'recovery_codes' | 'passkey' | 'password' | (string & {});

/** The fields one type carries besides the common ones (see {@link SecurityEventFacts}). */
export interface SecurityEventFields {
  'signin.succeeded': { method: string; provider?: string; factors?: readonly string[] };
  'signin.failed': { method: string; provider?: string };
  'request.throttled': { method?: string; retryAfterSeconds?: number };
  'stepup.succeeded': { factor: SecurityEventFactor; acr?: string };
  'stepup.failed': { factor: SecurityEventFactor };
  'factor.added': { factor: SecurityEventFactor; remaining?: number };
  'factor.removed': { factor: SecurityEventFactor };
  'factor.renamed': { factor: SecurityEventFactor };
  'factor.used': { factor: SecurityEventFactor; remaining?: number };
  'password.changed': object;
  'password.change_refused': object;
  'password.reset_requested': object;
  'password.reset': object;
  'password.reset_refused': object;
  'email.changed': object;
  'account.created': object;
  'account.disabled': object;
  'account.enabled': object;
  'account.removed': object;
  'notification.sent': { kind: string };
  'notification.failed': { kind: string };
  'session.created': { method: string };
  'session.renewed': { previousSessionHandle?: string };
  'session.ended': { count?: number; provider?: string };
  'csrf.refused': { guard: string };
  'access.denied': { route?: string; rule?: string; permission?: string };
  'token.refused': { realm?: string };
  'refresh_token.reused': object;
  'dpop.proof_refused': object;
  'client_assertion.refused': object;
  'provider.token.issued': object;
  'provider.token.refused': { grantType?: string };
  'provider.authorization.refused': object;
  'provider.consent.granted': { scopes?: readonly string[] };
  'provider.consent.denied': object;
  'provider.consent.withdrawn': object;
  'provider.grant.revoked': object;
  'provider.backchannel.failed': object;
  'provider.par.refused': object;
  'qr.scanned': object;
  'qr.confirmed': object;
  'qr.denied': object;
  'qr.expired': object;
  'qr.refused': object;
  'store.unavailable': { status: number; httpMethod?: string; path?: string; route?: string };
  'error.internal': { status: number; code: string; errorName?: string; httpMethod?: string; path?: string; route?: string };
}

/**
 * What an emitter may state about the person and the request besides the type's own fields. Each is optional: the
 * request supplies the rest (the signed-in user, the session, the network, the user agent, the host).
 */
export interface SecurityEventFacts {
  /** The user the event is about (`<source>|<subject>`), when it is not (or not yet) `req.user`. */
  userId?: string;
  /** The username a sign-in attempt typed; only a keyed hash of it is recorded (`usernameHash`). */
  username?: string;
  /** The public handle of the session the event is about (see `SessionManager.handleOf`), never the session id. */
  sessionHandle?: string;
  /** The OAuth client (or QR app) concerned. */
  clientId?: string;
  /** Who acted on someone else's behalf (an administrator ending a user's sessions). */
  actorId?: string;
}

/** What an emitter passes for one event: its reason, the type's fields and any {@link SecurityEventFacts}. */
export type SecurityEventInput<T extends SecurityEventType> = SecurityEventFacts &
  SecurityEventFields[T] & {
    reason: SecurityEventReason<T>;
  };

// Every type has its fields, and no field row names a type that does not exist.
type SameKeys<A, B> = [Exclude<keyof A, keyof B>, Exclude<keyof B, keyof A>] extends [never, never] ? true : never;
const vocabularyIsComplete: SameKeys<SecurityEventFields, typeof SECURITY_EVENT_TYPES> = true;
void vocabularyIsComplete;

/**
 * True when `reason` is one of the reasons the vocabulary lists for `type`.
 *
 * @example
 * isKnownReason('csrf.refused', 'cross_site'); // true
 */
export function isKnownReason(type: SecurityEventType, reason: string): boolean {
  return (SECURITY_EVENT_TYPES[type].reasons as readonly string[]).includes(reason);
}
