import dns from 'node:dns';
import { resolveDemoDomain } from '../../example-app/common/demo-dns';

describe('resolveDemoDomain', () => {
  // Called the way net.connect calls it: through the module's current `lookup`, with a callback.
  const lookup = (name: string, all = false) =>
    new Promise<unknown>((resolve, reject) => {
      dns.lookup(name, { family: 4, all }, (error, address, family) =>
        error ? reject(error) : resolve(all ? address : { address, family }),
      );
    });

  it('resolves the domain and its subdomains to the front door, and leaves other names alone', async () => {
    const original = dns.lookup;
    const undo = resolveDemoDomain('demo-dns.test', '127.0.0.1');
    try {
      await expect(lookup('idp.demo-dns.test')).resolves.toEqual({ address: '127.0.0.1', family: 4 });
      await expect(lookup('DEMO-DNS.test')).resolves.toEqual({ address: '127.0.0.1', family: 4 });
      await expect(lookup('auth.demo-dns.test', true)).resolves.toEqual([{ address: '127.0.0.1', family: 4 }]);
      await expect(lookup('idp.demo-dns.test.evil.example')).rejects.toThrow();
      await expect(lookup('evildemo-dns.test')).rejects.toThrow();
      await expect(lookup('localhost')).resolves.toMatchObject({ address: '127.0.0.1' });
    } finally {
      undo();
    }
    expect(dns.lookup).toBe(original);
    await expect(lookup('idp.demo-dns.test')).rejects.toThrow();
  });

  it('resolves to a front door given by name (the proxy service of docker compose)', async () => {
    const undo = resolveDemoDomain('demo-dns.test', 'localhost');
    try {
      await expect(lookup('shop.demo-dns.test')).resolves.toMatchObject({ address: '127.0.0.1' });
    } finally {
      undo();
    }
  });
});
