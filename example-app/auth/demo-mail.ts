/**
 * The demo's mail catcher: a real SMTP server (smtp-server) in the auth site's process, on a loopback port, that
 * parses what the portal sends (mailparser) and keeps the last 50 messages in memory, and the page at
 * `/demo-mail` where a newcomer reads them (the reset link, the notices). Nothing leaves the machine. A real
 * deployment gives the portal its mail provider's SMTP relay instead.
 */
import type { AddressInfo } from 'node:net';
import { Router, type Request, type Response } from 'express';
import { simpleParser } from 'mailparser';
import { SMTPServer } from 'smtp-server';

/** One message the catcher received. */
export interface CaughtMail {
  id: number;
  to: string;
  subject: string;
  text: string;
  receivedAt: number;
}

/** The running catcher: its SMTP port, what it received, and a way to stop it. */
export interface DemoMailCatcher {
  port: number;
  messages: CaughtMail[];
  close(): Promise<void>;
}

const KEEP = 50;

/**
 * Starts the SMTP server on 127.0.0.1 (a free port).
 *
 * @example
 * const catcher = await startDemoMailCatcher();
 */
export async function startDemoMailCatcher(): Promise<DemoMailCatcher> {
  const messages: CaughtMail[] = [];
  let next = 1;
  const server = new SMTPServer({
    logger: false,
    authOptional: true,
    disabledCommands: ['AUTH', 'STARTTLS'],
    size: 256 * 1024,
    onData(stream, session, callback) {
      simpleParser(stream).then(
        (parsed) => {
          const to = session.envelope.rcptTo.map((rcpt) => rcpt.address).join(', ');
          messages.unshift({ id: next++, to, subject: parsed.subject ?? '', text: parsed.text ?? '', receivedAt: Date.now() });
          messages.splice(KEEP);
          callback();
        },
        (error: Error) => callback(error),
      );
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  // The site's own server keeps the process alive; the catcher must not keep it from ending.
  server.server.unref();
  return {
    port: (server.server.address() as AddressInfo).port,
    messages,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const escape = (text: string) =>
  text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

// Links in the plain text become links on the page, so the reset link is one click; <wbr> lets a long link wrap on a phone.
const linked = (text: string) =>
  escape(text)
    .split(/\n{2,}/)
    .map(
      (paragraph) =>
        `<p>${paragraph.replace(/https?:\/\/[^\s<]+/g, (url) => `<a href="${url}">${url.replace(/([/.=?]|[^/.=?]{12})/g, '$1<wbr>')}</a>`)}</p>`,
    )
    .join('');

function page(title: string, body: string): string {
  return (
    '<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">' +
    `<meta name="referrer" content="no-referrer"><title>${escape(title)}</title>` +
    '<link rel="stylesheet" href="/portal-assets/portal.css"></head>' +
    `<body><main class="card wide"><p class="eyebrow">Demo mail</p><h1>${escape(title)}</h1>${body}</main></body></html>\n`
  );
}

/**
 * The pages of the catcher: the inbox (newest first) and one message as plain text.
 *
 * @example
 * app.use('/demo-mail', demoMailPages(catcher));
 */
export function demoMailPages(catcher: DemoMailCatcher): Router {
  const router = Router();
  router.get('/', function inbox(_req: Request, res: Response) {
    const rows = catcher.messages.map(
      (m) =>
        `<li><div><a class="device" href="messages/${m.id}">${escape(m.subject)}</a>` +
        `<p class="facts">to ${escape(m.to)} · <time datetime="${new Date(m.receivedAt).toISOString()}">${escape(new Date(m.receivedAt).toUTCString())}</time></p></div></li>`,
    );
    const body = rows.length
      ? `<ul class="sessions">${rows.join('')}</ul>`
      : '<p>No mail yet. Ask for a password reset at the login page ("Forgot your password?"), then reload.</p>';
    res
      .set('Cache-Control', 'no-store')
      .type('html')
      .send(page('Mail the portal sent', `${body}<p><a href="./">Reload</a></p>`));
  });
  router.get('/messages/:id', function message(req: Request, res: Response) {
    const found = catcher.messages.find((m) => String(m.id) === req.params.id);
    if (!found) {
      res.status(404).type('html').send(page('No such message', '<p><a href="../">Back to the inbox</a></p>'));
      return;
    }
    const facts = `<p class="facts">to ${escape(found.to)}</p>`;
    res
      .set('Cache-Control', 'no-store')
      .type('html')
      .send(page(found.subject, `${facts}${linked(found.text)}<p><a href="../">Back to the inbox</a></p>`));
  });
  return router;
}
