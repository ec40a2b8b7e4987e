import {
  renderRecoveryCodesPage,
  renderResumePage,
  renderStepUpPage,
  renderTotpEnrolmentPage,
  renderTwoFactorPage,
} from '../../../lib/portal/two-factor/two-factor-pages';

const HOSTILE = '"><script>alert(1)</script>';

describe('the second-factor pages', () => {
  const pages = [
    renderStepUpPage({
      assetsPath: '/portal-assets',
      action: '/step-up',
      returnTo: `https://shop.example.test/?q=${HOSTILE}`,
      acr: '2fa',
      maxAge: '300',
      needsPassword: true,
      methods: [{ id: 'totp', label: HOSTILE, fields: '<input name="code">', scripts: ['/portal-assets/key.js', '/portal-assets/key.js'] }],
      error: HOSTILE,
    }),
    renderTotpEnrolmentPage({
      assetsPath: '/portal-assets',
      action: '/two-factor/totp',
      returnTo: HOSTILE,
      qrSvg: '<svg></svg>',
      secret: 'JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP',
      sealedPending: 'v1.k.iv.body',
      error: HOSTILE,
    }),
    renderRecoveryCodesPage({ assetsPath: '/portal-assets', codes: ['ABCDE-FGHJK'], continueUrl: HOSTILE }),
    renderTwoFactorPage({
      assetsPath: '/portal-assets',
      userName: HOSTILE,
      totpEnrolled: true,
      remainingRecoveryCodes: 1,
      enrolUrl: '/two-factor/totp',
      regenerateAction: '/two-factor/recovery-codes',
      removeAction: HOSTILE,
    }),
  ];

  it('escapes every value and holds no inline script or style (the strict CSP)', () => {
    for (const html of pages) {
      expect(html).not.toContain('<script>alert(1)');
      expect(html).not.toMatch(/<script>(?!<\/script>)/);
      expect(html).not.toMatch(/\sstyle=|<style|\son[a-z]+=/i);
    }
  });

  it('shows the secret in groups of four, one script tag per distinct method script, and counts the codes left', () => {
    expect(pages[1]).toContain('JBSW Y3DP EHPK 3PXP JBSW Y3DP EHPK 3PXP');
    expect(pages[0]!.match(/key\.js/g)).toHaveLength(1);
    expect(pages[0]).toContain('name="password"');
    expect(pages[3]).toContain('1 unused recovery code left');
  });
});

describe('renderResumePage', () => {
  it('posts the kept form again, escaped, to its action, with a button for browsers without script', () => {
    const html = renderResumePage({
      assetsPath: '/portal-assets',
      action: 'https://auth.example.test/sessions/revocations',
      fields: [
        ['session', 'h"1<'],
        ['note"', 'a&b'],
      ],
    });
    expect(html).toContain('<form method="post" action="https://auth.example.test/sessions/revocations" data-resume>');
    expect(html).toContain('<input type="hidden" name="session" value="h&#34;1&#60;">');
    expect(html).toContain('<input type="hidden" name="note&#34;" value="a&#38;b">');
    expect(html).toContain('<button type="submit" class="block">Continue</button>');
    expect(html).toContain('<script src="/portal-assets/portal.js" defer></script>');
    expect(html).not.toMatch(/<script>|\sstyle=|\son[a-z]+=/i);
  });
});
