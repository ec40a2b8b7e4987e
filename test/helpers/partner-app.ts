import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { createInterface } from 'node:readline';

/** An app on another domain, in its own process, that signs in with `express-openid-connect` (Auth0's SDK). */
export interface PartnerApp {
  origin: string;
  /** Where the provider posts logout tokens (server to server, on loopback). */
  backchannelLogoutUri: string;
  redirectUri: string;
  /** Resolves with the app's answer when it has handled the next logout token. */
  nextBackchannelLogout(): Promise<number>;
  /** Mounts express-openid-connect once the provider (which must know the redirect URI first) runs. */
  connect(options: PartnerConnection): Promise<void>;
  close(): Promise<void>;
}

export interface PartnerConnection {
  /** The provider's issuer, e.g. `http://auth.sso.localhost:<port>`. */
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** Redis for express-openid-connect's back-channel logout entries (a real store, its own key prefix). */
  redisUrl: string;
  redisPrefix: string;
}

/**
 * Starts the partner app (test/helpers/partner-app-server.ts) on `host`, e.g. `partner.localhost`: after
 * {@link PartnerApp.connect}, `GET /` shows who is signed in (`#who`, `data-sub`), `GET /login` and `/callback` are
 * express-openid-connect's, and `POST /backchannel-logout` takes the provider's logout tokens.
 *
 * @example
 * const partner = await startPartnerApp('partner.localhost');
 * await partner.connect({ issuer, clientId: 'partner', clientSecret, redisUrl, redisPrefix });
 */
export async function startPartnerApp(host: string): Promise<PartnerApp> {
  const child = spawn(process.execPath, [require.resolve('tsx/cli'), resolve(__dirname, 'partner-app-server.ts')], {
    env: { ...process.env, PARTNER_HOST: host, NODE_OPTIONS: '' },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const listeners: ((message: Record<string, unknown>) => boolean)[] = [];
  createInterface({ input: child.stdout! }).on('line', (line) => {
    let message: Record<string, unknown>;
    try {
      message = JSON.parse(line) as Record<string, unknown>;
    } catch {
      return;
    }
    const index = listeners.findIndex((listener) => listener(message));
    if (index !== -1) listeners.splice(index, 1);
  });
  const next = <T>(key: string): Promise<T> =>
    new Promise((resolveMessage, reject) => {
      const timer = setTimeout(() => reject(new Error(`partner app: no "${key}" message`)), 20_000);
      listeners.push((message) => {
        if (!(key in message)) return false;
        clearTimeout(timer);
        resolveMessage(message[key] as T);
        return true;
      });
    });
  const port = await next<number>('port');
  const origin = `http://${host}:${port}`;
  return {
    origin,
    backchannelLogoutUri: `http://127.0.0.1:${port}/backchannel-logout`,
    redirectUri: `${origin}/callback`,
    nextBackchannelLogout: () => next<number>('backchannel'),
    async connect(options) {
      const ready = next<boolean>('ready');
      child.stdin!.write(`${JSON.stringify(options)}\n`);
      await ready;
    },
    async close() {
      const exited = new Promise<void>((resolveExit) => child.once('exit', () => resolveExit()));
      child.stdin!.end();
      child.kill('SIGTERM');
      await exited;
    },
  };
}
