import type { Request } from 'express';
import { RESUMABLE_FORM_LIFETIME_SECONDS, takeResumableForm, type ResumableForm } from '../../lib/session';

/** A request whose session holds `kept`, saved by a save that records what it stored. */
function requestWith(kept: ResumableForm | undefined): { req: Request; saved: unknown[] } {
  const saved: unknown[] = [];
  const session = {
    ...(kept ? { stepUpResume: kept } : {}),
    save(done: (error?: unknown) => void) {
      saved.push({ stepUpResume: (session as { stepUpResume?: ResumableForm }).stepUpResume });
      done();
    },
  };
  return { req: { session } as unknown as Request, saved };
}

describe('takeResumableForm', () => {
  const form = (createdAt: number): ResumableForm => ({
    id: 'id-1',
    action: 'https://auth.example.test/sessions/revocations',
    fields: [['session', 'h']],
    createdAt,
  });

  it('gives the kept form once, taking it out of the session before it is sent on', async () => {
    const now = Date.now();
    const { req, saved } = requestWith(form(now));
    await expect(takeResumableForm(req, 'id-1', now)).resolves.toEqual(form(now));
    expect(saved).toEqual([{ stepUpResume: undefined }]);
    await expect(takeResumableForm(req, 'id-1', now)).resolves.toBeUndefined();
  });

  it('gives nothing for another id, and keeps the form for its own step-up', async () => {
    const { req, saved } = requestWith(form(Date.now()));
    await expect(takeResumableForm(req, 'id-2')).resolves.toBeUndefined();
    await expect(takeResumableForm(req, '')).resolves.toBeUndefined();
    expect(saved).toEqual([]);
    await expect(takeResumableForm(req, 'id-1')).resolves.toMatchObject({ id: 'id-1' });
  });

  it(`gives nothing once the form is older than ${RESUMABLE_FORM_LIFETIME_SECONDS} seconds, and drops it`, async () => {
    const now = Date.now();
    const fresh = requestWith(form(now - RESUMABLE_FORM_LIFETIME_SECONDS * 1000));
    await expect(takeResumableForm(fresh.req, 'id-1', now)).resolves.toMatchObject({ id: 'id-1' });
    const stale = requestWith(form(now - RESUMABLE_FORM_LIFETIME_SECONDS * 1000 - 1));
    await expect(takeResumableForm(stale.req, 'id-1', now)).resolves.toBeUndefined();
    expect(stale.saved).toEqual([{ stepUpResume: undefined }]);
  });
});
