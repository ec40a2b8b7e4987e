import type { Request } from 'express';
import type { SecurityEvents } from './security-events';
import type { SecurityEventReason } from './vocabulary';

/** What a sign-in attempt states besides its outcome. */
export interface SignInFacts {
  /** The identity provider (OIDC provider name, QR app). */
  provider?: string;
  /** The username typed (recorded only as a keyed hash). */
  username?: string;
}

/** One sign-in attempt, recorded once with its outcome and how long it took to answer. */
export interface SignInAttempt {
  succeeded(facts?: SignInFacts): void;
  /** A refusal; without a reason (an outage or a fault, the error handler's to record) only the time is counted. */
  failed(reason: SecurityEventReason<'signin.failed'> | undefined, facts?: SignInFacts): void;
}

/**
 * Starts timing a sign-in attempt of `method`; its outcome becomes a `signin.succeeded` or `signin.failed` event
 * and an observation of `sso_login_duration_seconds`. Free when there are no events.
 *
 * @example
 * const attempt = signInAttempt(req, events, 'oidc', { provider: 'corp' });
 * try { await finishLogin(); attempt.succeeded(); } catch (error) { attempt.failed('invalid_grant'); throw error; }
 */
export function signInAttempt(req: Request, events: SecurityEvents | undefined, method: string, base: SignInFacts = {}): SignInAttempt {
  const started = events === undefined ? 0 : performance.now();
  const seconds = () => (performance.now() - started) / 1000;
  return {
    succeeded(facts = {}) {
      if (events === undefined) return;
      events.emit('signin.succeeded', { reason: 'authenticated', method, ...base, ...facts }, req);
      events.metrics.observeLogin(method, 'success', seconds());
    },
    failed(reason, facts = {}) {
      if (events === undefined) return;
      if (reason !== undefined) events.emit('signin.failed', { reason, method, ...base, ...facts }, req);
      events.metrics.observeLogin(method, 'failure', seconds());
    },
  };
}
