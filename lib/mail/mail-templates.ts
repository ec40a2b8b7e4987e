import { escapeHtml } from '../http/pages/escape-html';

/** A message ready to send: its subject and both bodies. */
export interface RenderedMail {
  subject: string;
  /** The plain-text body, which every mail client can show. */
  text: string;
  /** The HTML body: every value in it escaped. */
  html: string;
}

/** What every message knows: the service's name and the recipient's. */
export interface MailBase {
  /** The service's name as the mailer's `siteName` gives it, e.g. "Acme". */
  siteName: string;
  /** The recipient's display name. */
  name: string;
}

/** A link that works once and for a short time (a password reset or an address verification). */
export interface MailLink extends MailBase {
  link: string;
  /** How long the link works, in minutes, to say so in the message. */
  expiresInMinutes: number;
}

/** A notice of a change to the account, with when it happened and where to review the sessions. */
export interface MailNotice extends MailBase {
  /** When it happened, epoch milliseconds. */
  at: number;
  /** The page where the user sees and ends their sessions, to act if it was not them. */
  sessionsUrl: string;
}

/** The messages the kit sends, by kind, each with the data its template gets. */
export interface MailData {
  /** A link to choose a new password (forgotten password, or a reset an administrator started). */
  passwordReset: MailLink;
  /** A link proving the user reads mail at a (new) address. */
  emailVerification: MailLink & { email: string };
  /** The password was changed. */
  passwordChanged: MailNotice;
  /** The address was changed; sent to the old address. */
  emailChanged: MailNotice & { newEmail: string };
  /** A second factor or passkey was added, removed or renamed. */
  factorChanged: MailNotice & {
    factor: 'authenticator_app' | 'passkey' | 'recovery_codes';
    change: 'added' | 'removed' | 'renamed' | 'replaced';
  };
  /** A sign-in from a browser and network never seen for the account. */
  newSignIn: MailNotice & { device: string; network: string };
}

/** The kinds of message, as {@link MailData} names them. */
export type MailKind = keyof MailData;

/** One template per kind: data in, a {@link RenderedMail} out. Replace any of them through the mailer's `templates` option. */
export type MailTemplates = { [K in MailKind]: (data: MailData[K]) => RenderedMail };

/** A value already escaped for HTML (or markup of the template's own), so `html` does not escape it again. */
class SafeHtml {
  constructor(readonly value: string) {}
}

/** A tagged template that escapes every interpolated value, except nested `html` fragments. */
function html(strings: TemplateStringsArray, ...values: unknown[]): SafeHtml {
  let out = strings[0]!;
  values.forEach((value, index) => {
    const parts = Array.isArray(value) ? value : [value];
    out += parts.map((part) => (part instanceof SafeHtml ? part.value : escapeHtml(String(part)))).join('');
    out += strings[index + 1]!;
  });
  return new SafeHtml(out);
}

function when(at: number): string {
  return new Date(at).toUTCString();
}

const FACTOR_NAMES: Record<MailData['factorChanged']['factor'], string> = {
  authenticator_app: 'an authenticator app',
  passkey: 'a passkey',
  recovery_codes: 'your recovery codes',
};

/** The HTML shell every default message uses: one column, system fonts, the button a link, nothing remote. */
function layout(siteName: string, paragraphs: SafeHtml[], button?: { href: string; label: string }): string {
  const action = button
    ? html`<p style="margin:24px 0">
          <a
            href="${button.href}"
            style="background:#1f4fd1;color:#fff;padding:12px 20px;border-radius:6px;text-decoration:none;display:inline-block"
            >${button.label}</a
          >
        </p>
        <p style="font-size:13px;color:#555">
          If the button does not work, copy this address into your browser:<br /><span style="word-break:break-all">${button.href}</span>
        </p>`
    : html``;
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width" />
        <title>${siteName}</title>
      </head>
      <body style="margin:0;padding:24px;background:#f4f5f7;font-family:system-ui,-apple-system,'Segoe UI',sans-serif;color:#1d1d1f">
        <div style="max-width:560px;margin:0 auto;background:#fff;border-radius:8px;padding:24px">
          ${paragraphs.map((paragraph) => html`<p style="line-height:1.5">${paragraph}</p> `)}${action}
          <p style="font-size:13px;color:#555;margin-top:32px">${siteName}</p>
        </div>
      </body>
    </html>`.value;
}

/** The closing of every notice: what to do when the change was not the user's. */
function notTheUser(data: MailNotice): { text: string; html: SafeHtml } {
  return {
    text: `If this was not you, sign in, review your sessions at ${data.sessionsUrl} and change your password.`,
    html: html`If this was not you, sign in, <a href="${data.sessionsUrl}">review your sessions</a> and change your password.`,
  };
}

function notice(data: MailNotice, subject: string, sentence: string, extra: string[] = []): RenderedMail {
  const closing = notTheUser(data);
  const lines = [`Hello ${data.name},`, sentence, ...extra, closing.text];
  return {
    subject,
    text: `${lines.join('\n\n')}\n\n${data.siteName}\n`,
    html: layout(data.siteName, [html`Hello ${data.name},`, html`${sentence}`, ...extra.map((line) => html`${line}`), closing.html]),
  };
}

/**
 * The messages the kit sends unless the app gives its own.
 *
 * @example
 * const preview = DEFAULT_MAIL_TEMPLATES.passwordReset({ siteName: 'Acme', name: 'Alice', link, expiresInMinutes: 15 });
 */
export const DEFAULT_MAIL_TEMPLATES: MailTemplates = {
  passwordReset(data) {
    const lines = [
      `Hello ${data.name},`,
      `Someone (we hope you) asked to reset the password of your ${data.siteName} account. Use this link within ${data.expiresInMinutes} minutes to choose a new one; it works once:`,
    ];
    const ignore = 'If you did not ask for this, ignore this message: your password stays as it is.';
    return {
      subject: `Reset your ${data.siteName} password`,
      text: `${lines.join('\n\n')}\n\n${data.link}\n\n${ignore}\n\n${data.siteName}\n`,
      html: layout(data.siteName, [...lines.map((line) => html`${line}`), html`${ignore}`], {
        href: data.link,
        label: 'Choose a new password',
      }),
    };
  },
  emailVerification(data) {
    const lines = [
      `Hello ${data.name},`,
      `Please confirm that ${data.email} is your address for your ${data.siteName} account. Use this link within ${data.expiresInMinutes} minutes; it works once:`,
    ];
    const ignore = 'If you did not ask for this, ignore this message.';
    return {
      subject: `Confirm your email address for ${data.siteName}`,
      text: `${lines.join('\n\n')}\n\n${data.link}\n\n${ignore}\n\n${data.siteName}\n`,
      html: layout(data.siteName, [...lines.map((line) => html`${line}`), html`${ignore}`], {
        href: data.link,
        label: 'Confirm my address',
      }),
    };
  },
  passwordChanged: (data) =>
    notice(
      data,
      `Your ${data.siteName} password was changed`,
      `The password of your ${data.siteName} account was changed on ${when(data.at)}.`,
    ),
  emailChanged: (data) =>
    notice(
      data,
      `The email address of your ${data.siteName} account was changed`,
      `The email address of your ${data.siteName} account was changed to ${data.newEmail} on ${when(data.at)}. Mail about the account now goes there.`,
    ),
  factorChanged: (data) =>
    notice(
      data,
      `A sign-in method of your ${data.siteName} account changed`,
      `${FACTOR_NAMES[data.factor]} was ${data.change} on your ${data.siteName} account on ${when(data.at)}.`.replace(/^./, (first) =>
        first.toUpperCase(),
      ),
    ),
  newSignIn: (data) =>
    notice(
      data,
      `New sign-in to your ${data.siteName} account`,
      `Your ${data.siteName} account was signed in to on ${when(data.at)} from a browser and network it was not used from before:`,
      [`Browser: ${data.device}`, `Network: ${data.network}`],
    ),
};
