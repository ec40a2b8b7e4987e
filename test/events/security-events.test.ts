import { Registry } from 'prom-client';
import { OptionsError, securityEvents, type SecurityEvent, type SecurityEventSink } from '../../lib';
import { networkOf, summarizeUserAgent } from '../../lib/events/request-facts';
import { printable } from '../../lib/events/security-event';
import { captureLogs } from '../helpers/log-capture';
import { ISO_UTC, recordEvents } from '../helpers/event-recorder';
import { MemoryStore, ssoSession } from '../../lib';
import { loginAs, ssoOptions, startSsoApp } from '../helpers/sso-apps';

/** A sink whose writes wait until the test lets them finish (or fail). */
function heldSink(name = 'held') {
  const written: SecurityEvent[] = [];
  let release: (() => void) | undefined;
  let gate = new Promise<void>((resolve) => (release = resolve));
  const sink: SecurityEventSink = {
    name,
    async write(batch) {
      await gate;
      written.push(...batch);
    },
  };
  return {
    sink,
    written,
    open() {
      release?.();
    },
    close() {
      gate = new Promise<void>((resolve) => (release = resolve));
    },
  };
}

async function metric(events: { metrics: { registry: Registry } }, line: string): Promise<number> {
  const text = await events.metrics.registry.metrics();
  const found = text.split('\n').find((candidate) => candidate.startsWith(`${line} `));
  return found === undefined ? 0 : Number(found.slice(line.length + 1));
}

describe('securityEvents options', () => {
  it('refuses unknown options, a short hash key, two sinks of one name and a shared registry', () => {
    expect(() => securityEvents({ sink: [] } as never)).toThrow(/unknown option "sink" \(did you mean "sinks"\?\)/);
    expect(() => securityEvents({ usernameHashKey: 'short' })).toThrow(/usernameHashKey must be at least 32 bytes/);
    const sink = { name: 'same', write: () => undefined };
    expect(() => securityEvents({ sinks: [sink, sink] })).toThrow(/two sinks are named "same"/);
    expect(() => securityEvents({ sinks: [{ write: () => undefined } as never] })).toThrow(/sinks\[0\] must be a sink/);
    const registry = new Registry();
    securityEvents({ sinks: [], registry });
    expect(() => securityEvents({ sinks: [], registry })).toThrow(OptionsError);
  });
});

describe('what an event holds', () => {
  it('keeps only the vocabulary\u2019s fields: a password, a token or a cookie given by mistake is dropped', async () => {
    const recorder = recordEvents();
    recorder.events.emit('signin.failed', {
      reason: 'bad_credentials',
      method: 'password',
      password: 'hunter2-hunter2',
      token: 'eyJhbGciOiJIUzI1NiJ9.e30.sig',
      cookie: 'sid=abc',
      nested: { secret: 'x' },
    } as never);
    const event = await recorder.only('signin.failed');
    expect(event).toEqual({
      time: expect.stringMatching(ISO_UTC),
      type: 'signin.failed',
      outcome: 'failure',
      reason: 'bad_credentials',
      method: 'password',
    });
    await recorder.events.close();
  });

  it('escapes control characters and line separators (ASVS 16.4.1) and bounds lengths', () => {
    expect(printable('alice\r\n2026-01-01 admin signed in\u001b[31m\u2028')).toBe(
      'alice\\u000d\\u000a2026-01-01 admin signed in\\u001b[31m\\u2028',
    );
    expect(printable('x'.repeat(1000))).toHaveLength(256);
  });

  it('records a typed username only as a keyed hash, the same for one account whatever its case', async () => {
    const one = recordEvents({ usernameHashKey: 'a'.repeat(32) });
    const other = recordEvents({ usernameHashKey: 'b'.repeat(32) });
    for (const recorder of [one, other]) {
      recorder.events.emit('signin.failed', { reason: 'bad_credentials', method: 'password', username: 'Alice' });
      recorder.events.emit('signin.failed', { reason: 'bad_credentials', method: 'password', username: 'alice' });
      await recorder.settled();
    }
    const [first, second] = one.recorded;
    expect(first!.usernameHash).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(first!.usernameHash).toBe(second!.usernameHash);
    expect(other.recorded[0]!.usernameHash).not.toBe(first!.usernameHash);
    expect(JSON.stringify(one.recorded)).not.toMatch(/alice/i);
    await one.events.close();
    await other.events.close();
  });

  it('names networks (IPv4 /32, IPv6 /64) and user agents by summary', () => {
    expect(networkOf('198.51.100.7')).toBe('198.51.100.7/32');
    expect(networkOf('::ffff:198.51.100.7')).toBe('198.51.100.7/32');
    expect(networkOf('2001:db8:1:2:a:b:c:d')).toBe('2001:db8:1:2:0:0:0:0/64');
    expect(
      summarizeUserAgent(
        'Mozilla/5.0 (iPhone; CPU iPhone OS 17_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.1 Mobile/15E148 Safari/604.1',
      ),
    ).toBe('Safari 17 on iOS');
    expect(summarizeUserAgent('curl/8.1.2')).toBe('unknown');
    expect(summarizeUserAgent('')).toBe('unknown');
  });
});

describe('sinks never hold up a request, and every loss is counted and said', () => {
  it('drops events beyond a full queue, counts them and warns once', async () => {
    const held = heldSink();
    const events = securityEvents({ sinks: [held.sink], queueCapacity: 5 });
    const logs = captureLogs({ debug: false });
    try {
      // Emitted in one turn: five fit the queue, fifteen find it full.
      for (let i = 0; i < 20; i += 1) events.emit('csrf.refused', { reason: 'cross_site', guard: 'test' });
      expect(events.status()[0]).toMatchObject({ queued: 5, dropped: { overflow: 15 } });
      // The next turn takes those five into one (held) write; the queue has room again.
      await new Promise((resolve) => setImmediate(resolve));
      for (let i = 0; i < 7; i += 1) events.emit('csrf.refused', { reason: 'cross_site', guard: 'test' });
    } finally {
      logs.stop();
    }
    expect(events.status()).toEqual([{ name: 'held', queued: 5, dropped: { overflow: 17, failed: 0, timeout: 0 }, healthy: true }]);
    expect(await metric(events, 'sso_security_events_dropped_total{sink="held",reason="overflow"}')).toBe(17);
    expect(logs.containing('securityEvents: sink "held": its queue is full')).toHaveLength(1);
    held.open();
    await events.flush();
    expect(held.written).toHaveLength(10);
  });

  it('counts a failed write as dropped, warns, and says when the sink writes again', async () => {
    let failing = true;
    const written: SecurityEvent[] = [];
    const sink: SecurityEventSink = {
      name: 'flaky',
      write(batch) {
        if (failing) return Promise.reject(new Error('connection refused'));
        written.push(...batch);
        return Promise.resolve();
      },
    };
    const events = securityEvents({ sinks: [sink] });
    const logs = captureLogs({ debug: false });
    try {
      events.emit('csrf.refused', { reason: 'cross_site', guard: 'test' });
      await events.flush();
      expect(events.status()[0]).toMatchObject({ healthy: false, dropped: { failed: 1 } });
      failing = false;
      events.emit('csrf.refused', { reason: 'no_origin', guard: 'test' });
      await events.flush();
    } finally {
      logs.stop();
    }
    expect(written.map((event) => event.reason)).toEqual(['no_origin']);
    expect(events.status()[0]).toMatchObject({ healthy: true, dropped: { failed: 1 } });
    expect(await metric(events, 'sso_security_event_sink_failures_total{sink="flaky"}')).toBe(1);
    expect(logs.containing('sink "flaky": a write failed (Error: connection refused)')).toHaveLength(1);
    expect(logs.containing('sink "flaky" writes again; 1 event(s) were lost')).toHaveLength(1);
  });

  it('gives up a write that takes longer than writeTimeoutSeconds, counted as a timeout', async () => {
    const held = heldSink('stuck');
    const events = securityEvents({ sinks: [held.sink], writeTimeoutSeconds: 0.05 });
    const logs = captureLogs({ debug: false });
    try {
      events.emit('csrf.refused', { reason: 'cross_site', guard: 'test' });
      await events.flush();
    } finally {
      logs.stop();
    }
    expect(events.status()[0]).toMatchObject({ dropped: { timeout: 1 }, healthy: false });
    expect(logs.containing('a write failed (WriteTimeout: no answer within 50 ms)')).toHaveLength(1);
    held.open();
  });

  it('never throws into the request: a sink that throws, a hook that throws', async () => {
    const events = securityEvents({
      sinks: [
        function exploding() {
          throw new Error('boom');
        },
      ],
    });
    const logs = captureLogs({ debug: false });
    try {
      expect(() => events.emit('csrf.refused', { reason: 'cross_site', guard: 'test' })).not.toThrow();
      await events.flush();
    } finally {
      logs.stop();
    }
    expect(events.status()[0]).toMatchObject({ name: 'exploding', dropped: { failed: 1 } });
  });

  it('never throws into the request when an event cannot even be built: counted and said', async () => {
    const events = securityEvents({ sinks: [() => undefined] });
    const broken = Object.defineProperty({ headers: {} }, 'ip', {
      get() {
        throw new Error('a proxy setting no one expected');
      },
    }) as never;
    const logs = captureLogs({ debug: false });
    try {
      expect(() => events.emit('csrf.refused', { reason: 'cross_site', guard: 'test' }, broken)).not.toThrow();
      expect(() => events.emit('csrf.refused', { reason: 'cross_site', guard: 'test' }, broken)).not.toThrow();
    } finally {
      logs.stop();
    }
    expect(await metric(events, 'sso_security_events_dropped_total{sink="emit",reason="failed"}')).toBe(2);
    expect(
      logs.containing('securityEvents: a csrf.refused event could not be recorded (Error: a proxy setting no one expected)'),
    ).toHaveLength(1);
  });

  it('answers a login at once while the only sink takes seconds', async () => {
    const held = heldSink('slow');
    const events = securityEvents({ sinks: [held.sink] });
    const store = new MemoryStore();
    const app = await startSsoApp(ssoSession(ssoOptions({ store, events })));
    try {
      const started = performance.now();
      for (let i = 0; i < 10; i += 1) await loginAs(app.server, 'shop.example.test', { id: `slow-${i}` });
      // Ten logins with a sink that has not written anything yet: none waited for it.
      expect(performance.now() - started).toBeLessThan(2000);
      expect(held.written).toHaveLength(0);
      held.open();
      await events.flush();
      expect(held.written.filter((event) => event.type === 'session.created')).toHaveLength(10);
    } finally {
      await app.close();
      await store.close();
    }
  });
});

describe('recentEvents', () => {
  it('needs a sink that keeps events, and a sane limit', async () => {
    const events = securityEvents({ sinks: [() => undefined] });
    await expect(events.recentEvents('u1')).rejects.toThrow(/no sink keeps events/);
    await expect(events.recentEvents('u1', { limit: 0 })).rejects.toThrow(/limit must be a whole number from 1 to 1000/);
  });
});
