import { Agent, request } from 'node:http';

/** One answer of {@link burst}. */
export interface BurstAnswer {
  status: number;
  body: string;
}

function send(agent: Agent, url: URL, method: string, headers: Record<string, string>, body?: string): Promise<BurstAnswer> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method, headers, agent }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        text += chunk;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * Sends `count` identical requests at the same moment over `count` already-open keep-alive connections, so they
 * reach the server together and their handlers really interleave (fresh connections would trickle in one by one).
 */
export async function burst(
  count: number,
  warmUrl: string,
  target: { url: string; method: string; headers: Record<string, string>; body?: string },
): Promise<BurstAnswer[]> {
  const agent = new Agent({ keepAlive: true, maxSockets: count });
  try {
    // Open the connections first, with a harmless GET on each.
    await Promise.all(Array.from({ length: count }, () => send(agent, new URL(warmUrl), 'GET', {})));
    const url = new URL(target.url);
    const headers = {
      ...target.headers,
      ...(target.body !== undefined ? { 'content-length': String(Buffer.byteLength(target.body)) } : {}),
    };
    return await Promise.all(Array.from({ length: count }, () => send(agent, url, target.method, headers, target.body)));
  } finally {
    agent.destroy();
  }
}
