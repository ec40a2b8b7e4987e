import dns from 'node:dns';
import { resolveToLoopback } from '../../example-app/loopback-dns';

describe('resolveToLoopback', () => {
  // Called the way net.connect calls it: through the module's current `lookup`, with a callback.
  const lookup = (name: string) =>
    new Promise<{ address: string; family: number }>((resolve, reject) => {
      dns.lookup(name, { family: 4 }, (error, address, family) => (error ? reject(error) : resolve({ address, family })));
    });

  it('resolves the domain and its subdomains to 127.0.0.1 and leaves other names alone', async () => {
    const original = dns.lookup;
    const undo = resolveToLoopback('demo-dns.test');
    try {
      await expect(lookup('idp.demo-dns.test')).resolves.toEqual({ address: '127.0.0.1', family: 4 });
      await expect(lookup('demo-dns.test')).resolves.toEqual({ address: '127.0.0.1', family: 4 });
      await expect(lookup('idp.demo-dns.test.evil.example')).rejects.toThrow();
      await expect(lookup('localhost')).resolves.toMatchObject({ address: '127.0.0.1' });
    } finally {
      undo();
    }
    expect(dns.lookup).toBe(original);
    await expect(lookup('idp.demo-dns.test')).rejects.toThrow();
  });

  it('keeps the mapping while another demo still uses the same domain', async () => {
    const first = resolveToLoopback('shared-dns.test');
    const second = resolveToLoopback('shared-dns.test');
    first();
    await expect(lookup('a.shared-dns.test')).resolves.toMatchObject({ address: '127.0.0.1' });
    second();
    await expect(lookup('a.shared-dns.test')).rejects.toThrow();
  });
});
