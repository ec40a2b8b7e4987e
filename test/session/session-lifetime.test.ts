import { judgeSession, storeTtlMillis, type SessionLimits } from '../../lib/session';

const limits: SessionLimits = { idleMs: 1000, absoluteMs: 5000, touchAfterMs: 100 };
const now = 1_000_000;

describe('judgeSession', () => {
  it('calls a session without meta anonymous', () => {
    expect(judgeSession(undefined, now, limits)).toBe('anonymous');
  });
  it('keeps a session used within touchAfter live without a touch', () => {
    expect(judgeSession({ createdAt: now - 2000, lastSeenAt: now - 50 }, now, limits)).toBe('live');
  });
  it('asks for a touch once the last refresh is touchAfter old', () => {
    expect(judgeSession({ createdAt: now - 2000, lastSeenAt: now - 100 }, now, limits)).toBe('touch');
  });
  it('ends a session idle for the idle timeout', () => {
    expect(judgeSession({ createdAt: now - 2000, lastSeenAt: now - 1000 }, now, limits)).toBe('expired');
  });
  it('ends a session at its absolute lifetime even when just used', () => {
    expect(judgeSession({ createdAt: now - 5000, lastSeenAt: now }, now, limits)).toBe('expired');
  });
  it('ends a session whose bookkeeping is unreadable', () => {
    expect(judgeSession({ createdAt: 'yesterday', lastSeenAt: now } as never, now, limits)).toBe('expired');
  });
});

describe('storeTtlMillis', () => {
  it('is the idle timeout counted from the last refresh', () => {
    expect(storeTtlMillis({ createdAt: now - 100, lastSeenAt: now }, now, limits)).toBe(1000);
  });
  it('never reaches past the absolute lifetime', () => {
    expect(storeTtlMillis({ createdAt: now - 4700, lastSeenAt: now }, now, limits)).toBe(300);
  });
  it('is the idle timeout for an anonymous session', () => {
    expect(storeTtlMillis(undefined, now, limits)).toBe(1000);
  });
  it('is zero or less for a session that is over', () => {
    expect(storeTtlMillis({ createdAt: now - 6000, lastSeenAt: now }, now, limits)).toBeLessThanOrEqual(0);
  });
});
