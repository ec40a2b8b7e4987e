import { describeDevice, describeTimeAgo, isoTime } from '../../../lib/http/pages/readable-request';

describe('describeDevice', () => {
  it.each([
    ['Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36', 'Chrome on Linux'],
    [
      'Mozilla/5.0 (iPhone; CPU iPhone OS 17_2 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.2 Mobile/15E148 Safari/604.1',
      'Safari on iOS',
    ],
    ['Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:121.0) Gecko/20100101 Firefox/121.0', 'Firefox on Windows'],
  ])('names %s as "%s"', (userAgent, name) => {
    expect(describeDevice(userAgent)).toBe(name);
  });

  it('shows a user agent it does not recognise as sent, cut to 60 characters', () => {
    expect(describeDevice('Laptop Browser')).toBe('Laptop Browser');
    expect(describeDevice('x'.repeat(200))).toBe(`${'x'.repeat(59)}…`);
  });

  it('says "Unknown device" when there is no user agent', () => {
    expect(describeDevice(undefined)).toBe('Unknown device');
    expect(describeDevice('  ')).toBe('Unknown device');
    expect(describeDevice('unknown')).toBe('Unknown device');
  });
});

describe('describeTimeAgo', () => {
  const now = Date.UTC(2031, 2, 12, 12);
  it.each([
    [now - 5_000, 'just now'],
    [now + 3_000, 'just now'],
    [now - 60_000, '1 minute ago'],
    [now - 59 * 60_000, '59 minutes ago'],
    [now - 2 * 3_600_000, '2 hours ago'],
    [now - 30 * 3_600_000, 'yesterday'],
    [now - 4 * 86_400_000, '4 days ago'],
    [Date.UTC(2031, 0, 5, 9), '5 January 2031'],
    [0, 'at an unknown time'],
    [Number.NaN, 'at an unknown time'],
  ])('says %s as "%s"', (instant, words) => {
    expect(describeTimeAgo(instant, now)).toBe(words);
  });

  it('keeps the exact instant for <time datetime>', () => {
    expect(isoTime(now)).toBe('2031-03-12T12:00:00.000Z');
    expect(isoTime(0)).toBeUndefined();
  });
});
