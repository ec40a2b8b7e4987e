import { isIP } from 'node:net';
import { createTransport } from 'nodemailer';
import { debugChannel } from '../util/debug';
import { checkOptions, OptionsError, within, type OptionSchema } from '../util/options';
import { DEFAULT_MAIL_TEMPLATES, type MailData, type MailKind, type MailTemplates, type RenderedMail } from './mail-templates';

/** How the mailer reaches the SMTP server (a relay of your mail provider, or a local MTA). */
export interface SmtpOptions {
  host: string;
  /** Default 465 with `secure`, else 587. */
  port?: number;
  /** TLS from the first byte (port 465). Default false: plain connection upgraded with STARTTLS. */
  secure?: boolean;
  /**
   * Refuse to send unless the connection is encrypted (implicit TLS or STARTTLS). Default true, except for a server
   * on a loopback address (a local relay: the message does not cross a network to reach it).
   */
  requireTls?: boolean;
  /** SMTP AUTH user and password, when the server asks for them. */
  user?: string;
  password?: string;
  /** Certificate authorities to trust besides Node's, PEM (a private relay's own CA). */
  ca?: string | string[];
  /** How long connecting, the greeting and each later step may take. Default 10 seconds. */
  timeoutSeconds?: number;
}

/** Options of {@link mailer}. */
export interface MailerOptions {
  smtp: SmtpOptions;
  /** The sender, e.g. `"Acme Accounts" <no-reply@acme.example>`. */
  from: string;
  /** The service's name as messages say it, e.g. "Acme". */
  siteName: string;
  /** Templates replacing the kit's, by kind; the kinds not given keep the kit's. */
  templates?: Partial<MailTemplates>;
}

/** What a sent message left behind. */
export interface SentMail {
  /** The Message-ID header, to find the message in the relay's logs. */
  messageId: string;
}

/** Sends the kit's messages (reset and verification links, notices) through an SMTP server. */
export interface Mailer {
  /**
   * Renders the `kind` template with `data` and sends it to `to`. Resolves once the SMTP server accepted the
   * message; rejects with {@link MailDeliveryError} when it did not, so the caller can say so (and withdraw a
   * link it made for the message).
   */
  send<K extends MailKind>(kind: K, to: string, data: Omit<MailData[K], 'siteName'>): Promise<SentMail>;
  /** Renders without sending (to preview a template). */
  render<K extends MailKind>(kind: K, data: Omit<MailData[K], 'siteName'>): RenderedMail;
  /** Connects and logs in once, to find a wrong host or password at start-up; rejects with {@link MailDeliveryError}. */
  verify(): Promise<void>;
  /** Closes pooled connections. */
  close(): void;
}

/**
 * The SMTP server did not take a message.
 *
 * @example
 * try {
 *   await mail.send('passwordReset', to, data);
 * } catch (error) {
 *   if (error instanceof MailDeliveryError) await resets.revoke(account.id); // no link without its mail
 *   throw error;
 * }
 */
export class MailDeliveryError extends Error {
  override readonly name = 'MailDeliveryError';
  readonly code = 'mail_not_sent';
  /**
   * True when trying again will not help: the server refused the recipient or the message for good (a 5xx reply),
   * or the mailer is misconfigured (login refused, TLS required but not offered). False for an outage or a 4xx reply.
   */
  readonly permanent: boolean;
  /** The SMTP reply code, when the server gave one. */
  readonly responseCode: number | undefined;
  constructor(message: string, details: { permanent: boolean; responseCode?: number }, options?: { cause?: unknown }) {
    super(message, options);
    this.permanent = details.permanent;
    this.responseCode = details.responseCode;
  }
}

const SMTP_OPTIONS: OptionSchema = {
  host: { type: 'string', required: true },
  port: { type: 'integer', check: within(1, 65535) },
  secure: { type: 'boolean' },
  requireTls: { type: 'boolean' },
  user: { type: 'string' },
  password: { type: 'string' },
  ca: { type: ['string', 'string[]'] },
  timeoutSeconds: { type: 'number', check: within(1, 120) },
};

const OPTIONS: OptionSchema = {
  smtp: { type: 'object', required: true, members: SMTP_OPTIONS },
  from: {
    type: 'string',
    required: true,
    expected: 'a sender like "Acme" <no-reply@acme.example>',
    check: (from: string) => (/@/.test(from) && !/[\r\n]/.test(from) ? undefined : `must be a sender address, got ${JSON.stringify(from)}`),
  },
  siteName: {
    type: 'string',
    required: true,
    check: (name: string) => (name.trim() && !/[\r\n]/.test(name) ? undefined : 'must be a one-line name'),
  },
  templates: {
    type: 'object',
    check: (templates: Record<string, unknown>) => {
      const unknown = Object.keys(templates).find((kind) => !(kind in DEFAULT_MAIL_TEMPLATES));
      if (unknown !== undefined) return `has no kind "${unknown}"; the kinds are ${Object.keys(DEFAULT_MAIL_TEMPLATES).join(', ')}`;
      const notFunction = Object.entries(templates).find(([, template]) => typeof template !== 'function');
      return notFunction ? `.${notFunction[0]} must be a function (data) => ({ subject, text, html })` : undefined;
    },
  },
};

const debug = debugChannel('mail');
// Failures that another attempt cannot fix: the configuration or the message is wrong.
const PERMANENT_CODES = new Set(['EAUTH', 'ENOAUTH', 'ECONFIG', 'EENVELOPE', 'EMESSAGE', 'EREQUIRETLS', 'ETLS']);

function isLoopback(host: string): boolean {
  if (host === 'localhost') return true;
  if (isIP(host) === 4) return host.startsWith('127.');
  return host === '::1' || host === '[::1]';
}

/** Whether the mailer refuses to send without TLS: as told, else unless the server is on a loopback address. */
export function tlsRequired(smtp: Pick<SmtpOptions, 'host' | 'requireTls'>): boolean {
  return smtp.requireTls ?? !isLoopback(smtp.host);
}

/** The kit's reading of a nodemailer failure: never the message, which holds the link. */
function deliveryError(error: unknown): MailDeliveryError {
  const { code, responseCode } = (error ?? {}) as { code?: unknown; responseCode?: unknown };
  const reply = typeof responseCode === 'number' ? responseCode : undefined;
  // The server's reply decides when there is one (5xx: refused for good; 4xx: try later); else the kind of failure.
  const permanent = reply !== undefined ? reply >= 500 : typeof code === 'string' && PERMANENT_CODES.has(code);
  const reason = [typeof code === 'string' ? code : 'an unknown error', reply === undefined ? '' : `reply ${reply}`]
    .filter(Boolean)
    .join(', ');
  return new MailDeliveryError(
    `the mail could not be sent (${reason})`,
    { permanent, ...(reply === undefined ? {} : { responseCode: reply }) },
    { cause: error },
  );
}

function checkRendered(kind: string, rendered: RenderedMail): RenderedMail {
  if (!rendered || typeof rendered.subject !== 'string' || typeof rendered.text !== 'string' || typeof rendered.html !== 'string') {
    throw new OptionsError(`mailer: the "${kind}" template must return { subject, text, html }, all strings`);
  }
  // A header value is one line: a name or address in the subject cannot add headers.
  return { ...rendered, subject: rendered.subject.replace(/[\r\n]+/g, ' ') };
}

function checkLinks(kind: string, data: Record<string, unknown>): void {
  for (const field of ['link', 'sessionsUrl']) {
    const value = data[field];
    if (value !== undefined && (typeof value !== 'string' || !/^https?:\/\/[^\s]+$/.test(value))) {
      throw new OptionsError(`mailer.send("${kind}"): ${field} must be an absolute http(s) URL`);
    }
  }
}

/**
 * Sends the account messages through SMTP with nodemailer: one template per kind (reset link, address verification,
 * password, address and sign-in-method changes, sign-in from a new browser and network), plain text and HTML,
 * every value escaped in the HTML. TLS is required unless the server is on a loopback address; nodemailer's own
 * logging stays off (a message holds a single-use link). A failed send rejects with {@link MailDeliveryError}.
 *
 * @example
 * const mail = mailer({ smtp: { host: 'smtp.example.com', user: 'apikey', password: process.env.SMTP_PASSWORD }, from: '"Acme" <no-reply@acme.example>', siteName: 'Acme' });
 * await mail.send('passwordReset', account.email, { name: account.name, link, expiresInMinutes: 15 });
 */
export function mailer(options: MailerOptions): Mailer {
  checkOptions('mailer', options as unknown, OPTIONS);
  const { smtp } = options;
  const secure = smtp.secure ?? false;
  const requireTls = tlsRequired(smtp);
  const timeoutMillis = Math.round((smtp.timeoutSeconds ?? 10) * 1000);
  if ((smtp.user === undefined) !== (smtp.password === undefined)) {
    throw new OptionsError('mailer: smtp.user and smtp.password go together; give both or neither');
  }
  const transport = createTransport({
    host: smtp.host,
    port: smtp.port ?? (secure ? 465 : 587),
    secure,
    requireTLS: requireTls && !secure,
    ...(smtp.user === undefined ? {} : { auth: { user: smtp.user, pass: smtp.password! } }),
    tls: { minVersion: 'TLSv1.2', ...(smtp.ca === undefined ? {} : { ca: smtp.ca }) },
    connectionTimeout: timeoutMillis,
    greetingTimeout: timeoutMillis,
    socketTimeout: timeoutMillis,
    logger: false,
    debug: false,
    // Templates are the app's code, but a message must never read a local file or fetch a URL into itself.
    disableFileAccess: true,
    disableUrlAccess: true,
  });
  const templates: MailTemplates = { ...DEFAULT_MAIL_TEMPLATES, ...options.templates };

  function render<K extends MailKind>(kind: K, data: Omit<MailData[K], 'siteName'>): RenderedMail {
    if (!(kind in templates)) throw new OptionsError(`mailer: there is no message kind "${String(kind)}"`);
    checkLinks(kind, data as Record<string, unknown>);
    const template = templates[kind] as (data: MailData[K]) => RenderedMail;
    return checkRendered(kind, template({ ...data, siteName: options.siteName } as MailData[K]));
  }

  return {
    render,
    async send<K extends MailKind>(kind: K, to: string, data: Omit<MailData[K], 'siteName'>): Promise<SentMail> {
      if (typeof to !== 'string' || !/^[^\s@]+@[^\s@]+$/.test(to.trim()))
        throw new OptionsError(`mailer.send("${kind}"): to must be one email address`);
      const message = render(kind, data);
      try {
        const info = (await transport.sendMail({
          from: options.from,
          to: to.trim(),
          subject: message.subject,
          text: message.text,
          html: message.html,
          headers: { 'Auto-Submitted': 'auto-generated' },
        })) as { messageId: string };
        debug('sent a %s message', kind);
        return { messageId: info.messageId };
      } catch (error) {
        const failure = deliveryError(error);
        debug('a %s message was not sent: %s', kind, failure.message);
        throw failure;
      }
    },
    async verify(): Promise<void> {
      try {
        await transport.verify();
      } catch (error) {
        throw deliveryError(error);
      }
    },
    close(): void {
      transport.close();
    },
  };
}
