import dns from 'node:dns';
import { BlockList, isIP } from 'node:net';

// Addresses that are not the public internet (RFC 6890 and its IANA registries): loopback, private networks,
// link-local (cloud metadata at 169.254.169.254), shared, documentation, benchmarking, multicast and reserved.
const SPECIAL_USE = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 3],
] as const) {
  SPECIAL_USE.addSubnet(network, prefix, 'ipv4');
}
for (const [network, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['64:ff9b::', 96],
  ['100::', 64],
  ['2001:db8::', 32],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
] as const) {
  SPECIAL_USE.addSubnet(network, prefix, 'ipv6');
}

/**
 * True for an address that is not on the public internet: loopback, a private or link-local network, and the
 * other special-use ranges; an IPv4-mapped IPv6 address is judged by its IPv4 address.
 *
 * @example
 * isSpecialUseAddress('10.1.2.3'); // true
 */
export function isSpecialUseAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return SPECIAL_USE.check(address, 'ipv4');
  if (family !== 6) return true;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return SPECIAL_USE.check(mapped[1]!, 'ipv4');
  return SPECIAL_USE.check(address, 'ipv6');
}

function lookupAll(hostname: string): Promise<dns.LookupAddress[]> {
  // dns.lookup as the connection will resolve it (read at call time, so a resolver an app installed applies too).
  return new Promise((resolve, reject) => {
    dns.lookup(hostname, { all: true }, (error, addresses) => (error ? reject(error) : resolve(addresses)));
  });
}

/** The `fetch` oidc-provider calls with, plus the connection dispatcher it adds. */
type ProviderFetch = (url: string | URL, init: RequestInit & { dispatcher?: unknown }) => Promise<Response>;

/**
 * The `fetch` of oidc-provider's configuration, for the calls the provider makes to its clients (back-channel
 * logout). By default a client URL whose host is, or resolves to, a loopback or private address is refused: a
 * client registration must not turn the provider into a way into the portal's own network (SSRF). oidc-provider
 * checks the address it connects to as well, where it can hook the runtime's fetch; this check holds where it
 * cannot. `allowPrivateNetwork` (the operator's explicit opt-in, for clients on the same private network) lets
 * those calls through, and drops oidc-provider's own check with it.
 *
 * @example
 * const configuration = { fetch: backchannelFetch(false) };
 */
export function backchannelFetch(allowPrivateNetwork: boolean): ProviderFetch {
  return async function providerFetch(url, init) {
    if (allowPrivateNetwork) {
      const { dispatcher: _connectCheck, ...rest } = init;
      return fetch(url, rest);
    }
    const hostname = new URL(url).hostname.replace(/^\[(.*)\]$/, '$1');
    const addresses = isIP(hostname) !== 0 ? [{ address: hostname }] : await lookupAll(hostname);
    if (addresses.length === 0 || addresses.some(({ address }) => isSpecialUseAddress(address))) {
      throw new Error(
        `refused to call ${hostname}: it is a loopback or private-network address (openidProvider allowPrivateNetworkBackchannel is off)`,
      );
    }
    return fetch(url, init as RequestInit);
  };
}
