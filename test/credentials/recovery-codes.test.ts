import { randomBytes } from 'node:crypto';
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

  it('makes ten distinct codes of the form XXXXX-XXXXX and stores only keyed hashes', async () => {
    const recovery = new RecoveryCodes(credentials, createSecretSealer({ key }));
    const setCodes = jest.spyOn(credentials, 'setRecoveryCodes');
    const codes = await recovery.regenerate(USER);
    expect(codes).toHaveLength(10);
    expect(new Set(codes).size).toBe(10);
    for (const code of codes) expect(code).toMatch(/^[2-9A-HJKMNP-TV-Z]{5}-[2-9A-HJKMNP-TV-Z]{5}$/);
    const stored = setCodes.mock.calls[0]?.[1] ?? [];
    expect(stored).toHaveLength(10);
    for (const code of codes) expect(stored.join(' ')).not.toContain(code.replace('-', ''));
    expect(await recovery.remaining(USER)).toBe(10);
  });

  it('accepts each code once, typed in any case with or without the dash', async () => {
    const recovery = new RecoveryCodes(credentials, createSecretSealer({ key }));
    const [first, second] = await recovery.regenerate(USER);
    expect(await recovery.use(USER, first!.toLowerCase().replace('-', ' '))).toBe(true);
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
