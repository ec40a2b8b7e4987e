import { isIPv4, isIPv6 } from 'node:net';
import { sha256 } from '../../util/digest';

/**
 * The IPv6 prefix the throttle treats as one client unless told otherwise. A /64 is one subnet: its owner picks the
 * 64-bit interface identifiers freely (SLAAC with temporary addresses, RFC 8981; RFC 4291 2.5.1), so one host can
 * present 2^64 addresses, and the /64 is the smallest unit an attacker cannot cheaply multiply.
 */
export const DEFAULT_IPV6_PREFIX_LENGTH = 64;

function ipv4Groups(dotted: string): number[] {
  const [a = 0, b = 0, c = 0, d = 0] = dotted.split('.').map(Number);
  return [(a << 8) | b, (c << 8) | d];
}

/** The eight 16-bit groups of an address `isIPv6` accepted (no zone id): `::` expanded, a dotted IPv4 tail split. */
function ipv6Groups(address: string): number[] {
  const parse = (part: string): number[] =>
    part === '' ? [] : part.split(':').flatMap((group) => (group.includes('.') ? ipv4Groups(group) : [parseInt(group, 16)]));
  const gap = address.indexOf('::');
  if (gap === -1) return parse(address);
  const head = parse(address.slice(0, gap));
  const tail = parse(address.slice(gap + 2));
  return [...head, ...new Array<number>(8 - head.length - tail.length).fill(0), ...tail];
}

function maskedGroups(groups: readonly number[], prefixLength: number): number[] {
  return groups.map((group, index) => {
    const bits = Math.min(16, Math.max(0, prefixLength - index * 16));
    return bits === 0 ? 0 : group & ((0xffff << (16 - bits)) & 0xffff);
  });
}

/**
 * The network a client address counts against, as a throttle key: an IPv4 address as itself, an IPv4-mapped IPv6
 * address (`::ffff:198.51.100.7`, how a dual-stack socket reports an IPv4 client) as that IPv4 address, and any
 * other IPv6 address as its first `ipv6PrefixLength` bits. A zone id (`fe80::1%eth0`) is dropped. Anything else
 * (a proxy's malformed `X-Forwarded-For` entry) is its own network, named by a hash of the text.
 *
 * @example
 * clientNetwork('2001:db8:1:2:a:b:c:d'); // 'ipv6:2001:db8:1:2:0:0:0:0/64'
 * clientNetwork('::ffff:198.51.100.7'); // 'ipv4:198.51.100.7'
 */
export function clientNetwork(address: string, ipv6PrefixLength: number = DEFAULT_IPV6_PREFIX_LENGTH): string {
  const text = typeof address === 'string' ? address.trim() : '';
  if (isIPv4(text)) return `ipv4:${text}`;
  if (isIPv6(text)) {
    const zone = text.indexOf('%');
    const groups = ipv6Groups((zone === -1 ? text : text.slice(0, zone)).toLowerCase());
    const mapped = groups.slice(0, 5).every((group) => group === 0) && groups[5] === 0xffff;
    if (mapped) {
      const [high = 0, low = 0] = groups.slice(6);
      return `ipv4:${high >> 8}.${high & 0xff}.${low >> 8}.${low & 0xff}`;
    }
    return `ipv6:${maskedGroups(groups, ipv6PrefixLength)
      .map((group) => group.toString(16))
      .join(':')}/${ipv6PrefixLength}`;
  }
  return `other:${sha256(text, 'base64url').slice(0, 22)}`;
}
