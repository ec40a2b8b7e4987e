import { request as httpRequest } from 'node:http';

/** One stored cookie, as a browser keeps it. */
export interface JarCookie {
  name: string;
  value: string;
  /** Lower-case host (host-only cookie) or parent domain (Domain attribute given). */
  domain: string;
  hostOnly: boolean;
  path: string;
  secure: boolean;
  httpOnly: boolean;
  sameSite: string | undefined;
}

/** An answer as the user agent saw it. */
export interface UserAgentResponse {
  url: string;
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  /** The Location header resolved against the request URL, for 3xx answers. */
  location: string | undefined;
}

export interface UserAgentRequest {
  method?: string;
  headers?: Record<string, string>;
  /** A form body (sent as application/x-www-form-urlencoded). */
  form?: Record<string, string>;
}

function domainMatches(host: string, cookie: JarCookie): boolean {
  return cookie.hostOnly ? host === cookie.domain : host === cookie.domain || host.endsWith(`.${cookie.domain}`);
}

/**
 * A minimal browser for driving redirect-based logins over plain HTTP, without Chromium: it keeps cookies per host
 * with Domain, Path and Secure semantics, and sends every request to 127.0.0.1 on the URL's port with the URL's
 * host in the Host header. URLs on a mapped domain (default `example.test`) may say `https:`; they are sent as
 * plain http with `X-Forwarded-Proto: https`, as a TLS-terminating proxy would (the app must `trust proxy`). A
 * state-changing request carries `Origin` = the target's origin, as a form or fetch from the site's own page does.
 *
 * @example
 * const ua = new TestUserAgent();
 * const chain = await ua.follow(`https://auth.example.test:${port}/login/corp`);
 */
export class TestUserAgent {
  private jar: JarCookie[] = [];

  constructor(private readonly mappedDomain = 'example.test') {}

  /** Cookies the agent would send to `url`. */
  cookiesFor(url: string): JarCookie[] {
    const target = new URL(url);
    const host = target.hostname.toLowerCase();
    return this.jar.filter(
      (cookie) =>
        domainMatches(host, cookie) &&
        target.pathname.startsWith(cookie.path) &&
        (!cookie.secure || target.protocol === 'https:' || host === '127.0.0.1'),
    );
  }

  /** Every cookie held. */
  get cookies(): readonly JarCookie[] {
    return this.jar;
  }

  private store(url: URL, header: string): void {
    const [pair = '', ...attributes] = header.split(';').map((part) => part.trim());
    const equals = pair.indexOf('=');
    if (equals <= 0) return;
    const cookie: JarCookie = {
      name: pair.slice(0, equals),
      value: pair.slice(equals + 1),
      domain: url.hostname.toLowerCase(),
      hostOnly: true,
      path: '/',
      secure: false,
      httpOnly: false,
      sameSite: undefined,
    };
    let expired = false;
    for (const attribute of attributes) {
      const [rawName = '', ...rest] = attribute.split('=');
      const name = rawName.toLowerCase();
      const value = rest.join('=');
      if (name === 'domain' && value) {
        const domain = value.replace(/^\./, '').toLowerCase();
        if (!domainMatches(url.hostname.toLowerCase(), { ...cookie, domain, hostOnly: false })) return; // a browser refuses it
        cookie.domain = domain;
        cookie.hostOnly = false;
      } else if (name === 'path' && value.startsWith('/')) cookie.path = value;
      else if (name === 'secure') cookie.secure = true;
      else if (name === 'httponly') cookie.httpOnly = true;
      else if (name === 'samesite') cookie.sameSite = value.toLowerCase();
      else if (name === 'max-age' && Number(value) <= 0) expired = true;
      else if (name === 'expires' && Date.parse(value) <= Date.now()) expired = true;
    }
    this.jar = this.jar.filter((c) => !(c.name === cookie.name && c.domain === cookie.domain && c.path === cookie.path));
    if (!expired) this.jar.push(cookie);
  }

  /** Sends one request (no redirect following) and stores the cookies it sets. */
  request(url: string, options: UserAgentRequest = {}): Promise<UserAgentResponse> {
    const target = new URL(url);
    const mapped = target.hostname === this.mappedDomain || target.hostname.endsWith(`.${this.mappedDomain}`);
    const port = Number(target.port || (target.protocol === 'https:' ? 443 : 80));
    const body = options.form ? new URLSearchParams(options.form).toString() : undefined;
    const method = options.method ?? (body !== undefined ? 'POST' : 'GET');
    const headers: Record<string, string> = {
      Host: target.host,
      Accept: 'text/html,application/xhtml+xml',
      ...(mapped ? { 'X-Forwarded-Proto': target.protocol.replace(':', '') } : {}),
      // A browser sends the Origin of the page behind a state-changing request; this one's pages are on the target.
      ...(method !== 'GET' && method !== 'HEAD' && method !== 'OPTIONS' ? { Origin: target.origin } : {}),
      ...(body !== undefined
        ? { 'Content-Type': 'application/x-www-form-urlencoded', 'Content-Length': String(Buffer.byteLength(body)) }
        : {}),
      ...options.headers,
    };
    const cookies = this.cookiesFor(url);
    if (cookies.length > 0) headers.Cookie = cookies.map((cookie) => `${cookie.name}=${cookie.value}`).join('; ');
    return new Promise((resolve, reject) => {
      const req = httpRequest(
        {
          host: '127.0.0.1',
          port,
          method,
          path: `${target.pathname}${target.search}`,
          headers,
          agent: false,
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('end', () => {
            for (const header of res.headers['set-cookie'] ?? []) this.store(target, header);
            const location = typeof res.headers.location === 'string' ? new URL(res.headers.location, target).href : undefined;
            resolve({ url, status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8'), location });
          });
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  }

  /**
   * Follows redirects (GET after any 3xx, as browsers do after 302/303) and returns every answer, the last being
   * the one that did not redirect. `stopAt` ends the walk before requesting a URL it matches.
   */
  async follow(
    url: string,
    options: UserAgentRequest & { stopAt?: (url: string) => boolean; maxRedirects?: number } = {},
  ): Promise<UserAgentResponse[]> {
    const chain: UserAgentResponse[] = [];
    let next: string | undefined = url;
    let init: UserAgentRequest = options;
    for (let hop = 0; next !== undefined && hop <= (options.maxRedirects ?? 20); hop += 1) {
      if (hop > 0 && options.stopAt?.(next)) break;
      const response = await this.request(next, init);
      chain.push(response);
      next = response.status >= 300 && response.status < 400 ? response.location : undefined;
      // Redirects become GETs without a body; extra headers (e.g. Accept) stay, as a client's defaults would.
      init = options.headers ? { headers: options.headers } : {};
    }
    return chain;
  }
}
