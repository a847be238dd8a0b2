/**
 * Finds the IPv4 address an IPv6 address carries, for the forms through which a packet can
 * reach that IPv4 host: IPv4-mapped, IPv4-compatible, SIIT-translated, NAT64 (well-known
 * prefix) and 6to4. Pure; the input must already be a valid IPv6 address (net.isIP === 6).
 */
export function embeddedIpv4(ipv6: string): string | null {
  const g = ipv6Groups(ipv6);
  const zeros = (from: number, to: number) => g.slice(from, to).every((group) => group === 0);
  const lastTwo = () => toIpv4(g[6], g[7]);

  if (zeros(0, 5) && g[5] === 0xffff) return lastTwo(); // ::ffff:a.b.c.d
  if (zeros(0, 6)) return lastTwo(); // ::a.b.c.d (also :: and ::1)
  if (zeros(0, 4) && g[4] === 0xffff && g[5] === 0) return lastTwo(); // ::ffff:0:a.b.c.d
  if (g[0] === 0x64 && g[1] === 0xff9b && zeros(2, 6)) return lastTwo(); // 64:ff9b::a.b.c.d
  if (g[0] === 0x2002) return toIpv4(g[1], g[2]); // 2002:AABB:CCDD::/48
  return null;
}

/** The eight 16-bit groups of an IPv6 address (zone index dropped, dotted tail expanded). */
function ipv6Groups(ipv6: string): number[] {
  const text = ipv6
    .split('%')[0]
    .replace(/(\d+)\.(\d+)\.(\d+)\.(\d+)$/, (_m, a: string, b: string, c: string, d: string) =>
      [(Number(a) << 8) | Number(b), (Number(c) << 8) | Number(d)].map((n) => n.toString(16)).join(':'),
    );
  const [head, tail] = text.split('::');
  const parse = (part: string | undefined) => (part ? part.split(':').map((h) => parseInt(h, 16)) : []);
  const front = parse(head);
  const back = parse(tail);
  return [...front, ...new Array<number>(8 - front.length - back.length).fill(0), ...back];
}

function toIpv4(high: number, low: number): string {
  return [high >> 8, high & 0xff, low >> 8, low & 0xff].join('.');
}
