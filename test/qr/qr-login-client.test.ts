import { createServer, type Server } from 'node:http';
import { exchangeCode, fetchUserinfo, refreshTokens, type QrProviderClientSettings } from '../../lib/qr/qr-login-client';
import { startWeChatFake, type WeChatFake } from '../helpers/wechat-fake';

let wechat: WeChatFake;
let settings: QrProviderClientSettings;

beforeAll(async () => {
  wechat = await startWeChatFake();
  settings = {
    providerUrl: wechat.url,
    appid: wechat.appid,
    secret: wechat.secret,
    exchangeMethod: 'GET',
    userinfoTokenIn: 'query',
    timeoutMs: 2000,
  };
});
afterAll(() => wechat.close());

/** A provider answering every request with this status and body. */
async function answering(status: number, body: string): Promise<{ url: string; close: () => Promise<void> }> {
  const server: Server = createServer((_req, res) => {
    res.writeHead(status, { 'content-type': 'application/json' }).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

describe('the relying app’s provider client', () => {
  it('exchanges, reads userinfo and refreshes on WeChat’s wire format', async () => {
    const code = wechat.issueCode('oClientTest000000000000000001');
    const tokens = await exchangeCode(settings, code);
    expect(tokens).toMatchObject({ openid: 'oClientTest000000000000000001', unionid: 'u-oClientTest000000000000000001' });
    expect(tokens.expiresAt).toBeGreaterThan(Date.now() / 1000 + 7000);
    expect((await fetchUserinfo(settings, tokens)).nickname).toBe('Nick oCli');
    const renewed = await refreshTokens(settings, tokens);
    expect(renewed.refreshToken).not.toBe(tokens.refreshToken);
  });

  it('turns errcode bodies sent with HTTP 200 into errors carrying the errcode', async () => {
    await expect(exchangeCode(settings, 'no-such-code')).rejects.toMatchObject({
      status: 400,
      code: 'qr_code_rejected',
      extensions: { errcode: 40029 },
    });
    await expect(exchangeCode({ ...settings, secret: 'w'.repeat(32) }, 'x')).rejects.toMatchObject({
      status: 502,
      extensions: { errcode: 40125 },
    });
  });

  it('answers 502 for a body that is not the expected tokens, and for userinfo about another openid', async () => {
    const odd = await answering(200, '{"access_token":"a"}');
    try {
      await expect(exchangeCode({ ...settings, providerUrl: odd.url }, 'c')).rejects.toMatchObject({
        status: 502,
        code: 'qr_provider_bad_response',
      });
    } finally {
      await odd.close();
    }
    const other = await answering(200, '{"openid":"someone-else"}');
    try {
      const tokens = { accessToken: 'a', refreshToken: 'r', openid: 'me', expiresAt: 0 };
      await expect(fetchUserinfo({ ...settings, providerUrl: other.url }, tokens)).rejects.toMatchObject({ status: 502 });
    } finally {
      await other.close();
    }
    const html = await answering(500, '<html>oops</html>');
    try {
      await expect(exchangeCode({ ...settings, providerUrl: html.url }, 'c')).rejects.toMatchObject({ status: 502 });
    } finally {
      await html.close();
    }
  });

  it('answers 503 when the provider is unreachable or answers 503', async () => {
    const busy = await answering(503, '');
    try {
      await expect(exchangeCode({ ...settings, providerUrl: busy.url }, 'c')).rejects.toMatchObject({ status: 503 });
    } finally {
      await busy.close();
    }
    await expect(exchangeCode({ ...settings, providerUrl: busy.url }, 'c')).rejects.toMatchObject({
      status: 503,
      code: 'qr_provider_unavailable',
    });
  });

  it('rejects a refused refresh token with 401 qr_refresh_rejected', async () => {
    const tokens = { accessToken: 'a', refreshToken: 'not-a-refresh-token', openid: 'x', expiresAt: 0 };
    await expect(refreshTokens(settings, tokens)).rejects.toMatchObject({ status: 401, code: 'qr_refresh_rejected' });
  });
});
