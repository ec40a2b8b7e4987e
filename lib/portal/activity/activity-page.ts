import type { SecurityEvent } from '../../events/security-event';
import { escapeHtml } from '../../http/pages/escape-html';
import { renderPage } from '../../http/pages/page-shell';
import { describeTimeAgo } from '../../http/pages/readable-request';

/** One line of the activity page: what happened, in words, and whether it was a refusal. */
export interface ActivityEntry {
  time: string;
  what: string;
  failed: boolean;
  device?: string;
  network?: string;
}

const METHODS: Readonly<Record<string, string>> = {
  password: 'your password',
  passkey: 'a passkey',
  oidc: 'your organisation’s account',
  qr: 'a QR code',
  basic: 'a password (Basic)',
};

const FACTORS: Readonly<Record<string, string>> = {
  totp: 'Authenticator app',
  recovery_code: 'Recovery code',
  recovery_codes: 'Recovery codes',
  passkey: 'Passkey',
  password: 'Password',
};

const FAILURES: Readonly<Record<string, string>> = {
  bad_credentials: 'wrong password',
  missing_credentials: 'no password given',
  passkey_rejected: 'the passkey was refused',
  account_disabled: 'the account is disabled',
};

const ENDED: Readonly<Record<string, string>> = {
  admin: 'An administrator signed you out',
  everywhere: 'You signed out everywhere',
  revoked: 'A session was signed out from the sessions page',
  account_disabled: 'Your sessions ended: the account was disabled',
  password_changed: 'Your other sessions ended after a password change',
};

const ACCOUNT: Readonly<Record<string, string>> = {
  'password.changed': 'Password changed',
  'password.reset_requested': 'A password reset link was requested',
  'password.reset': 'Password reset through an emailed link',
  'email.changed': 'Email address changed',
  'account.disabled': 'Account disabled',
  'account.enabled': 'Account enabled again',
};

const factorName = (event: SecurityEvent) => FACTORS[String(event.factor)] ?? 'A second factor';

/** The sentence of one event, or undefined for events the page does not show (a plain sign-out, an expiry). */
function sentence(event: SecurityEvent): { what: string; failed: boolean } | undefined {
  switch (event.type) {
    case 'signin.succeeded':
      return { what: `Signed in with ${METHODS[String(event.method)] ?? String(event.method)}`, failed: false };
    case 'signin.failed': {
      const why = FAILURES[event.reason];
      return { what: `Failed sign-in attempt${why ? ` (${why})` : ''}`, failed: true };
    }
    case 'request.throttled':
      return { what: 'Sign-in attempts paused after too many failures', failed: true };
    case 'stepup.failed':
      return { what: `${factorName(event)} check failed`, failed: true };
    case 'factor.added':
      return { what: event.factor === 'recovery_codes' ? 'New recovery codes created' : `${factorName(event)} added`, failed: false };
    case 'factor.removed':
      return { what: `${factorName(event)} removed${event.reason === 'admin' ? ' by an administrator' : ''}`, failed: false };
    case 'factor.renamed':
      return { what: `${factorName(event)} renamed`, failed: false };
    case 'factor.used':
      return event.factor === 'recovery_code'
        ? { what: `Recovery code used${typeof event.remaining === 'number' ? ` (${event.remaining} left)` : ''}`, failed: false }
        : undefined;
    case 'session.ended': {
      const what = ENDED[event.reason];
      return what === undefined ? undefined : { what, failed: false };
    }
    default: {
      const what = ACCOUNT[event.type];
      return what === undefined ? undefined : { what, failed: false };
    }
  }
}

/**
 * The entries of the activity page from a user's recent events, newest first: sign-ins with their method, device and
 * network, failed attempts, factor changes, sessions ended by someone else; everything else is left out.
 *
 * @example
 * const entries = activityEntries(await events.recentEvents(req.user.id));
 */
export function activityEntries(events: readonly SecurityEvent[]): ActivityEntry[] {
  const entries: ActivityEntry[] = [];
  for (const event of events) {
    const said = sentence(event);
    if (said === undefined) continue;
    entries.push({
      time: event.time,
      ...said,
      ...(event.userAgent === undefined ? {} : { device: event.userAgent }),
      ...(event.network === undefined ? {} : { network: event.network }),
    });
  }
  return entries;
}

/** What the activity page shows. */
export interface ActivityPageModel {
  assetsPath: string;
  userName: string;
  entries: readonly ActivityEntry[];
  sessionsUrl: string;
  passwordChangeUrl: string;
  /** False when this site keeps no events (no stream or table sink): the page says so. */
  recorded: boolean;
  now?: number;
}

function entryItem(entry: ActivityEntry, now: number): string {
  const when = escapeHtml(describeTimeAgo(Date.parse(entry.time), now));
  const facts = [
    `<time datetime="${escapeHtml(entry.time)}">${when}</time>`,
    ...(entry.device ? [escapeHtml(entry.device)] : []),
    ...(entry.network ? [`network ${escapeHtml(entry.network)}`] : []),
  ];
  return (
    `<li><div><span class="device">${escapeHtml(entry.what)}</span>` +
    (entry.failed ? ' <strong class="badge failed">Failed</strong>' : '') +
    `<p class="facts">${facts.join(' · ')}</p></div></li>`
  );
}

/**
 * The "Recent security activity" page: the user's sign-ins (method, device, network), failed attempts on the
 * account, factor changes and sessions ended by someone else, newest first; then what to do when something was not
 * them: review and sign out sessions, change the password.
 *
 * @example
 * res.send(renderActivityPage({ assetsPath: '/portal-assets', userName: 'Alice', entries, sessionsUrl: '/sessions',
 *   passwordChangeUrl: '/password/change', recorded: true }));
 */
export function renderActivityPage(model: ActivityPageModel): string {
  const now = model.now ?? Date.now();
  const list = !model.recorded
    ? '<p class="muted">This site does not keep a record of security activity.</p>'
    : model.entries.length === 0
      ? '<p class="muted">Nothing recorded yet.</p>'
      : `<ul class="sessions activity" aria-labelledby="recent">${model.entries.map((entry) => entryItem(entry, now)).join('')}</ul>`;
  return renderPage({
    title: 'Recent security activity',
    stylesheetUrl: `${model.assetsPath}/portal.css`,
    scriptUrl: `${model.assetsPath}/portal.js`,
    width: 'wide',
    body:
      '<h1>Recent security activity</h1>' +
      `<p>Signed in as <strong>${escapeHtml(model.userName)}</strong>. Sign-ins, failed attempts and changes to how you sign in.</p>` +
      `<h2 id="recent">Recent events</h2>${list}` +
      '<h2 id="not-me">Something you do not recognise?</h2>' +
      '<p>If a sign-in or a change was not you, someone may know your password:</p>' +
      `<ul><li><a href="${escapeHtml(model.sessionsUrl)}">This wasn’t me: review and sign out your sessions</a></li>` +
      `<li><a href="${escapeHtml(model.passwordChangeUrl)}">Change your password</a></li></ul>`,
  });
}
