/**
 * Changing the password, the address, and the notices (ASVS 5.0 6.2.2, 6.2.3, 6.2.1, 6.2.4, 6.2.11, 6.2.12, 6.3.5,
 * 6.3.7, 7.4.3, 7.5.1): the current password is asked (and a fresh second factor for the address, from a user who
 * has one), the new one checked by the policy with a reason a person reads, the
 * write is one conditional write, the session id is renewed and other sessions end unless the user says otherwise.
 */
import {
  AUTH_ORIGIN,
  BREACHED,
  cookieOf,
  get,
  linkIn,
  mailTo,
  PEOPLE,
  type AppUser,
  post,
  SESSION_COOKIE,
  signIn,
  startAccountHarness,
  type AccountHarness,
} from './account-harness';

let harness: AccountHarness;

beforeAll(async () => {
  harness = await startAccountHarness({ notifications: { newSignIn: true } });
});

afterAll(async () => {
  await harness?.close();
});

async function passwordWorks(username: string, password: string): Promise<boolean> {
  return (await post(harness.app, '/login', { username, password, return_to: '' })).status === 302;
}

/** Carol proves her authenticator app on the step-up page; the session cookie that holds it. */
async function stepUp(session: string, user: AppUser = 'carol'): Promise<string> {
  const code = await harness.apps[user].nextCode();
  const res = await post(harness.app, '/step-up', { acr: '2fa', max_age: '300', method: 'totp', code, return_to: '' }, session);
  expect(res.status).toBe(303);
  return cookieOf(res, SESSION_COOKIE) ?? session;
}

async function signedIn(cookie: string): Promise<boolean> {
  return (await get(harness.app, '/sessions', cookie)).status === 200;
}

describe('changing the password', () => {
  it('refuses a wrong current password, a common one and a breached one, each with a reason a person reads, changing nothing', async () => {
    const session = await signIn(harness.app, 'alice', PEOPLE.alice.password);
    const form = await get(harness.app, '/password', session);
    expect(form.status).toBe(200);
    expect(form.text).toMatch(/<input type="checkbox" name="end_other_sessions" value="1" checked>/);
    const wrong = await post(
      harness.app,
      '/password',
      { current_password: 'not-it-at-all', new_password: 'plum-ladder-quietly-9' },
      session,
    );
    expect(wrong.status).toBe(401);
    expect(wrong.text).toContain('Your current password is not right.');
    const common = await post(harness.app, '/password', { current_password: PEOPLE.alice.password, new_password: 'password123' }, session);
    expect(common.status).toBe(422);
    expect(common.text).toContain('This is one of the most common passwords');
    const breached = await post(harness.app, '/password', { current_password: PEOPLE.alice.password, new_password: BREACHED }, session);
    expect(breached.status).toBe(422);
    expect(breached.text).toContain('This password has appeared in a data breach');
    expect(harness.range.requests.length).toBeGreaterThan(0);
    const personal = await post(
      harness.app,
      '/password',
      { current_password: PEOPLE.alice.password, new_password: 'alice-in-wonderland' },
      session,
    );
    expect(personal.text).toContain('Do not use your name, username or email address in your password.');
    expect(await passwordWorks('alice', PEOPLE.alice.password)).toBe(true);
    const reasons = harness.recorder.ofType('password.change_refused').map((event) => event.reason);
    expect(reasons).toEqual(expect.arrayContaining(['wrong_current_password', 'policy', 'breached']));
  });

  it('renews the session id, ends the other sessions (by default) and mails the user', async () => {
    const here = await signIn(harness.app, 'bob', PEOPLE.bob.password);
    const other = await signIn(harness.app, 'bob', PEOPLE.bob.password);
    const res = await post(
      harness.app,
      '/password',
      { current_password: PEOPLE.bob.password, new_password: 'plum-ladder-quietly-9', end_other_sessions: '1' },
      here,
    );
    expect(res.status).toBe(303);
    expect(res.headers.location).toBe('/password?changed=1');
    const renewed = cookieOf(res, SESSION_COOKIE)!;
    expect(renewed).toBeDefined();
    expect(renewed).not.toBe(here);
    expect(await signedIn(renewed)).toBe(true);
    expect(await signedIn(here)).toBe(false);
    expect(await signedIn(other)).toBe(false);
    expect(await passwordWorks('bob', 'plum-ladder-quietly-9')).toBe(true);
    expect(await passwordWorks('bob', PEOPLE.bob.password)).toBe(false);
    const notice = await mailTo(harness.catcher, PEOPLE.bob.email);
    expect(notice.subject).toBe('Your Example password was changed');
    expect(notice.text).toContain(`${AUTH_ORIGIN}/sessions`);
    await harness.recorder.settled();
    expect(harness.recorder.ofType('password.changed').map((event) => event.reason)).toContain('self_service');
    expect(harness.recorder.ofType('session.renewed').some((event) => event.reason === 'password_changed')).toBe(true);
    expect(harness.recorder.ofType('notification.sent').length).toBeGreaterThan(0);
  });

  it('keeps the other sessions when the user unticks the box', async () => {
    const here = await signIn(harness.app, 'bob', 'plum-ladder-quietly-9');
    const other = await signIn(harness.app, 'bob', 'plum-ladder-quietly-9');
    const res = await post(
      harness.app,
      '/password',
      { current_password: 'plum-ladder-quietly-9', new_password: 'cedar-morning-lantern-4' },
      here,
    );
    expect(res.status).toBe(303);
    expect(await signedIn(other)).toBe(true);
  });

  it('needs a session, and answers bad input with a 4xx', async () => {
    expect((await post(harness.app, '/password', { current_password: 'x', new_password: 'y' })).status).toBe(401);
    const session = await signIn(harness.app, 'carol', PEOPLE.carol.password);
    expect((await post(harness.app, '/password', { current_password: ['a', 'b'], new_password: 'y' }, session)).status).toBe(400);
    expect(
      (await post(harness.app, '/password', { current_password: PEOPLE.carol.password, new_password: 'z'.repeat(2000) }, session)).status,
    ).toBe(400);
    expect(await passwordWorks('carol', PEOPLE.carol.password)).toBe(true);
  });
});

describe('changing the address', () => {
  it('asks a user with a second factor for a fresh one, not the password alone, and changes nothing without it', async () => {
    const session = await signIn(harness.app, 'carol', PEOPLE.carol.password);
    const page = await get(harness.app, '/email', session);
    expect(page.status).toBe(303);
    expect(page.headers.location).toBe(`/step-up?acr=2fa&max_age=300&return_to=${encodeURIComponent(`${AUTH_ORIGIN}/email`)}`);
    const before = harness.catcher.messages.length;
    // The same form, sent first with the password alone, then after the step-up.
    const askToMove = (cookie: string) =>
      post(harness.app, '/email', { email: 'carol.elsewhere@example.test', current_password: PEOPLE.carol.password }, cookie);
    const res = await askToMove(session);
    expect(res.status).toBe(303);
    expect(res.headers.location).toBe(`/step-up?acr=2fa&max_age=300&return_to=${encodeURIComponent(`${AUTH_ORIGIN}/email`)}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(harness.catcher.messages.slice(before).some((m) => m.envelopeTo.includes('carol.elsewhere@example.test'))).toBe(false);
    expect((await harness.users.findById('u-carol'))?.email).toBe(PEOPLE.carol.email);
    const raised = await stepUp(session);
    expect((await get(harness.app, '/email', raised)).status).toBe(200);
    const allowed = await askToMove(raised);
    expect(allowed.status).toBe(303);
    expect(allowed.headers.location).toBe('/email?sent=1');
    await mailTo(harness.catcher, 'carol.elsewhere@example.test');
  });

  it('asks a user without a second factor for the password only', async () => {
    const session = await signIn(harness.app, 'alice', PEOPLE.alice.password);
    expect((await get(harness.app, '/email', session)).status).toBe(200);
    const res = await post(harness.app, '/email', { email: 'alice.moved@example.test', current_password: PEOPLE.alice.password }, session);
    expect(res.status).toBe(303);
    expect(res.headers.location).toBe('/email?sent=1');
    await mailTo(harness.catcher, 'alice.moved@example.test');
  });

  it('applies the new address only when its link is opened, and tells the old address', async () => {
    const session = await stepUp(await signIn(harness.app, 'erin', PEOPLE.erin.password), 'erin');
    const res = await post(harness.app, '/email', { email: 'erin.new@example.test', current_password: PEOPLE.erin.password }, session);
    expect(res.status).toBe(303);
    expect((await harness.users.findById('u-erin'))?.email).toBe(PEOPLE.erin.email);
    const mail = await mailTo(harness.catcher, 'erin.new@example.test');
    const link = new URL(linkIn(mail.text, `${AUTH_ORIGIN}/email/verify?token=`));
    const opened = await get(harness.app, `${link.pathname}${link.search}`);
    expect(opened.status).toBe(303);
    expect(opened.headers.location).toBe('/email/verify');
    const cookie = cookieOf(opened, 'sso.verify-link')!;
    const confirm = await get(harness.app, '/email/verify', cookie);
    expect(confirm.text).toContain('erin.new@example.test');
    expect((await harness.users.findById('u-erin'))?.email).toBe(PEOPLE.erin.email);
    const done = await post(harness.app, '/email/verify', {}, cookie);
    expect(done.status).toBe(200);
    expect(await harness.users.findById('u-erin')).toMatchObject({ email: 'erin.new@example.test', emailVerified: true });
    const told = await mailTo(harness.catcher, PEOPLE.erin.email);
    expect(told.subject).toBe('The email address of your Example account was changed');
    expect((await post(harness.app, '/email/verify', {}, cookie)).status).toBe(410);
    await harness.recorder.settled();
    expect(harness.recorder.ofType('email.changed')).toHaveLength(1);
  });

  it('refuses a wrong password and sends nothing', async () => {
    const session = await signIn(harness.app, 'alice', PEOPLE.alice.password);
    const before = harness.catcher.messages.length;
    const res = await post(harness.app, '/email', { email: 'alice.else@example.test', current_password: 'wrong-one' }, session);
    expect(res.status).toBe(401);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(harness.catcher.messages.slice(before).some((m) => m.envelopeTo.includes('alice.else@example.test'))).toBe(false);
  });
});

describe('notices of a sign-in from a new browser and network', () => {
  it('mails the user when neither the browser nor the network signed in before, and not otherwise', async () => {
    await signIn(harness.app, 'alice', PEOPLE.alice.password, '203.0.113.7');
    const before = harness.catcher.messages.length;
    await signIn(harness.app, 'alice', PEOPLE.alice.password, '203.0.113.7');
    await signIn(harness.app, 'alice', PEOPLE.alice.password, '192.0.2.200');
    const notice = await mailTo(harness.catcher, PEOPLE.alice.email);
    expect(notice.subject).toBe('New sign-in to your Example account');
    expect(notice.text).toContain('ipv4:192.0.2.200');
    expect(notice.text).toContain(`${AUTH_ORIGIN}/sessions`);
    expect(harness.catcher.messages.slice(before).filter((m) => m.subject === 'New sign-in to your Example account')).toHaveLength(1);
  });

  it('sends none of a kind the app turned off', async () => {
    const quiet = await startAccountHarness({ notifications: { passwordChanged: false } });
    try {
      const session = await signIn(quiet.app, 'alice', PEOPLE.alice.password);
      const res = await post(
        quiet.app,
        '/password',
        { current_password: PEOPLE.alice.password, new_password: 'plum-ladder-quietly-9' },
        session,
      );
      expect(res.status).toBe(303);
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(quiet.catcher.messages).toHaveLength(0);
    } finally {
      await quiet.close();
    }
  });
});

describe('a notice that cannot be sent', () => {
  it('does not undo the change it reports, and is recorded as notification.failed', async () => {
    const broken = await startAccountHarness({ brokenMailer: true });
    try {
      const session = await signIn(broken.app, 'alice', PEOPLE.alice.password);
      const res = await post(
        broken.app,
        '/password',
        { current_password: PEOPLE.alice.password, new_password: 'plum-ladder-quietly-9' },
        session,
      );
      expect(res.status).toBe(303);
      expect((await post(broken.app, '/login', { username: 'alice', password: 'plum-ladder-quietly-9', return_to: '' })).status).toBe(302);
      await broken.recorder.settled();
      expect(broken.recorder.ofType('notification.failed')).toEqual([
        expect.objectContaining({ reason: 'mailer_error', kind: 'passwordChanged' }),
      ]);
      expect(broken.recorder.ofType('notification.sent')).toHaveLength(0);
    } finally {
      await broken.close();
    }
  });
});

describe('notices of a changed sign-in method', () => {
  it('mails the user when recovery codes are replaced and when the authenticator app is removed', async () => {
    const raised = await stepUp(await signIn(harness.app, 'frank', PEOPLE.frank.password), 'frank');
    const address = PEOPLE.frank.email;
    const before = harness.catcher.messages.length;
    expect((await post(harness.app, '/two-factor/recovery-codes', {}, raised)).status).toBe(200);
    const replaced = await mailTo(harness.catcher, address);
    expect(replaced.subject).toBe('A sign-in method of your Example account changed');
    expect(replaced.text).toContain('Your recovery codes was replaced');
    expect(replaced.text).toContain(`${AUTH_ORIGIN}/sessions`);
    expect((await post(harness.app, '/two-factor/totp/remove', {}, raised)).status).toBe(303);
    const removed = await mailTo(harness.catcher, address);
    expect(removed.subject).toBe('A sign-in method of your Example account changed');
    expect(removed.text).toContain('An authenticator app was removed');
    expect(harness.catcher.messages.slice(before).filter((m) => m.envelopeTo.includes(address))).toHaveLength(2);
  });
});
