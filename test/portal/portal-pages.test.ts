import { renderLoginPage, renderSessionsPage } from '../../lib/portal/portal-pages';

const base = { title: 'Sign in', assetsPath: '/portal-assets', formAction: '/login', returnTo: '', providerLinks: [] };

describe('renderLoginPage', () => {
  it('is an accessible page: lang, one h1, labelled fields in order, no inline script or style', () => {
    const html = renderLoginPage(base);
    expect(html).toMatch(/<html lang="en">/);
    expect(html.match(/<h1>/g)).toHaveLength(1);
    expect(html).toContain('<label for="username">');
    expect(html).toContain('<label for="password">');
    expect(html.indexOf('id="username"')).toBeLessThan(html.indexOf('id="password"'));
    expect(html.indexOf('id="password"')).toBeLessThan(html.indexOf('type="submit"'));
    expect(html).not.toMatch(/<script>|<script(?![^>]*src=)|<style|\sstyle=|\son[a-z]+=/i);
  });

  it('announces an error with role="alert" tied to the fields', () => {
    const html = renderLoginPage({ ...base, error: 'Wrong username or password' });
    expect(html).toContain('<p class="alert" role="alert" id="login-error">Wrong username or password</p>');
    expect(html).toContain('aria-describedby="login-error"');
  });

  it('escapes every value it echoes, so a hostile return_to or username cannot inject markup', () => {
    const html = renderLoginPage({ ...base, returnTo: '"><script>alert(1)</script>', username: '<img src=x onerror=alert(1)>' });
    expect(html).not.toContain('<script>alert(1)');
    expect(html).not.toContain('<img src=x');
    expect(html).toContain('value="&#34;&#62;&#60;script&#62;');
  });

  it('links the QR login and each identity provider when configured', () => {
    const html = renderLoginPage({
      ...base,
      qrLink: { label: 'Scan a QR code', href: '/qr?x=1&y=2' },
      providerLinks: [{ label: 'Sign in with Demo IdP', href: '/oidc/demo' }],
    });
    expect(html).toContain('href="/qr?x=1&#38;y=2">Scan a QR code</a>');
    expect(html).toContain('href="/oidc/demo">Sign in with Demo IdP</a>');
  });
});

describe('renderSessionsPage', () => {
  it('lists sessions with a revoke form each and marks the current one', () => {
    const html = renderSessionsPage({
      title: 'Your sessions',
      assetsPath: '/portal-assets',
      userName: 'Alice',
      revokeAction: '/sessions/revocations',
      logoutAction: '/logout',
      sessions: [
        { handle: 'h1', userAgent: 'Firefox', ip: '10.0.0.1', lastSeenAt: 1_700_000_000_000, createdAt: 1, current: true },
        { handle: 'h2', userAgent: '<b>evil</b>', ip: '10.0.0.2', lastSeenAt: 1_700_000_000_000, createdAt: 1, current: false },
      ],
    });
    expect(html.match(/name="session" value="h\d"/g)).toEqual(['name="session" value="h1"', 'name="session" value="h2"']);
    expect(html.match(/aria-current="true"/g)).toHaveLength(1);
    expect(html).toContain('&#60;b&#62;evil');
    expect(html.match(/<h1>/g)).toHaveLength(1);
  });

  it('names each device and its last activity the way people say them, with the exact time kept for machines', () => {
    const now = Date.UTC(2031, 0, 1, 12);
    const html = renderSessionsPage({
      title: 'Your sessions',
      assetsPath: '/portal-assets',
      userName: 'Alice',
      revokeAction: '/sessions/revocations',
      logoutAction: '/logout',
      now,
      sessions: [
        {
          handle: 'h1',
          userAgent: 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36',
          ip: '198.51.100.7',
          lastSeenAt: now - 20_000,
          createdAt: now - 60_000,
          method: 'qr',
          current: true,
        },
      ],
    });
    expect(html).toContain('<span class="device">Chrome on Linux</span>');
    expect(html).not.toContain('Mozilla/5.0');
    expect(html).toContain(`active <time datetime="${new Date(now - 20_000).toISOString()}">just now</time>`);
    expect(html).toContain('signed in with a QR code');
    expect(html).toContain('<link rel="stylesheet" href="/portal-assets/portal.css">');
  });
});
