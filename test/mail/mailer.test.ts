import { readFileSync } from 'node:fs';
import { DEFAULT_MAIL_TEMPLATES, MailDeliveryError, mailer, type Mailer } from '../../lib/mail';
import { tlsRequired } from '../../lib/mail/mailer';
import { OptionsError } from '../../lib/util/options';
import { debugLines } from '../helpers/debug-lines';
import { startMailCatcher, type MailCatcher } from '../helpers/mail-catcher';
import { makeTestCertificates, type TestCertificates } from '../helpers/tls';

const LINK = 'https://auth.example.test/password/reset?token=r3s3t-t0ken-Zx9';
const SESSIONS = 'https://auth.example.test/sessions';
const AT = Date.UTC(2026, 10, 29, 9, 30);

let catcher: MailCatcher;
let mail: Mailer;

async function rejectionOf(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => undefined,
    (error: unknown) => error,
  );
}

beforeAll(async () => {
  catcher = await startMailCatcher({ refuse: /^gone@/, deferRecipients: /^later@/ });
  mail = mailer({ smtp: { host: catcher.host, port: catcher.port }, from: '"Acme Accounts" <no-reply@acme.example>', siteName: 'Acme' });
});
afterAll(async () => {
  mail.close();
  await catcher.close();
});

describe('mailer: sending', () => {
  it('sends a reset link over SMTP as plain text and HTML, from the configured sender, marked auto-generated', async () => {
    const sent = await mail.send('passwordReset', 'alice@example.test', { name: 'Alice', link: LINK, expiresInMinutes: 15 });
    const received = await catcher.nextMessage();
    expect(received.envelopeTo).toEqual(['alice@example.test']);
    expect(received.messageId).toBe(sent.messageId);
    expect(received.from?.text).toBe('"Acme Accounts" <no-reply@acme.example>');
    expect(received.subject).toBe('Reset your Acme password');
    expect(received.headers.get('auto-submitted')).toBe('auto-generated');
    expect(received.text).toContain(`Hello Alice,`);
    expect(received.text).toContain(`within 15 minutes`);
    expect(received.text).toContain(`\n${LINK}\n`);
    expect(received.html).toContain(`href="${LINK}"`);
    expect(received.html).toContain('Choose a new password');
  });

  it('escapes every value in the HTML (a name cannot add markup) and keeps the plain text as typed', async () => {
    const name = '<script>alert("x")</script> & Bob\'s';
    await mail.send('passwordChanged', 'bob@example.test', { name, at: AT, sessionsUrl: `${SESSIONS}?a=1&b="2"` });
    const received = await catcher.nextMessage();
    expect(received.html).not.toContain('<script>');
    expect(received.html).toContain('Hello &#60;script&#62;alert(&#34;x&#34;)&#60;/script&#62; &#38; Bob&#39;s,');
    expect(received.html).toContain('href="https://auth.example.test/sessions?a=1&#38;b=&#34;2&#34;"');
    expect(received.text).toContain(`Hello ${name},`);
  });

  it.each<[string, Record<string, unknown>, string, string[]]>([
    [
      'emailVerification',
      { name: 'Alice', link: LINK, expiresInMinutes: 15, email: 'new@example.test' },
      'Confirm your email address for Acme',
      ['new@example.test', LINK],
    ],
    [
      'passwordChanged',
      { name: 'Alice', at: AT, sessionsUrl: SESSIONS },
      'Your Acme password was changed',
      ['Sun, 29 Nov 2026 09:30:00 GMT', SESSIONS],
    ],
    [
      'emailChanged',
      { name: 'Alice', at: AT, sessionsUrl: SESSIONS, newEmail: 'new@example.test' },
      'The email address of your Acme account was changed',
      ['new@example.test', SESSIONS],
    ],
    [
      'factorChanged',
      { name: 'Alice', at: AT, sessionsUrl: SESSIONS, factor: 'passkey', change: 'removed' },
      'A sign-in method of your Acme account changed',
      ['A passkey was removed on your Acme account', SESSIONS],
    ],
    [
      'newSignIn',
      { name: 'Alice', at: AT, sessionsUrl: SESSIONS, device: 'Firefox on Linux', network: '203.0.113.0/24' },
      'New sign-in to your Acme account',
      ['Browser: Firefox on Linux', 'Network: 203.0.113.0/24', SESSIONS],
    ],
  ])('sends the %s message with its facts in both bodies', async (kind, data, subject, facts) => {
    await mail.send(kind as never, 'alice@example.test', data as never);
    const received = await catcher.nextMessage();
    expect(received.subject).toBe(subject);
    for (const fact of facts) {
      expect(received.text).toContain(fact);
      expect(received.html).toContain(fact.replace(/&/g, '&#38;'));
    }
  });

  it("uses the app's template for a kind it replaces, and the kit's for the others", async () => {
    const branded = mailer({
      smtp: { host: catcher.host, port: catcher.port },
      from: 'no-reply@acme.example',
      siteName: 'Acme',
      templates: {
        passwordReset: (data) => ({
          subject: `[${data.siteName}] New password\r\nBcc: eve@evil.test`,
          text: `Go to ${data.link}`,
          html: `<p>${data.link}</p>`,
        }),
      },
    });
    try {
      await branded.send('passwordReset', 'alice@example.test', { name: 'Alice', link: LINK, expiresInMinutes: 15 });
      const replaced = await catcher.nextMessage();
      // A line break in a subject cannot start another header.
      expect(replaced.subject).toBe('[Acme] New password Bcc: eve@evil.test');
      expect(replaced.bcc).toBeUndefined();
      expect(replaced.envelopeTo).toEqual(['alice@example.test']);
      expect(replaced.text?.trim()).toBe(`Go to ${LINK}`);
      await branded.send('passwordChanged', 'alice@example.test', { name: 'Alice', at: AT, sessionsUrl: SESSIONS });
      expect((await catcher.nextMessage()).subject).toBe('Your Acme password was changed');
    } finally {
      branded.close();
    }
  });

  it('renders without sending, as the default templates do', () => {
    expect(mail.render('passwordReset', { name: 'A', link: LINK, expiresInMinutes: 15 })).toEqual(
      DEFAULT_MAIL_TEMPLATES.passwordReset({ siteName: 'Acme', name: 'A', link: LINK, expiresInMinutes: 15 }),
    );
  });

  it('refuses a link that is not an http(s) URL and a recipient that is not one address, sending nothing', async () => {
    const before = catcher.messages.length;
    expect(
      await rejectionOf(mail.send('passwordReset', 'alice@example.test', { name: 'A', link: 'javascript:alert(1)', expiresInMinutes: 15 })),
    ).toBeInstanceOf(OptionsError);
    expect(
      await rejectionOf(mail.send('passwordChanged', 'a@example.test, b@example.test', { name: 'A', at: AT, sessionsUrl: SESSIONS })),
    ).toBeInstanceOf(OptionsError);
    expect(catcher.messages.length).toBe(before);
  });

  it('never says the link or the message on its debug channel', async () => {
    const lines = await debugLines('mail', () =>
      mail.send('passwordReset', 'alice@example.test', { name: 'Alice', link: LINK, expiresInMinutes: 15 }),
    );
    await catcher.nextMessage();
    expect(lines.join('\n')).toContain('sent a passwordReset message');
    expect(lines.join('\n')).not.toContain('r3s3t-t0ken');
  });
});

describe('mailer: failures the caller can act on', () => {
  it('rejects with a permanent MailDeliveryError when the server refuses the recipient for good (550)', async () => {
    const error = await rejectionOf(mail.send('passwordReset', 'gone@example.test', { name: 'A', link: LINK, expiresInMinutes: 15 }));
    expect(error).toBeInstanceOf(MailDeliveryError);
    expect(error).toMatchObject({ code: 'mail_not_sent', permanent: true, responseCode: 550 });
    expect(String((error as Error).message)).not.toContain('r3s3t');
  });

  it('rejects with a temporary MailDeliveryError for a 4xx reply and when the server cannot be reached', async () => {
    expect(
      await rejectionOf(mail.send('passwordReset', 'later@example.test', { name: 'A', link: LINK, expiresInMinutes: 15 })),
    ).toMatchObject({
      code: 'mail_not_sent',
      permanent: false,
      responseCode: 451,
    });
    const down = mailer({ smtp: { host: '127.0.0.1', port: 1, timeoutSeconds: 2 }, from: 'no-reply@acme.example', siteName: 'Acme' });
    const error = await rejectionOf(down.send('passwordReset', 'alice@example.test', { name: 'A', link: LINK, expiresInMinutes: 15 }));
    expect(error).toBeInstanceOf(MailDeliveryError);
    expect(error).toMatchObject({ permanent: false, message: expect.stringMatching(/^the mail could not be sent \(E[A-Z]+\)$/) });
    await expect(down.verify()).rejects.toBeInstanceOf(MailDeliveryError);
  });

  it('verifies the connection at start-up', async () => {
    await expect(mail.verify()).resolves.toBeUndefined();
  });
});

describe('mailer: TLS and login', () => {
  let certificates: TestCertificates;
  let secured: MailCatcher;
  beforeAll(async () => {
    certificates = makeTestCertificates('localhost');
    secured = await startMailCatcher({
      tls: { key: readFileSync(certificates.keyPath), cert: readFileSync(certificates.certPath) },
      login: { user: 'relay', password: 'relay-password' },
    });
  });
  afterAll(async () => {
    await secured.close();
    certificates.remove();
  });

  it('sends over STARTTLS to a server whose certificate the given CA signed, logging in', async () => {
    const tls = mailer({
      smtp: {
        host: 'localhost',
        port: secured.port,
        requireTls: true,
        user: 'relay',
        password: 'relay-password',
        ca: readFileSync(certificates.caCertPath, 'utf8'),
      },
      from: 'no-reply@acme.example',
      siteName: 'Acme',
    });
    try {
      await tls.send('passwordChanged', 'alice@example.test', { name: 'Alice', at: AT, sessionsUrl: SESSIONS });
      expect((await secured.nextMessage()).subject).toBe('Your Acme password was changed');
    } finally {
      tls.close();
    }
  });

  it('refuses to send in the clear when TLS is required and the server offers none', async () => {
    const strict = mailer({
      smtp: { host: catcher.host, port: catcher.port, requireTls: true },
      from: 'no-reply@acme.example',
      siteName: 'Acme',
    });
    const before = catcher.messages.length;
    const error = await rejectionOf(strict.send('passwordReset', 'alice@example.test', { name: 'A', link: LINK, expiresInMinutes: 15 }));
    expect(error).toMatchObject({ code: 'mail_not_sent', permanent: true });
    expect(catcher.messages.length).toBe(before);
  });

  it('requires TLS by default for a server that is not on a loopback address', () => {
    expect(tlsRequired({ host: 'smtp.example.test' })).toBe(true);
    expect(tlsRequired({ host: '10.0.0.5' })).toBe(true);
    expect(tlsRequired({ host: '127.0.0.1' })).toBe(false);
    expect(tlsRequired({ host: 'localhost' })).toBe(false);
    expect(tlsRequired({ host: '::1' })).toBe(false);
    expect(tlsRequired({ host: '127.0.0.1', requireTls: true })).toBe(true);
    expect(tlsRequired({ host: 'smtp.example.test', requireTls: false })).toBe(false);
  });

  it('reports a refused login as permanent (535)', async () => {
    const wrong = mailer({
      smtp: { host: 'localhost', port: secured.port, user: 'relay', password: 'wrong', ca: readFileSync(certificates.caCertPath, 'utf8') },
      from: 'no-reply@acme.example',
      siteName: 'Acme',
    });
    expect(
      await rejectionOf(wrong.send('passwordChanged', 'alice@example.test', { name: 'A', at: AT, sessionsUrl: SESSIONS })),
    ).toMatchObject({
      permanent: true,
      responseCode: 535,
    });
  });
});

describe('mailer options', () => {
  it.each<[object, RegExp]>([
    [
      { smtp: { host: 'h' }, from: 'x@example.test', siteName: 'A', sitename: 'A' },
      /unknown option "sitename" \(did you mean "siteName"\?\)/,
    ],
    [{ smtp: { hots: 'h' }, from: 'x@example.test', siteName: 'A' }, /"smtp.hots" \(did you mean "smtp.host"\?\)/],
    [{ smtp: { host: 'h' }, from: 'nobody', siteName: 'A' }, /from must be a sender address/],
    [{ smtp: { host: 'h', user: 'u' }, from: 'x@example.test', siteName: 'A' }, /smtp.user and smtp.password go together/],
    [
      { smtp: { host: 'h' }, from: 'x@example.test', siteName: 'A', templates: { passwordRest: () => undefined } },
      /has no kind "passwordRest"/,
    ],
    [{ smtp: { host: 'h' }, from: 'x@example.test', siteName: 'A\nBcc: x' }, /siteName must be a one-line name/],
  ])('refuses %j', (options, message) => {
    expect(() => mailer(options as never)).toThrow(OptionsError);
    expect(() => mailer(options as never)).toThrow(message);
  });
});
