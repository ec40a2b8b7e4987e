import fc from 'fast-check';
import {
  applyTransition,
  effectiveStatus,
  isTerminal,
  parseRecord,
  type QrLoginRecord,
  type QrLoginTransition,
} from '../../lib/qr/qr-state';

const NOW = 1_700_000_000_000;

function record(overrides: Partial<QrLoginRecord> = {}): QrLoginRecord {
  return {
    v: 1,
    authCode: 'a'.repeat(32),
    appid: 'shop',
    redirectUri: 'https://shop.example.test/callback/qr',
    state: 's1',
    status: 'pending',
    createdAt: NOW,
    expiresAt: NOW + 180_000,
    bindingHash: 'h',
    requester: { ip: '127.0.0.1', userAgent: 'test' },
    ...overrides,
  };
}

const mint = () => 'code-'.padEnd(32, 'x');

describe('effectiveStatus', () => {
  it('reports a pending or scanned request as expired once its validity has passed', () => {
    expect(effectiveStatus(record(), NOW + 179_999)).toBe('pending');
    expect(effectiveStatus(record(), NOW + 180_000)).toBe('expired');
    expect(effectiveStatus(record({ status: 'scanned' }), NOW + 180_000)).toBe('expired');
  });

  it('keeps a decided request decided after the validity', () => {
    expect(effectiveStatus(record({ status: 'confirmed' }), NOW + 999_999)).toBe('confirmed');
    expect(effectiveStatus(record({ status: 'denied' }), NOW + 999_999)).toBe('denied');
  });
});

describe('applyTransition', () => {
  it('moves pending to scanned and records the scanning user', () => {
    const result = applyTransition(record(), 'scanned', 'alice', NOW + 1);
    expect(result).toEqual({ ok: true, record: expect.objectContaining({ status: 'scanned', scannedBy: 'alice', scannedAt: NOW + 1 }) });
  });

  it('refuses a second scan, by another phone or the same one, and keeps the first scanner', () => {
    const scanned = record({ status: 'scanned', scannedBy: 'alice', scannedAt: NOW });
    for (const user of ['mallory', 'alice']) {
      expect(applyTransition(scanned, 'scanned', user, NOW + 1)).toEqual({ ok: false, reason: 'illegal_transition', status: 'scanned' });
    }
    expect(applyTransition(scanned, 'confirmed', 'alice', NOW + 2, mint)).toMatchObject({ ok: true, record: { status: 'confirmed' } });
  });

  it('lets only the scanning user confirm, and mints the code at confirmation', () => {
    const scanned = record({ status: 'scanned', scannedBy: 'alice' });
    expect(applyTransition(scanned, 'confirmed', 'mallory', NOW, mint)).toEqual({ ok: false, reason: 'not_scanner', status: 'scanned' });
    const result = applyTransition(scanned, 'confirmed', 'alice', NOW, mint);
    expect(result.ok && result.record.status).toBe('confirmed');
    expect(result.ok && result.record.code).toBe(mint());
  });

  it('lets only the scanning user deny', () => {
    const scanned = record({ status: 'scanned', scannedBy: 'alice' });
    expect(applyTransition(scanned, 'denied', 'mallory', NOW)).toMatchObject({ ok: false, reason: 'not_scanner' });
    expect(applyTransition(scanned, 'denied', 'alice', NOW)).toMatchObject({ ok: true, record: { status: 'denied' } });
  });

  it('refuses confirming a request that was never scanned', () => {
    expect(applyTransition(record(), 'confirmed', 'alice', NOW, mint)).toEqual({
      ok: false,
      reason: 'illegal_transition',
      status: 'pending',
    });
  });

  it('refuses every transition after expiry', () => {
    for (const to of ['scanned', 'confirmed', 'denied'] as const) {
      expect(applyTransition(record({ status: 'scanned', scannedBy: 'alice' }), to, 'alice', NOW + 180_000, mint)).toEqual({
        ok: false,
        reason: 'expired',
        status: 'expired',
      });
    }
  });

  it('never leaves a terminal status, whatever is asked (property)', () => {
    fc.assert(
      fc.property(
        fc.constantFrom('confirmed' as const, 'denied' as const),
        fc.constantFrom<QrLoginTransition>('scanned', 'confirmed', 'denied'),
        fc.integer({ min: 0, max: 400_000 }),
        (status, to, offset) => {
          const result = applyTransition(record({ status, scannedBy: 'alice' }), to, 'alice', NOW + offset, mint);
          return !result.ok && isTerminal(status);
        },
      ),
    );
  });

  it('does not change the record it was given', () => {
    const original = record();
    const frozen = JSON.stringify(original);
    applyTransition(original, 'scanned', 'alice', NOW);
    expect(JSON.stringify(original)).toBe(frozen);
  });
});

describe('parseRecord', () => {
  it('accepts a stored version-1 record and refuses anything else', () => {
    expect(parseRecord(JSON.stringify(record()))).toEqual(record());
    expect(parseRecord(null)).toBeNull();
    expect(parseRecord('not json')).toBeNull();
    expect(parseRecord(JSON.stringify({ ...record(), v: 2 }))).toBeNull();
  });
});
