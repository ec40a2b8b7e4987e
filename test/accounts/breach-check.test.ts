import { BreachCheckUnavailableError, rangeBreachCheck } from '../../lib/accounts';
import { OptionsError } from '../../lib/util/options';
import { sha1Hex, startBreachRangeServer, type BreachRangeServer } from '../helpers/breach-range-server';

const BREACHED = 'tangerine-viaduct-1987';
let range: BreachRangeServer;

beforeAll(async () => {
  range = await startBreachRangeServer(new Map([[BREACHED, 4711]]), { paddingFor: ['only-padding-here-2024'] });
});
afterAll(() => range.close());
beforeEach(() => {
  range.mode = 'normal';
  range.requests.length = 0;
});

describe('rangeBreachCheck', () => {
  it('finds a breached password with its count, sending only the first five hex digits of its SHA-1, with padding asked for', async () => {
    const check = rangeBreachCheck({ url: range.url });
    expect(await check.check(BREACHED)).toEqual({ count: 4711 });
    expect(range.requests).toHaveLength(1);
    const [request] = range.requests;
    expect(request!.path).toBe(`/range/${sha1Hex(BREACHED).slice(0, 5)}`);
    expect(request!.headers['add-padding']).toBe('true');
    expect(request!.headers['user-agent']).toBe('express-sso-kit');
    // Neither the password nor the rest of its hash leaves the process.
    const sent = JSON.stringify(request);
    expect(sent).not.toContain(BREACHED);
    expect(sent).not.toContain(sha1Hex(BREACHED).slice(5));
  });

  it('answers 0 for a password not listed, and for one listed only as padding (count 0)', async () => {
    const check = rangeBreachCheck({ url: range.url });
    expect(await check.check('a-password-nobody-leaked-9431')).toEqual({ count: 0 });
    expect(await check.check('only-padding-here-2024')).toEqual({ count: 0 });
  });

  it('hashes the NFC form, so a decomposed accent finds the same entry as the composed one', async () => {
    const check = rangeBreachCheck({ url: range.url });
    const decomposed = 'tange\u0301rine-2020';
    const composed = 'tangérine-2020';
    expect(decomposed).not.toBe(composed);
    const withAccent = await startBreachRangeServer(new Map([[composed, 3]]));
    try {
      expect(await rangeBreachCheck({ url: withAccent.url }).check(decomposed)).toEqual({ count: 3 });
    } finally {
      await withAccent.close();
    }
    expect(await check.check(decomposed)).toEqual({ count: 0 });
  });

  it('sends no padding request header when told not to, and the User-Agent the app names', async () => {
    await rangeBreachCheck({ url: range.url, padding: false, userAgent: 'acme-portal/2.1' }).check('x-password-1');
    expect(range.requests[0]!.headers['add-padding']).toBeUndefined();
    expect(range.requests[0]!.headers['user-agent']).toBe('acme-portal/2.1');
  });

  it.each<[string, BreachRangeServer['mode'] | 'down', RegExp]>([
    ['answers an error status', 'error', /answered 503/],
    ['takes longer than the timeout', 'slow', /did not answer in time/],
    ['answers something that is not a range list', 'garbage', /not a range list/],
    ['answers an empty list', 'empty', /empty list/],
    ['answers more than a megabyte', 'huge', /could not be read/],
    ['cannot be reached', 'down', /could not be read/],
  ])('rejects with BreachCheckUnavailableError when the service %s', async (_label, mode, message) => {
    const url = mode === 'down' ? 'http://127.0.0.1:1/range/' : range.url;
    if (mode !== 'down') range.mode = mode;
    const started = Date.now();
    const error = await rangeBreachCheck({ url, timeoutSeconds: 0.5 })
      .check(BREACHED)
      .then(
        () => undefined,
        (thrown: unknown) => thrown,
      );
    expect(error).toBeInstanceOf(BreachCheckUnavailableError);
    expect(error).toMatchObject({ code: 'breach_check_unavailable', message: expect.stringMatching(message) });
    expect(String(error)).not.toContain(BREACHED);
    expect(Date.now() - started).toBeLessThan(3_000);
  });

  it.each<[object, RegExp]>([
    [{ url: 'http://api.example.test/range/' }, /url must be https/],
    [{ url: 'https://api.example.test/range' }, /url must end in "\/"/],
    [{ timeoutSeconds: 60 }, /timeoutSeconds must be from 0.1 to 30/],
    [{ timeoutSecond: 2 }, /unknown option "timeoutSecond" \(did you mean "timeoutSeconds"\?\)/],
  ])('refuses the options %j', (options, message) => {
    expect(() => rangeBreachCheck(options as never)).toThrow(OptionsError);
    expect(() => rangeBreachCheck(options as never)).toThrow(message);
  });
});
