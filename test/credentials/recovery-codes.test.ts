import { createHmac, randomBytes } from 'node:crypto';
import { createSecretSealer, KeyValueCredentialStore, RecoveryCodes } from '../../lib/credentials';
import { MemoryStore } from '../../lib/store';

const USER = 'directory:local|alice';

describe('RecoveryCodes', () => {
  let store: MemoryStore;
  let credentials: KeyValueCredentialStore;
  const key = randomBytes(32);
  beforeEach(() => {
    store = new MemoryStore();
    credentials = new KeyValueCredentialStore(store);
  });
  afterEach(() => store.close());

  it('makes ten distinct codes of five groups of five characters, at least 112 bits each, and stores only keyed hashes', async () => {
    const recovery = new RecoveryCodes(credentials, createSecretSealer({ key }));
    const setCodes = jest.spyOn(credentials, 'setRecoveryCodes');
    const codes = await recovery.regenerate(USER);
    expect(codes).toHaveLength(10);
    expect(new Set(codes).size).toBe(10);
    for (const code of codes) expect(code).toMatch(/^[2-9A-HJKMNP-TV-Z]{5}(?:-[2-9A-HJKMNP-TV-Z]{5}){4}$/);
    const stored = setCodes.mock.calls[0]?.[1] ?? [];
    expect(stored).toHaveLength(10);
    for (const code of codes) expect(stored.join(' ')).not.toContain(code.replace(/-/g, '').slice(0, 10));
    expect(await recovery.remaining(USER)).toBe(10);
  });

  it('draws every character of every code at random from the 30-letter alphabet: 25 x log2(30) = 122 bits (ASVS 6.5.2 asks 112)', async () => {
    const recovery = new RecoveryCodes(credentials, createSecretSealer({ key }));
    const codes: string[] = [];
    for (let set = 0; set < 30; set += 1) codes.push(...(await recovery.regenerate(`directory:local|user${set}`)));
    const letters = codes.map((code) => code.replace(/-/g, ''));
    const alphabet = new Set(letters.join(''));
    expect(alphabet.size).toBe(30);
    const length = letters[0]!.length;
    expect(length * Math.log2(alphabet.size)).toBeGreaterThanOrEqual(112);
    // Every position takes (nearly) every letter over 300 codes; a fixed or derived character would not.
    for (let position = 0; position < length; position += 1) {
      expect(new Set(letters.map((code) => code[position])).size).toBeGreaterThanOrEqual(24);
    }
    expect(new Set(codes).size).toBe(codes.length);
  });

  it('keeps accepting a code of the earlier 10-character format, once, until the set is replaced', async () => {
    // Stored as earlier versions stored them: HMAC-SHA-256 of "<user id>\0<code>" under the derived key.
    const sealer = createSecretSealer({ key });
    const hashKey = sealer.derivedKeys('recovery codes')[0]!;
    const legacyHash = (code: string) => createHmac('sha256', hashKey).update(USER).update('\0').update(code).digest('base64url');
    await credentials.setRecoveryCodes(USER, ['ABCDE23456', 'FGHJK78923'].map(legacyHash));
    const recovery = new RecoveryCodes(credentials, sealer);
    expect(await recovery.use(USER, 'abcde-23456')).toBe(true);
    expect(await recovery.use(USER, 'ABCDE-23456')).toBe(false);
    expect(await recovery.remaining(USER)).toBe(1);
    await recovery.regenerate(USER);
    expect(await recovery.use(USER, 'FGHJK-78923')).toBe(false);
  });

  it('accepts each code once, typed in any case with or without the dash', async () => {
    const recovery = new RecoveryCodes(credentials, createSecretSealer({ key }));
    const [first, second] = await recovery.regenerate(USER);
    expect(await recovery.use(USER, first!.toLowerCase().replace(/-/g, ' '))).toBe(true);
    expect(await recovery.use(USER, first!)).toBe(false);
    expect(await recovery.use(USER, second!)).toBe(true);
    expect(await recovery.remaining(USER)).toBe(8);
  });

  it('clears every code of one user, leaving other users’ codes', async () => {
    const recovery = new RecoveryCodes(credentials, createSecretSealer({ key }));
    const [first] = await recovery.regenerate(USER);
    const [others] = await recovery.regenerate('directory:local|bob');
    await recovery.clear(USER);
    expect(await recovery.remaining(USER)).toBe(0);
    expect(await recovery.use(USER, first!)).toBe(false);
    expect(await recovery.use('directory:local|bob', others!)).toBe(true);
  });

  it('never accepts one user’s code for another user', async () => {
    const recovery = new RecoveryCodes(credentials, createSecretSealer({ key }));
    const [code] = await recovery.regenerate(USER);
    await recovery.regenerate('directory:local|bob');
    expect(await recovery.use('directory:local|bob', code!)).toBe(false);
  });

  it('keeps working after the sealing key is rotated', async () => {
    const [code] = await new RecoveryCodes(credentials, createSecretSealer({ key })).regenerate(USER);
    const rotated = new RecoveryCodes(credentials, createSecretSealer({ key: randomBytes(32), previousKeys: [key] }));
    expect(await rotated.use(USER, code!)).toBe(true);
    const unrelated = new RecoveryCodes(credentials, createSecretSealer({ key: randomBytes(32) }));
    const [other] = await rotated.regenerate(USER);
    expect(await unrelated.use(USER, other!)).toBe(false);
  });
});
