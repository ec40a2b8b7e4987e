import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';

/**
 * A relying party's back-channel logout endpoint on 127.0.0.1: it records every `logout_token` posted to it and
 * lets a test wait for the next one (no sleeps: the promise resolves when the POST arrives).
 *
 * @example
 * const receiver = await startBackchannelReceiver();
 * const token = await receiver.next();
 */
export interface BackchannelReceiver {
  url: string;
  received: string[];
  /** The next logout token (one already received and not yet taken comes first). */
  next(timeoutMs?: number): Promise<string>;
  close(): Promise<void>;
}

export async function startBackchannelReceiver(): Promise<BackchannelReceiver> {
  const received: string[] = [];
  let taken = 0;
  const waiting: ((token: string) => void)[] = [];
  const app = express();
  app.post('/backchannel-logout', express.urlencoded({ extended: false }), (req, res) => {
    const token = String((req.body as { logout_token?: unknown }).logout_token ?? '');
    received.push(token);
    const waiter = waiting.shift();
    if (waiter) {
      taken += 1;
      waiter(token);
    }
    res.status(200).end();
  });
  const server: Server = app.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/backchannel-logout`,
    received,
    next(timeoutMs = 5000) {
      if (taken < received.length) return Promise.resolve(received[taken++]!);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('no logout token arrived')), timeoutMs);
        waiting.push((token) => {
          clearTimeout(timer);
          resolve(token);
        });
      });
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
