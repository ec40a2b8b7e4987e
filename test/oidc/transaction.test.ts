import fc from 'fast-check';
import {
  addTransaction,
  codeChallenge,
  MAX_TRANSACTIONS,
  newTransaction,
  parseTransaction,
  takeTransaction,
  TRANSACTION_TTL_MS,
} from '../../lib/oidc/transaction';

describe('OIDC login transactions', () => {
  it('computes the RFC 7636 appendix B S256 challenge', () => {
    expect(codeChallenge('dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk')).toBe('E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM');
  });

  it('creates 256-bit state, nonce and a 43-character verifier', () => {
    const tx = newTransaction({ provider: 'corp', returnTo: '/' });
    for (const value of [tx.state, tx.nonce, tx.codeVerifier]) expect(value).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });

  it('takes a transaction once: the second take finds nothing', () => {
    const tx = newTransaction({ provider: 'corp', returnTo: '/' });
    const map = addTransaction(undefined, tx);
    const first = takeTransaction(map, tx.state);
    expect(first.transaction).toEqual(tx);
    expect(takeTransaction(first.remaining, tx.state).transaction).toBeUndefined();
  });

  it('finds nothing for a state that differs, even by one character or by prefix', () => {
    fc.assert(
      fc.property(fc.string({ minLength: 1, maxLength: 60 }), (other) => {
        const tx = newTransaction({ provider: 'corp', returnTo: '/' });
        fc.pre(other !== tx.state);
        expect(takeTransaction(addTransaction(undefined, tx), other).transaction).toBeUndefined();
        expect(takeTransaction(addTransaction(undefined, tx), tx.state.slice(0, -1)).transaction).toBeUndefined();
      }),
    );
  });

  it('drops expired transactions and keeps at most MAX_TRANSACTIONS, newest last', () => {
    const now = Date.now();
    let map: Record<string, string> | undefined;
    const old = newTransaction({ provider: 'corp', returnTo: '/', now: now - TRANSACTION_TTL_MS - 1 });
    map = addTransaction(map, old, now);
    const made = [];
    for (let i = 0; i < MAX_TRANSACTIONS + 2; i += 1) {
      const tx = newTransaction({ provider: 'corp', returnTo: '/', now: now + i });
      made.push(tx);
      map = addTransaction(map, tx, now + i);
    }
    expect(Object.keys(map!)).toHaveLength(MAX_TRANSACTIONS);
    expect(map![old.state]).toBeUndefined();
    expect(map![made[0]!.state]).toBeUndefined();
    expect(map![made[made.length - 1]!.state]).toBeDefined();
  });

  it('does not change the map it is given', () => {
    const map = addTransaction(undefined, newTransaction({ provider: 'corp', returnTo: '/' }));
    const copy = { ...map };
    addTransaction(map, newTransaction({ provider: 'corp', returnTo: '/' }));
    takeTransaction(map, Object.keys(map)[0]!);
    expect(map).toEqual(copy);
  });

  it('treats malformed stored transactions as absent', () => {
    expect(parseTransaction('{not json')).toBeUndefined();
    expect(parseTransaction(JSON.stringify({ state: 's' }))).toBeUndefined();
  });
});
