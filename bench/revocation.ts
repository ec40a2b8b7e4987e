import { Agent, request as httpRequest } from 'node:http';
import { startCaseServer, type Placement } from './harness';
import { summarise, type QrStepFigures } from './qr-login';
import type { SessionFixtures } from './sessions';

/** What {@link measureRevocation} found: how long a logout on one process took to be refused on another. */
export interface RevocationFigures {
  samples: number;
  /** From the logout's answer on A to the first 401 on B, in milliseconds. */
  afterAnswer: QrStepFigures;
  /** From sending the logout to A to the first 401 on B. */
  fromRequest: QrStepFigures;
  /** Requests B answered 200 after A had answered the logout (served from a cache not yet evicted). */
  staleAnswers: number;
}

function send(agent: Agent, url: string, method: string, host: string, cookie?: string): Promise<{ status: number; setCookie: string[] }> {
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        agent,
        method,
        host: target.hostname,
        port: target.port,
        path: target.pathname,
        headers: { host, 'x-forwarded-proto': 'https', origin: `https://${host}`, ...(cookie ? { cookie } : {}) },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? 0, setCookie: res.headers['set-cookie'] ?? [] }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/**
 * Two server processes of the cached session case on one Redis: users log in on A, B serves them from its cache,
 * A logs them out, and the runner polls B until it answers 401. Reports p50/p99 of that delay.
 *
 * @example
 * const figures = await measureRevocation(fixtures, placement, 200);
 */
export async function measureRevocation(fixtures: SessionFixtures, placement: Placement, iterations: number): Promise<RevocationFigures> {
  const a = await startCaseServer('sessions', 'kit-require-session-cached', fixtures, placement);
  const b = await startCaseServer('sessions', 'kit-require-session-cached', fixtures, placement);
  const agent = new Agent({ keepAlive: true, maxSockets: 4 });
  const afterAnswer: number[] = [];
  const fromRequest: number[] = [];
  let staleAnswers = 0;
  try {
    for (let index = 0; index < iterations; index += 1) {
      const login = await send(agent, `${a.url}/login/revoked-${index}`, 'POST', 'auth.example.test');
      const cookie = login.setCookie.find((line) => line.startsWith('__Secure-sso.sid='))?.split(';')[0];
      if (!cookie) throw new Error(`login answered ${login.status} without a session cookie`);
      for (let warm = 0; warm < 2; warm += 1) {
        const seen = await send(agent, `${b.url}/me`, 'GET', 'shop.example.test', cookie);
        if (seen.status !== 200) throw new Error(`B answered ${seen.status} for a live session`);
      }
      const sent = performance.now();
      const out = await send(agent, `${a.url}/logout`, 'POST', 'auth.example.test', cookie);
      if (out.status !== 204) throw new Error(`logout answered ${out.status}`);
      const answered = performance.now();
      for (let poll = 0; ; poll += 1) {
        const seen = await send(agent, `${b.url}/me`, 'GET', 'shop.example.test', cookie);
        if (seen.status === 401) break;
        staleAnswers += 1;
        if (poll > 10_000) throw new Error('B kept serving a logged-out session');
      }
      const refused = performance.now();
      afterAnswer.push(refused - answered);
      fromRequest.push(refused - sent);
    }
  } finally {
    agent.destroy();
    await a.stop();
    await b.stop();
  }
  return {
    samples: iterations,
    afterAnswer: summarise('after the logout answered', afterAnswer),
    fromRequest: summarise('from the logout request', fromRequest),
    staleAnswers,
  };
}
