import express from 'express';
import request from 'supertest';
import { OptionsError, securityHeaders, type SecurityHeadersOptions } from '../../lib/http';

async function headersWith(options?: SecurityHeadersOptions): Promise<Record<string, string>> {
  const app = express();
  app.use(securityHeaders(options));
  app.get('/', (_req, res) => res.send('ok'));
  return (await request(app).get('/')).headers as Record<string, string>;
}

/** The CSP as a map of directive → value, so tests compare directives, not their order. */
function directives(csp: string | undefined): Record<string, string> {
  return Object.fromEntries(
    (csp ?? '')
      .split(';')
      .map((part) => part.trim())
      .filter(Boolean)
      .map((part) => {
        const [name = '', ...values] = part.split(/\s+/);
        return [name, values.join(' ')];
      }),
  );
}

const STRICT = {
  'default-src': "'self'",
  'script-src': "'self'",
  'style-src': "'self'",
  'img-src': "'self' data:",
  'connect-src': "'self'",
  'form-action': "'self'",
  'frame-ancestors': "'none'",
  'base-uri': "'none'",
  'object-src': "'none'",
};

describe('securityHeaders', () => {
  it('sets a strict CSP without inline scripts, a same-origin referrer policy, HSTS and frame-ancestors none', async () => {
    const headers = await headersWith();
    expect(directives(headers['content-security-policy'])).toEqual(STRICT);
    expect(headers['content-security-policy']).not.toContain('unsafe-inline');
    expect(headers['referrer-policy']).toBe('same-origin');
    expect(headers['strict-transport-security']).toBe('max-age=31536000; includeSubDomains');
    expect(headers['x-content-type-options']).toBe('nosniff');
  });

  describe('merges a CSP override per directive', () => {
    it('replaces only the directive given and keeps the rest of the strict policy', async () => {
      const headers = await headersWith({ contentSecurityPolicy: { directives: { connectSrc: ["'self'", 'https://api.example.test'] } } });
      expect(directives(headers['content-security-policy'])).toEqual({ ...STRICT, 'connect-src': "'self' https://api.example.test" });
    });

    it('treats camelCase and dashed names as one directive', async () => {
      const headers = await headersWith({
        contentSecurityPolicy: { directives: { 'script-src': ["'self'", 'https://cdn.example.test'] } },
      });
      expect(directives(headers['content-security-policy'])['script-src']).toBe("'self' https://cdn.example.test");
    });

    it('adds a directive the preset does not have', async () => {
      const headers = await headersWith({ contentSecurityPolicy: { directives: { fontSrc: ["'self'"] } } });
      expect(directives(headers['content-security-policy'])).toEqual({ ...STRICT, 'font-src': "'self'" });
    });

    it('removes a directive given as null', async () => {
      const headers = await headersWith({ contentSecurityPolicy: { directives: { imgSrc: null } } });
      const { 'img-src': _removed, ...rest } = STRICT;
      expect(directives(headers['content-security-policy'])).toEqual(rest);
    });

    it('keeps the strict policy for reportOnly, in the report-only header', async () => {
      const headers = await headersWith({ contentSecurityPolicy: { reportOnly: true, directives: { reportUri: ['/csp-reports'] } } });
      expect(headers['content-security-policy']).toBeUndefined();
      expect(directives(headers['content-security-policy-report-only'])).toEqual({ ...STRICT, 'report-uri': '/csp-reports' });
    });

    it('turns the CSP off only when asked with false', async () => {
      expect((await headersWith({ contentSecurityPolicy: false }))['content-security-policy']).toBeUndefined();
      expect(directives((await headersWith({ contentSecurityPolicy: true }))['content-security-policy'])).toEqual(STRICT);
    });
  });

  it('replaces other preset values, also when named by helmet’s aliases', async () => {
    expect((await headersWith({ referrerPolicy: { policy: 'no-referrer' } }))['referrer-policy']).toBe('no-referrer');
    expect((await headersWith({ hsts: { maxAge: 60 } }))['strict-transport-security']).toBe('max-age=60; includeSubDomains');
    expect((await headersWith({ strictTransportSecurity: false }))['strict-transport-security']).toBeUndefined();
  });

  it('validates its options when called', () => {
    expect(() => securityHeaders({ contentSecurityPolcy: {} } as never)).toThrow(
      /^securityHeaders: unknown option "contentSecurityPolcy" \(did you mean "contentSecurityPolicy"\?\)/,
    );
    expect(() => securityHeaders({ contentSecurityPolicy: { directive: {} } } as never)).toThrow(
      /unknown option "contentSecurityPolicy.directive" \(did you mean "contentSecurityPolicy.directives"\?\)/,
    );
    expect(() => securityHeaders({ hsts: false, strictTransportSecurity: false } as never)).toThrow(
      'securityHeaders: strictTransportSecurity and hsts cannot be used together; give only one of them',
    );
    expect(() => securityHeaders({ referrerPolicy: 'no-referrer' } as never)).toThrow(OptionsError);
  });
});
