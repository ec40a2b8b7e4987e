import { readDemoEnvironment } from '../../example-app/demo-config';

describe('readDemoEnvironment', () => {
  it('defaults to sso.localhost on 127.0.0.1:8080 over plain http', () => {
    expect(readDemoEnvironment({})).toEqual({
      domain: 'sso.localhost',
      port: 8080,
      host: '127.0.0.1',
      publicPort: undefined,
      redisUrl: undefined,
      secure: false,
      tls: undefined,
    });
  });

  it('reads every variable docker-compose sets', () => {
    const env = readDemoEnvironment({
      DEMO_DOMAIN: 'Demo.Example.Test',
      PORT: '0',
      HOST: '0.0.0.0',
      DEMO_PUBLIC_PORT: '443',
      REDIS_URL: 'redis://redis:6379',
      DEMO_SECURE: '1',
    });
    expect(env).toMatchObject({
      domain: 'demo.example.test',
      port: 0,
      host: '0.0.0.0',
      publicPort: 443,
      redisUrl: 'redis://redis:6379',
      secure: true,
    });
  });

  it('turns https on with a certificate and key', () => {
    expect(readDemoEnvironment({ DEMO_TLS_CERT: 'c.pem', DEMO_TLS_KEY: 'k.pem' })).toMatchObject({
      secure: true,
      tls: { certPath: 'c.pem', keyPath: 'k.pem' },
    });
  });

  it.each([
    [{ DEMO_DOMAIN: 'localhost' }, /DEMO_DOMAIN/],
    [{ DEMO_DOMAIN: '127.0.0.1' }, /DEMO_DOMAIN/],
    [{ DEMO_DOMAIN: 'co.uk' }, /DEMO_DOMAIN/],
    [{ PORT: 'eighty' }, /PORT must be a port number/],
    [{ DEMO_PUBLIC_PORT: '70000' }, /DEMO_PUBLIC_PORT/],
    [{ REDIS_URL: 'http://redis' }, /REDIS_URL must start with redis:\/\//],
    [{ DEMO_SECURE: 'yes' }, /DEMO_SECURE must be 1 or 0/],
    [{ DEMO_TLS_CERT: 'c.pem' }, /go together/],
  ])('refuses %j with a message naming the variable', (env, message) => {
    expect(() => readDemoEnvironment(env)).toThrow(message);
  });
});
