import type { AddressInfo } from 'node:net';
import { simpleParser, type ParsedMail } from 'mailparser';
import { SMTPServer, type SMTPServerOptions } from 'smtp-server';

/** A real SMTP server in this process, on 127.0.0.1:0, keeping what it receives. */
export interface MailCatcher {
  host: string;
  port: number;
  /** Every message received, parsed, in order, with the envelope recipients. */
  messages: Array<ParsedMail & { envelopeTo: string[] }>;
  /** The next message to arrive (or the first not yet taken), within `timeoutMillis`. */
  nextMessage(timeoutMillis?: number): Promise<ParsedMail & { envelopeTo: string[] }>;
  close(): Promise<void>;
}

/** What the catcher does besides receiving: refuse recipients, require a login, offer STARTTLS. */
export interface MailCatcherOptions {
  /** Recipients refused with `550 5.1.1 No such user` (a permanent failure). */
  refuse?: RegExp;
  /** Recipients refused with `451 4.3.0 Try again later` (a temporary one). */
  deferRecipients?: RegExp;
  /** A user and password the server requires (AUTH PLAIN/LOGIN). */
  login?: { user: string; password: string };
  /** A certificate to offer STARTTLS with; without it the server offers no TLS at all. */
  tls?: { key: Buffer; cert: Buffer };
}

/**
 * Starts an SMTP server (the `smtp-server` package) that parses each message with `mailparser`, so tests read the
 * mail a real client sent over a real SMTP session.
 *
 * @example
 * const catcher = await startMailCatcher();
 * const mail = mailer({ smtp: { host: catcher.host, port: catcher.port }, from: 'no-reply@example.test', siteName: 'Example' });
 * const received = await catcher.nextMessage();
 */
export async function startMailCatcher(options: MailCatcherOptions = {}): Promise<MailCatcher> {
  const messages: MailCatcher['messages'] = [];
  const waiting: Array<(message: MailCatcher['messages'][number]) => void> = [];
  let taken = 0;
  const serverOptions: SMTPServerOptions = {
    logger: false,
    disabledCommands: [...(options.tls ? [] : ['STARTTLS']), ...(options.login ? [] : ['AUTH'])],
    ...(options.tls ? { key: options.tls.key, cert: options.tls.cert } : {}),
    authOptional: !options.login,
    onAuth(auth, _session, callback) {
      if (options.login && auth.username === options.login.user && auth.password === options.login.password) {
        callback(null, { user: auth.username });
      } else {
        callback(Object.assign(new Error('Invalid username or password'), { responseCode: 535 }));
      }
    },
    onRcptTo(address, _session, callback) {
      if (options.refuse?.test(address.address)) return callback(Object.assign(new Error('5.1.1 No such user'), { responseCode: 550 }));
      if (options.deferRecipients?.test(address.address))
        return callback(Object.assign(new Error('4.3.0 Try again later'), { responseCode: 451 }));
      callback();
    },
    onData(stream, session, callback) {
      simpleParser(stream).then(
        (parsed) => {
          const message = Object.assign(parsed, { envelopeTo: session.envelope.rcptTo.map((rcpt) => rcpt.address) });
          messages.push(message);
          waiting.shift()?.(message);
          callback();
        },
        (error: Error) => callback(error),
      );
    },
  };
  const server = new SMTPServer(serverOptions);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.server.address() as AddressInfo).port;
  return {
    host: '127.0.0.1',
    port,
    messages,
    nextMessage(timeoutMillis = 5000) {
      const ready = messages[taken];
      if (ready) {
        taken += 1;
        return Promise.resolve(ready);
      }
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no mail arrived within ${timeoutMillis} ms`)), timeoutMillis);
        waiting.push((message) => {
          clearTimeout(timer);
          taken += 1;
          resolve(message);
        });
      });
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
