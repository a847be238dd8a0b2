import { allows, isForbiddenAddress, parseAllowList } from './address-policy';

describe('isForbiddenAddress', () => {
  it.each([
    ['0.0.0.0'],
    ['0.1.2.3'],
    ['127.0.0.1'],
    ['127.255.255.254'],
    ['10.0.0.1'],
    ['10.255.255.255'],
    ['172.16.0.1'],
    ['172.31.255.255'],
    ['192.168.1.1'],
    ['169.254.169.254'],
    ['169.254.0.1'],
    ['100.64.0.1'],
    ['100.127.255.255'],
    ['192.0.0.8'],
    ['198.18.0.1'],
    ['198.19.255.255'],
    ['224.0.0.1'],
    ['239.255.255.250'],
    ['240.0.0.1'],
    ['255.255.255.255'],
  ])('forbids IPv4 %s', (ip) => {
    expect(isForbiddenAddress(ip)).toBe(true);
  });

  it.each([
    ['::'],
    ['::1'],
    ['0:0:0:0:0:0:0:1'],
    ['fe80::1'],
    ['fe80::1%eth0'],
    ['febf:ffff::1'],
    ['fc00::1'],
    ['fd12:3456:789a::1'],
    ['ff02::1'],
    ['::ffff:127.0.0.1'],
    ['::ffff:7f00:1'],
    ['0:0:0:0:0:ffff:7f00:0001'],
    ['::ffff:a9fe:a9fe'],
    ['::ffff:10.1.2.3'],
    ['::127.0.0.1'],
    ['::7f00:1'],
    ['::ffff:0:7f00:1'],
    ['64:ff9b::7f00:1'],
    ['64:ff9b::169.254.169.254'],
    ['64:ff9b:1::1'],
    ['2002:7f00:1::1'],
    ['2002:c0a8:101::'],
    // Teredo (2001::/32) carries an IPv4 address, here 127.0.0.1 as the server, XORed as the
    // client; any address in it tunnels to an IPv4 host: the whole range is refused.
    ['2001::7f00:1'],
    ['2001:0:7f00:1::1'],
    ['2001:0000:4136:e378:8000:63bf:3fff:fdd2'],
    ['2001:0:ffff:ffff:ffff:ffff:ffff:ffff'],
    // Site-local (fec0::/10).
    ['fec0::1'],
    ['fed0::1'],
    ['feff:ffff::1'],
  ])('forbids IPv6 %s', (ip) => {
    expect(isForbiddenAddress(ip)).toBe(true);
  });

  it.each([
    ['8.8.8.8'],
    ['1.1.1.1'],
    ['93.184.216.34'],
    ['172.15.255.255'],
    ['172.32.0.1'],
    ['100.63.255.255'],
    ['100.128.0.1'],
    ['192.0.1.1'],
    ['192.167.255.255'],
    ['198.20.0.1'],
    ['223.255.255.255'],
    ['2606:4700:4700::1111'],
    ['2001:4860:4860::8888'],
    ['::ffff:8.8.8.8'],
    ['64:ff9b::808:808'],
    ['2002:808:808::1'],
    // Either side of Teredo's 2001::/32.
    ['2000:ffff:ffff:ffff::1'],
    ['2001:1::1'],
  ])('lets public %s through', (ip) => {
    expect(isForbiddenAddress(ip)).toBe(false);
  });

  it.each([[''], ['localhost'], ['127.1'], ['0177.0.0.1'], ['2130706433'], ['[::1]']])('counts the non-address %p as forbidden', (text) => {
    expect(isForbiddenAddress(text)).toBe(true);
  });
});

describe('parseAllowList', () => {
  it('reads host names, addresses and ranges, ignoring blanks and case', () => {
    const list = parseAllowList(' API.Internal , 127.0.0.1/32,10.0.0.0/8,, ::1/128, 192.168.1.7, fd00::5 ');
    expect([...list.hostnames]).toEqual(['api.internal']);
    expect(list.addresses.check('127.0.0.1', 'ipv4')).toBe(true);
    expect(list.addresses.check('127.0.0.2', 'ipv4')).toBe(false);
    expect(list.addresses.check('10.200.3.4', 'ipv4')).toBe(true);
    expect(list.addresses.check('::1', 'ipv6')).toBe(true);
    expect(list.addresses.check('192.168.1.7', 'ipv4')).toBe(true);
    expect(list.addresses.check('fd00::5', 'ipv6')).toBe(true);
  });

  it('is empty for an empty spec', () => {
    const list = parseAllowList('');
    expect(list.hostnames.size).toBe(0);
    expect(list.addresses.check('127.0.0.1', 'ipv4')).toBe(false);
  });

  it.each([
    ['10.0.0.0/33'],
    ['::1/129'],
    ['10.0.0.0/'],
    ['10.0.0.0/8/1'],
    ['10.0.0.0/-1'],
    ['10.0.0.0/x'],
    ['api.internal/8'],
    ['a b'],
    ['*.example.com'],
    ['http://example.com'],
    ['example.com:8080'],
    ['[::1]'],
    ['fe80::1%eth0'],
    ['2130706433'],
    ['0x7f.0.0.1'],
    ['127.1'],
    ['bad..name'],
  ])('throws on %p, naming it', (entry) => {
    expect(() => parseAllowList(`api.internal,${entry}`)).toThrow(`"${entry}"`);
  });
});

describe('allows', () => {
  const list = parseAllowList('api.internal,127.0.0.1/32,10.0.0.0/8,::1');

  it('matches a listed host name whatever it resolves to, ignoring case and a trailing dot', () => {
    expect(allows(list, { hostname: 'api.internal', address: '169.254.169.254' })).toBe(true);
    expect(allows(list, { hostname: 'API.INTERNAL.', address: '192.168.0.1' })).toBe(true);
    expect(allows(list, { hostname: 'evil.api.internal', address: '192.168.0.1' })).toBe(false);
  });

  it('matches an address inside a listed IP or range', () => {
    expect(allows(list, { hostname: 'x.test', address: '127.0.0.1' })).toBe(true);
    expect(allows(list, { hostname: 'x.test', address: '10.9.8.7' })).toBe(true);
    expect(allows(list, { hostname: '::1', address: '::1' })).toBe(true);
    expect(allows(list, { hostname: 'x.test', address: '127.0.0.2' })).toBe(false);
    expect(allows(list, { hostname: 'x.test', address: '192.168.0.1' })).toBe(false);
    expect(allows(list, { hostname: 'x.test', address: 'not-an-ip' })).toBe(false);
  });
});
