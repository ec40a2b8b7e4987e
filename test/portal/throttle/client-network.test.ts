import { clientNetwork } from '../../../lib/portal/throttle/client-network';

describe('clientNetwork', () => {
  it('counts an IPv4 client by its address', () => {
    expect(clientNetwork('198.51.100.7')).toBe('ipv4:198.51.100.7');
    expect(clientNetwork('198.51.100.8')).not.toBe(clientNetwork('198.51.100.7'));
  });

  it.each(['::ffff:198.51.100.7', '::FFFF:198.51.100.7', '::ffff:c633:6407', '0:0:0:0:0:ffff:c633:6407'])(
    'counts the IPv4-mapped address %s as the IPv4 address',
    (mapped) => {
      expect(clientNetwork(mapped)).toBe('ipv4:198.51.100.7');
    },
  );

  it('counts every address of one /64 as one network, and the next /64 as another', () => {
    const network = clientNetwork('2001:db8:1:2::1');
    expect(network).toBe('ipv6:2001:db8:1:2:0:0:0:0/64');
    for (const address of ['2001:db8:1:2:ffff:ffff:ffff:ffff', '2001:db8:1:2:a:b:c:d', '2001:0db8:0001:0002:0000:0000:0000:0002']) {
      expect(clientNetwork(address)).toBe(network);
    }
    expect(clientNetwork('2001:db8:1:3::1')).not.toBe(network);
  });

  it('expands :: wherever it stands and ignores case', () => {
    const full = clientNetwork('2001:db8:0:0:1:0:0:1', 128);
    expect(clientNetwork('2001:db8::1:0:0:1', 128)).toBe(full);
    expect(clientNetwork('2001:DB8:0:0:1::1', 128)).toBe(full);
    expect(clientNetwork('::1', 128)).toBe('ipv6:0:0:0:0:0:0:0:1/128');
    expect(clientNetwork('::', 128)).toBe('ipv6:0:0:0:0:0:0:0:0/128');
    expect(clientNetwork('1::', 128)).toBe('ipv6:1:0:0:0:0:0:0:0/128');
  });

  it('drops a zone id', () => {
    expect(clientNetwork('fe80::1%eth0')).toBe(clientNetwork('fe80::2'));
    expect(clientNetwork('fe80::1%25eth0', 128)).toBe('ipv6:fe80:0:0:0:0:0:0:1/128');
  });

  it('keys by the configured prefix length, also inside a 16-bit group', () => {
    expect(clientNetwork('2001:db8:abcd:1234::1', 48)).toBe('ipv6:2001:db8:abcd:0:0:0:0:0/48');
    expect(clientNetwork('2001:db8:abcd:12ff::1', 56)).toBe('ipv6:2001:db8:abcd:1200:0:0:0:0/56');
    expect(clientNetwork('2001:db8::1', 128)).not.toBe(clientNetwork('2001:db8::2', 128));
  });

  it.each(['not-an-ip', '', '010.1.1.1', '1:2:3:4:5:6:7:8:9', '[2001:db8::1]'])(
    'counts the text %j that is no address as a network of its own',
    (text) => {
      expect(clientNetwork(text)).toMatch(/^other:[A-Za-z0-9_-]{22}$/);
      expect(clientNetwork(text)).toBe(clientNetwork(text));
    },
  );
});
