import { WECHAT_ERRORS, WeChatApiError } from '../../lib/qr/wechat-errors';

describe('WeChatApiError', () => {
  it('carries WeChat’s errcode and errmsg with the chosen HTTP status', () => {
    const error = new WeChatApiError('code_used');
    expect({ status: error.status, errcode: error.errcode, errmsg: error.errmsg }).toEqual({
      status: 400,
      errcode: 40163,
      errmsg: 'code been used',
    });
  });

  it('adds a Bearer challenge to refused access tokens only', () => {
    expect(new WeChatApiError('access_token_expired').headers['WWW-Authenticate']).toMatch(/^Bearer /);
    expect(new WeChatApiError('missing_access_token').headers['WWW-Authenticate']).toMatch(/^Bearer /);
    expect(new WeChatApiError('invalid_secret').headers['WWW-Authenticate']).toBeUndefined();
  });

  it('uses 401 for credentials and tokens, 400 for parameters, 503 only for the outage', () => {
    const byStatus = (status: number) =>
      Object.entries(WECHAT_ERRORS)
        .filter(([, entry]) => entry.status === status)
        .map(([name]) => name)
        .sort();
    expect(byStatus(401)).toEqual([
      'access_token_expired',
      'invalid_access_token',
      'invalid_appid',
      'invalid_secret',
      'missing_access_token',
    ]);
    expect(byStatus(503)).toEqual(['system_busy']);
    expect(new Set(Object.values(WECHAT_ERRORS).map((entry) => entry.errcode)).size).toBe(Object.keys(WECHAT_ERRORS).length);
  });
});
