import { QrLoginRequests } from '../../lib/qr/qr-login-requests';
import type { KeyValueStore } from '../../lib/store';
import { keysByPrefix, testRedisStore } from '../helpers/redis';

let redis: Awaited<ReturnType<typeof testRedisStore>>;
let requests: QrLoginRequests;

beforeAll(async () => {
  redis = await testRedisStore('qr-requests');
  requests = new QrLoginRequests(redis.store);
});

afterAll(() => redis.cleanup());

function create(validitySeconds = 180, on: QrLoginRequests = requests) {
  return on.create({
    appid: 'shop',
    redirectUri: 'https://shop.example.test/callback/qr',
    state: 's',
    bindingHash: 'h',
    requester: { ip: '127.0.0.1', userAgent: 'test' },
    validitySeconds,
  });
}

describe('QrLoginRequests', () => {
  it('stores a new request under a hash-tagged key with the validity plus the retention as TTL', async () => {
    const record = await create(180);
    const ttl = await redis.store.ttlMillis(`qr:{${record.authCode}}`);
    expect(ttl).toBeGreaterThan(770_000);
    expect(ttl).toBeLessThanOrEqual(780_000);
    expect(await requests.get(record.authCode)).toEqual(record);
  });

  it('does not look up a malformed auth_code', async () => {
    expect(await requests.get('../../etc')).toBeNull();
    expect(await requests.transition('x', 'scanned', 'alice', 300)).toEqual({ ok: false, reason: 'not_found' });
  });

  it('has exactly one winner among 100 concurrent confirmations issued together (compare-and-set)', async () => {
    const record = await create();
    expect((await requests.transition(record.authCode, 'scanned', 'alice', 300)).ok).toBe(true);
    // All 100 reads go out before any write comes back, so only the compare-and-set can keep a single winner.
    const results = await Promise.all(Array.from({ length: 100 }, () => requests.transition(record.authCode, 'confirmed', 'alice', 300)));
    expect(results.filter((result) => result.ok)).toHaveLength(1);
    expect(results.filter((result) => !result.ok && result.reason === 'illegal_transition')).toHaveLength(99);
  });

  it('has exactly one winner among 100 concurrent redemptions of one code, the others learn the grant', async () => {
    const record = await create();
    await requests.transition(record.authCode, 'scanned', 'alice', 300);
    const confirmed = await requests.transition(record.authCode, 'confirmed', 'alice', 300);
    const code = confirmed.ok ? confirmed.record.code! : '';
    const results = await Promise.all(Array.from({ length: 100 }, () => requests.redeemCode(code, 'shop')));
    const winners = results.filter((result) => result.ok);
    expect(winners).toHaveLength(1);
    const grantId = winners[0]!.ok ? winners[0]!.code.grantId : '';
    expect(results.filter((result) => !result.ok && result.reason === 'code_used' && result.grantId === grantId)).toHaveLength(99);
  });

  it('refuses a code once its validity has passed', async () => {
    const record = await create();
    await requests.transition(record.authCode, 'scanned', 'alice', 1);
    const confirmed = await requests.transition(record.authCode, 'confirmed', 'alice', 1);
    const code = confirmed.ok ? confirmed.record.code! : '';
    const ttl = await redis.store.ttlMillis(`qr:code:{${code}}`);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(1000);
    await new Promise((resolve) => setTimeout(resolve, 1100));
    expect(await requests.redeemCode(code, 'shop')).toEqual({ ok: false, reason: 'invalid_code' });
  });

  it('refuses to redeem a code for another appid', async () => {
    const record = await create();
    await requests.transition(record.authCode, 'scanned', 'alice', 300);
    const confirmed = await requests.transition(record.authCode, 'confirmed', 'alice', 300);
    expect(await requests.redeemCode(confirmed.ok ? confirmed.record.code! : '', 'admin')).toEqual({ ok: false, reason: 'invalid_code' });
  });

  it('lets the redirect be collected once', async () => {
    const record = await create();
    await requests.transition(record.authCode, 'scanned', 'alice', 300);
    const confirmed = await requests.transition(record.authCode, 'confirmed', 'alice', 300);
    const results = await Promise.all(Array.from({ length: 20 }, () => requests.collect(confirmed.ok ? confirmed.record : record)));
    expect(results.filter(Boolean)).toHaveLength(1);
  });

  it('publishes every transition to subscribers', async () => {
    const record = await create();
    const seen: string[] = [];
    let arrivedBoth: () => void = () => undefined;
    const arrived = new Promise<void>((resolve) => {
      arrivedBoth = resolve;
    });
    const unsubscribe = await requests.subscribe(record.authCode, (event) => {
      seen.push(event.status);
      if (seen.length === 2) arrivedBoth();
    });
    await requests.transition(record.authCode, 'scanned', 'alice', 300);
    await requests.transition(record.authCode, 'denied', 'alice', 300);
    await arrived;
    await unsubscribe();
    expect(seen).toEqual(['scanned', 'denied']);
  });

  it("writes a confirmation's code before the swap that reveals it, so whoever hears of it finds the code", async () => {
    const calls: string[] = [];
    // The store as the requests see it, with the order in which they issue their writes (on one Redis connection,
    // the order Redis runs them in).
    const recording = new Proxy(redis.store, {
      get(target, name, receiver) {
        const value = Reflect.get(target, name, receiver) as unknown;
        if (typeof value !== 'function') return value;
        return (...args: unknown[]) => {
          if (name === 'set' || name === 'compareAndSetThenPublish') calls.push(`${name} ${String(args[0]).replace(/\{.*/, '')}`);
          return (value as (...values: unknown[]) => unknown).apply(target, args);
        };
      },
    }) as KeyValueStore;
    const recorded = new QrLoginRequests(recording);
    const record = await create(180, recorded);
    let found: Promise<string | null> | undefined;
    let heard: () => void = () => undefined;
    const confirmedHeard = new Promise<void>((resolve) => {
      heard = resolve;
    });
    const unsubscribe = await recorded.subscribe(record.authCode, (event) => {
      if (event.status !== 'confirmed') return;
      // Read the moment the confirmation is heard.
      found = keysByPrefix(redis.client, `${redis.prefix}qr:code:`).then(async (keys) => {
        const values = await Promise.all(keys.map((key) => redis.client.get(key)));
        return values.find((value) => value?.includes(record.authCode)) ?? null;
      });
      heard();
    });
    await recorded.transition(record.authCode, 'scanned', 'alice', 300);
    calls.length = 0;
    const confirmed = await recorded.transition(record.authCode, 'confirmed', 'alice', 300);
    await confirmedHeard;
    await unsubscribe();
    expect(confirmed.ok).toBe(true);
    expect(calls).toEqual(['set qr:code:', 'compareAndSetThenPublish qr:']);
    expect(await found).toContain('"userId":"alice"');
  });

  it('on a store without compareAndSetThenPublish, swaps and then publishes, and only what it swapped', async () => {
    const plain = new Proxy(redis.store, {
      get: (target, name, receiver) => (name === 'compareAndSetThenPublish' ? undefined : (Reflect.get(target, name, receiver) as unknown)),
      has: (target, name) => name !== 'compareAndSetThenPublish' && Reflect.has(target, name),
    }) as KeyValueStore;
    const onPlain = new QrLoginRequests(plain);
    const record = await create(180, onPlain);
    const statuses: string[] = [];
    const unsubscribe = await onPlain.subscribe(record.authCode, (event) => statuses.push(event.status));
    expect((await onPlain.transition(record.authCode, 'scanned', 'alice', 300)).ok).toBe(true);
    expect((await new QrLoginRequests(plain).transition(record.authCode, 'denied', 'alice', 300)).ok).toBe(true);
    // Guessing "scanned", this instance's confirmation loses its swap: nothing is announced for it.
    expect((await onPlain.transition(record.authCode, 'confirmed', 'alice', 300)).ok).toBe(false);
    for (let i = 0; i < 50 && statuses.length < 2; i += 1) await new Promise((resolve) => setTimeout(resolve, 10));
    await new Promise((resolve) => setTimeout(resolve, 50));
    await unsubscribe();
    expect(statuses).toEqual(['scanned', 'denied']);
  });

  describe('with two instances on one store (each guesses a key holds what it wrote last)', () => {
    it('announces only the confirmation that won, and leaves no code of the one that lost its swap', async () => {
      const record = await create();
      const statuses: string[] = [];
      const unsubscribe = await requests.subscribe(record.authCode, (event) => statuses.push(event.status));
      expect((await requests.transition(record.authCode, 'scanned', 'alice', 300)).ok).toBe(true);
      // Another instance confirms; this one still guesses "scanned", so its own confirmation is judged legal,
      // written with a code of its own, and loses its compare-and-set.
      const won = await new QrLoginRequests(redis.store).transition(record.authCode, 'confirmed', 'alice', 300);
      expect(won.ok).toBe(true);
      expect(await requests.transition(record.authCode, 'confirmed', 'alice', 300)).toEqual({
        ok: false,
        reason: 'illegal_transition',
        status: 'confirmed',
      });
      await new Promise((resolve) => setTimeout(resolve, 100));
      await unsubscribe();
      expect(statuses).toEqual(['scanned', 'confirmed']);
      const codes = await keysByPrefix(redis.client, `${redis.prefix}qr:code:`);
      const ofThisRequest = (await Promise.all(codes.map((key) => redis.client.get(key)))).filter((value) =>
        value?.includes(record.authCode),
      );
      expect(ofThisRequest).toHaveLength(1);
      expect(won.ok && ofThisRequest[0]).toContain(`"authCode":"${record.authCode}"`);
      expect(await redis.store.get(`qr:code:{${won.ok ? won.record.code : ''}}`)).toBe(ofThisRequest[0]);
    });

    it('judges a step against the current value when another instance moved the request on', async () => {
      const record = await create();
      const other = new QrLoginRequests(redis.store);
      expect((await other.transition(record.authCode, 'scanned', 'alice', 300)).ok).toBe(true);
      expect((await other.transition(record.authCode, 'denied', 'alice', 300)).ok).toBe(true);
      // This instance still guesses "pending": scanning that would be allowed, but the stored request is denied.
      expect(await requests.transition(record.authCode, 'scanned', 'bob', 300)).toEqual({
        ok: false,
        reason: 'illegal_transition',
        status: 'denied',
      });
      expect((await requests.get(record.authCode))?.status).toBe('denied');
    });

    it('lets the step through after reading when the guess is out of date but the step is still legal', async () => {
      const record = await create();
      const other = new QrLoginRequests(redis.store);
      expect((await other.transition(record.authCode, 'scanned', 'alice', 300)).ok).toBe(true);
      // Guessing "pending" forbids a confirmation; the stored "scanned" allows it.
      const confirmed = await requests.transition(record.authCode, 'confirmed', 'alice', 300);
      expect(confirmed.ok && confirmed.record.scannedBy).toBe('alice');
      expect((await requests.get(record.authCode))?.status).toBe('confirmed');
    });

    it('refuses a code this instance minted once another instance redeemed it', async () => {
      const record = await create();
      await requests.transition(record.authCode, 'scanned', 'alice', 300);
      const confirmed = await requests.transition(record.authCode, 'confirmed', 'alice', 300);
      const code = confirmed.ok ? confirmed.record.code! : '';
      const won = await new QrLoginRequests(redis.store).redeemCode(code, 'shop');
      const grantId = won.ok ? won.code.grantId : 'none';
      expect(await requests.redeemCode(code, 'shop')).toEqual({ ok: false, reason: 'code_used', grantId });
    });

    it('refuses a request this instance created once it is gone from the store', async () => {
      const record = await create();
      await redis.store.delete(`qr:{${record.authCode}}`);
      expect(await requests.transition(record.authCode, 'scanned', 'alice', 300)).toEqual({ ok: false, reason: 'not_found' });
      expect(await redis.store.get(`qr:{${record.authCode}}`)).toBeNull();
    });
  });
});
