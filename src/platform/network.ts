import net from 'node:net';

/**
 * The network an address belongs to, for limits per network: the /24 of an IPv4 address, the /56 of
 * an IPv6 one (what one subscriber is usually given); an IPv4-mapped IPv6 address counts as IPv4.
 */
export function networkOf(address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1];
  const ip = mapped ?? address;
  if (net.isIPv4(ip)) return `${ip.split('.').slice(0, 3).join('.')}.0/24`;
  if (!net.isIPv6(ip)) return ip;
  // Expand "::" to the missing groups, then keep the first 56 bits (three groups and a half).
  const [head = '', tail = ''] = ip.split('::');
  const left = head ? head.split(':') : [];
  const right = ip.includes('::') ? (tail ? tail.split(':') : []) : [];
  const groups = [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right].map((group) => group.padStart(4, '0').toLowerCase());
  return `${groups.slice(0, 3).join(':')}:${(groups[3] ?? '0000').slice(0, 2)}00::/56`;
}
