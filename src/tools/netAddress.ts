/**
 * Which IP addresses `web_fetch` may connect to without a rule: public unicast ones only. Loopback,
 * private, link-local, carrier-grade NAT, multicast, reserved and documentation ranges are not
 * public; an IPv6 address that carries an IPv4 one (mapped `::ffff:a.b.c.d`, NAT64 `64:ff9b::/96`,
 * 6to4 `2002::/16`) is judged by the IPv4 address it carries, and Teredo and the deprecated
 * IPv4-compatible forms are refused outright.
 */
import { BlockList, isIPv4, isIPv6 } from "node:net"

const NOT_PUBLIC_V4: ReadonlyArray<readonly [string, number]> = [
  ["0.0.0.0", 8], // "this network"
  ["10.0.0.0", 8],
  ["100.64.0.0", 10], // carrier-grade NAT
  ["127.0.0.0", 8],
  ["169.254.0.0", 16], // link-local, cloud metadata services
  ["172.16.0.0", 12],
  ["192.0.0.0", 24],
  ["192.0.2.0", 24],
  ["192.88.99.0", 24],
  ["192.168.0.0", 16],
  ["198.18.0.0", 15],
  ["198.51.100.0", 24],
  ["203.0.113.0", 24],
  ["224.0.0.0", 4], // multicast
  ["240.0.0.0", 4] // reserved, broadcast
]

const NOT_PUBLIC_V6: ReadonlyArray<readonly [string, number]> = [
  ["::", 96], // unspecified, loopback (::1) and the deprecated IPv4-compatible form
  ["100::", 64], // discard
  ["2001::", 32], // Teredo (an IPv4 address hidden inside)
  ["2001:db8::", 32], // documentation
  ["fc00::", 7], // unique local
  ["fe80::", 10], // link-local
  ["fec0::", 10], // site-local (deprecated)
  ["ff00::", 8] // multicast
]

const blocked = new BlockList()
for (const [net, prefix] of NOT_PUBLIC_V4) blocked.addSubnet(net, prefix, "ipv4")
for (const [net, prefix] of NOT_PUBLIC_V6) blocked.addSubnet(net, prefix, "ipv6")

/** The eight 16-bit groups of an IPv6 address (a trailing dotted IPv4 part included). */
const groupsOf = (address: string): ReadonlyArray<number> => {
  let text = address.split("%")[0]!.toLowerCase()
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text)
  if (dotted !== null) {
    const [a, b, c, d] = dotted[1]!.split(".").map(Number) as [number, number, number, number]
    text = text.slice(0, -dotted[1]!.length) + `${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`
  }
  const [head, tail] = text.includes("::") ? text.split("::") as [string, string] : [text, undefined]
  const left = head === "" ? [] : head.split(":")
  const right = tail === undefined || tail === "" ? [] : tail.split(":")
  const middle = tail === undefined ? [] : Array.from({ length: 8 - left.length - right.length }, () => "0")
  return [...left, ...middle, ...right].map((group) => parseInt(group, 16))
}

const v4Of = (high: number, low: number) => `${high >> 8}.${high & 0xff}.${low >> 8}.${low & 0xff}`

/** The IPv4 address an IPv6 address carries as mapped, NAT64 or 6to4, if any. */
const embeddedV4 = (address: string): string | undefined => {
  const g = groupsOf(address)
  if (g.length !== 8) return undefined
  if (g.slice(0, 5).every((x) => x === 0) && g[5] === 0xffff) return v4Of(g[6]!, g[7]!)
  if (g[0] === 0x64 && g[1] === 0xff9b && g.slice(2, 6).every((x) => x === 0)) return v4Of(g[6]!, g[7]!)
  if (g[0] === 0x2002) return v4Of(g[1]!, g[2]!)
  return undefined
}

/** Whether `address` (an IP address as DNS returns it) is public unicast; anything else is not. */
export const isPublicAddress = (address: string): boolean => {
  if (isIPv4(address)) return !blocked.check(address, "ipv4")
  if (!isIPv6(address)) return false
  const v4 = embeddedV4(address)
  if (v4 !== undefined) return isPublicAddress(v4)
  return !blocked.check(address.split("%")[0]!, "ipv6")
}
