import Bowser from 'bowser';

/** Longest raw user agent shown when it names no known browser or system. */
const RAW_AGENT_LIMIT = 60;

/**
 * A person-readable name of the device behind a `User-Agent` header, e.g. "Chrome on Linux" or "Safari on iOS"
 * (parsed with bowser). A header that names no known browser or system is shown as sent, cut to 60 characters,
 * and an empty one as "Unknown device". The result is text: escape it before putting it in HTML.
 *
 * @example
 * describeDevice('Mozilla/5.0 (X11; Linux x86_64) … Chrome/120.0.0.0 Safari/537.36'); // 'Chrome on Linux'
 */
export function describeDevice(userAgent: string | undefined): string {
  const raw = (userAgent ?? '').trim();
  if (raw === '' || raw === 'unknown') return 'Unknown device';
  const parsed = Bowser.parse(raw);
  const browser = parsed.browser.name ?? '';
  const system = parsed.os.name ?? '';
  if (browser && system) return `${browser} on ${system}`;
  if (browser || system) return browser || system;
  return raw.length > RAW_AGENT_LIMIT ? `${raw.slice(0, RAW_AGENT_LIMIT - 1)}…` : raw;
}

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

function plural(count: number, unit: string): string {
  return `${count} ${unit}${count === 1 ? '' : 's'} ago`;
}

/**
 * How long ago an instant was, the way people say it: "just now" (under a minute, or a clock slightly ahead),
 * "5 minutes ago", "3 hours ago", "yesterday", "4 days ago", then the date (`12 March 2031`, UTC).
 *
 * @example
 * describeTimeAgo(Date.now() - 90_000); // '1 minute ago'
 */
export function describeTimeAgo(epochMillis: number, now = Date.now()): string {
  if (!Number.isFinite(epochMillis) || epochMillis <= 0) return 'at an unknown time';
  const elapsed = now - epochMillis;
  if (elapsed < MINUTE) return 'just now';
  if (elapsed < HOUR) return plural(Math.floor(elapsed / MINUTE), 'minute');
  if (elapsed < DAY) return plural(Math.floor(elapsed / HOUR), 'hour');
  if (elapsed < 2 * DAY) return 'yesterday';
  if (elapsed < 7 * DAY) return plural(Math.floor(elapsed / DAY), 'day');
  return new Date(epochMillis).toLocaleDateString('en-GB', { day: 'numeric', month: 'long', year: 'numeric', timeZone: 'UTC' });
}

/**
 * The machine-readable form of an instant for `<time datetime>`, or undefined when there is none.
 *
 * @example
 * `<time datetime="${isoTime(createdAt)}">${describeTimeAgo(createdAt)}</time>`
 */
export function isoTime(epochMillis: number): string | undefined {
  return Number.isFinite(epochMillis) && epochMillis > 0 ? new Date(epochMillis).toISOString() : undefined;
}
