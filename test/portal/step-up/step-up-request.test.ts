import express from 'express';
import request from 'supertest';
import { hereUrl, requirementOf } from '../../../lib/portal/step-up/step-up-request';

describe('requirementOf', () => {
  it('reads the level and max age, 2fa when no level is named', () => {
    expect(requirementOf(undefined, undefined)).toEqual({ acr: '2fa' });
    expect(requirementOf('phr', '')).toEqual({ acr: 'phr' });
    expect(requirementOf('1fa', '0')).toEqual({ acr: '1fa', maxAgeSeconds: 0 });
    expect(requirementOf('2fa', '300')).toEqual({ acr: '2fa', maxAgeSeconds: 300 });
  });

  it.each([
    ['an unknown level', '3fa', undefined],
    ['a repeated level', ['2fa', '2fa'], undefined],
    ['a negative max age', '2fa', '-1'],
    ['a fractional max age', '2fa', '1.5'],
    ['a max age beyond a year', '2fa', '31536001'],
    ['a repeated max age', '2fa', ['1', '2']],
  ])('refuses %s with 400 invalid_request', (_label, acr, maxAge) => {
    expect(() => requirementOf(acr, maxAge)).toThrow(expect.objectContaining({ status: 400, code: 'invalid_request' }));
  });
});

describe('hereUrl', () => {
  const app = express();
  app.get('/step-up', (req, res) => {
    res.json({ here: hereUrl(req) });
  });

  it('names the request in full, so a login page on another site sends the browser back here', async () => {
    const res = await request(app).get('/step-up?acr=2fa').set('Host', 'auth.example.test:8443');
    expect(res.body.here).toBe('http://auth.example.test:8443/step-up?acr=2fa');
  });

  it('is empty without a usable host, so no detour carries a bare path the login page would resolve elsewhere', async () => {
    const res = await request(app).get('/step-up?acr=2fa').set('Host', 'bad host');
    expect(res.body.here).toBe('');
  });
});
