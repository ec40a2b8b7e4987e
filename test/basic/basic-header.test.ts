import { parseBasicAuthorization } from '../../lib/basic/basic-header';

const encode = (text: string | Buffer) => Buffer.from(text).toString('base64');

describe('parseBasicAuthorization', () => {
  it('decodes user-id and password, splitting at the first colon', () => {
    expect(parseBasicAuthorization(`Basic ${encode('alice:pa:ss:word')}`)).toEqual({
      kind: 'credentials',
      username: 'alice',
      password: 'pa:ss:word',
    });
  });

  it('accepts the scheme in any case and an empty password', () => {
    expect(parseBasicAuthorization(`bAsIc ${encode('alice:')}`)).toEqual({ kind: 'credentials', username: 'alice', password: '' });
  });

  it('decodes UTF-8', () => {
    expect(parseBasicAuthorization(`Basic ${encode('jürgen:pässwörd')}`)).toEqual({
      kind: 'credentials',
      username: 'jürgen',
      password: 'pässwörd',
    });
  });

  it.each([undefined, '', 'Bearer abc.def.ghi', 'Basically abc', 'Digest username="x"'])(
    'reports %j as absent, so the challenge is sent',
    (header) => {
      expect(parseBasicAuthorization(header)).toEqual({ kind: 'absent' });
    },
  );

  it.each([
    ['no token after the scheme', 'Basic', /one base64 token/],
    ['an empty token', 'Basic ', /one base64 token/],
    ['two tokens', `Basic ${encode('a:b')} ${encode('c:d')}`, /one base64 token/],
    ['characters outside base64', 'Basic YWxp!2U6eA==', /not valid base64/],
    ['base64url characters', `Basic ${Buffer.from('a?>:b').toString('base64url')}`, /not valid base64/],
    ['missing padding', 'Basic YWxpY2U6eA', /not valid base64/],
    ['padding in the middle', 'Basic YQ==YWxpY2U6', /not valid base64/],
    ['non-zero padding bits', 'Basic YWxpY2U6eB==', /not canonical/],
    ['no colon', `Basic ${encode('alice')}`, /must be "user:password"/],
    ['invalid UTF-8', `Basic ${encode(Buffer.from([0x61, 0x3a, 0xff, 0xfe]))}`, /not valid UTF-8/],
    ['a control character in the user-id', `Basic ${encode('ali\u0000ce:x')}`, /control characters/],
    ['a line break in the password', `Basic ${encode('alice:a\nb')}`, /control characters/],
  ])('reports %s as malformed', (_name, header, reason) => {
    const parsed = parseBasicAuthorization(header);
    expect(parsed.kind).toBe('malformed');
    expect(parsed.kind === 'malformed' && parsed.reason).toMatch(reason);
  });
});
