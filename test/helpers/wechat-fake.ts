import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';

/**
 * A minimal stand-in for WeChat's web QR login, written to its wire format only: every API is GET with a query,
 * errors are `{ errcode, errmsg }` with HTTP 200, userinfo takes the token in the query. It lets the relying-app
 * side be tested against WeChat's conventions without the kit's own provider.
 */
export interface WeChatFake {
  url: string;
  appid: string;
  secret: string;
  /** Mints a code for a user, as if they had scanned and confirmed. */
  issueCode(openid: string): string;
  /** Every request the fake received: method, path and query names (values are not kept: they hold secrets). */
  calls: Array<{ method: string; path: string; params: string[] }>;
  /** When set, the next requests answer with HTTP 200 and this errcode. */
  failWith: number | undefined;
  close(): Promise<void>;
}

const PROFILES: Record<string, Record<string, unknown>> = {};

export async function startWeChatFake(): Promise<WeChatFake> {
  const appid = 'wx' + randomBytes(8).toString('hex');
  const secret = randomBytes(16).toString('hex');
  const codes = new Map<string, { openid: string; used: boolean }>();
  const accessTokens = new Map<string, string>();
  const refreshTokens = new Map<string, string>();
  const fake: WeChatFake = {
    url: '',
    appid,
    secret,
    calls: [],
    failWith: undefined,
    issueCode(openid) {
      const code = randomBytes(16).toString('hex');
      codes.set(code, { openid, used: false });
      PROFILES[openid] = {
        openid,
        nickname: `Nick ${openid.slice(0, 4)}`,
        sex: 1,
        province: 'Guangdong',
        city: 'Shenzhen',
        country: 'CN',
        headimgurl: '',
        privilege: [],
        unionid: `u-${openid}`,
      };
      return code;
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };

  const send = (res: ServerResponse, body: unknown) => {
    // WeChat answers everything, errors included, with HTTP 200 and a JSON body (served as text/plain at times).
    res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' }).end(JSON.stringify(body));
  };
  const error = (res: ServerResponse, errcode: number, errmsg: string) => send(res, { errcode, errmsg });
  const issueTokens = (openid: string) => {
    const access = randomBytes(24).toString('base64url');
    const refresh = randomBytes(24).toString('base64url');
    accessTokens.set(access, openid);
    refreshTokens.set(refresh, openid);
    return { access_token: access, expires_in: 7200, refresh_token: refresh, openid, scope: 'snsapi_login', unionid: `u-${openid}` };
  };

  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://fake');
    const q = url.searchParams;
    fake.calls.push({ method: req.method ?? '', path: url.pathname, params: [...q.keys()] });
    if (req.method !== 'GET') return error(res, 43001, 'require GET method');
    if (fake.failWith !== undefined) return error(res, fake.failWith, 'injected failure');
    if (url.pathname === '/sns/oauth2/access_token') {
      if (q.get('appid') !== appid) return error(res, 40013, 'invalid appid');
      if (q.get('secret') !== secret) return error(res, 40125, 'invalid appsecret');
      if (q.get('grant_type') !== 'authorization_code') return error(res, 40002, 'invalid grant_type');
      const entry = codes.get(q.get('code') ?? '');
      if (!entry) return error(res, 40029, 'invalid code');
      if (entry.used) return error(res, 40163, 'code been used');
      entry.used = true;
      return send(res, issueTokens(entry.openid));
    }
    if (url.pathname === '/sns/userinfo') {
      const token = q.get('access_token');
      if (!token) return error(res, 41001, 'access_token missing');
      const openid = accessTokens.get(token);
      if (!openid) return error(res, 40001, 'invalid credential');
      if (q.get('openid') !== openid) return error(res, 40003, 'invalid openid');
      return send(res, PROFILES[openid]);
    }
    if (url.pathname === '/sns/oauth2/refresh_token') {
      if (q.get('appid') !== appid) return error(res, 40013, 'invalid appid');
      const openid = refreshTokens.get(q.get('refresh_token') ?? '');
      if (!openid) return error(res, 40030, 'invalid refresh_token');
      refreshTokens.delete(q.get('refresh_token') ?? '');
      return send(res, issueTokens(openid));
    }
    return error(res, 40066, 'invalid url');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const address = server.address();
  fake.url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  return fake;
}
