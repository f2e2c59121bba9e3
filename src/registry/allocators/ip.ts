/**
 * IP addresses and CIDRs as numbers, for the service IP allocator: parsing (IPv4 dotted quads, IPv6 with
 * '::' and embedded IPv4), Go's net.IP.String() form, and the ranges Kubernetes' ipallocator serves.
 */
import { isIP } from 'node:net';

export type IPFamily = 'IPv4' | 'IPv6';

/** The family of an address ('' when it is not one). */
export function familyOf(ip: string): IPFamily | '' {
  const v = isIP(ip);
  return v === 4 ? 'IPv4' : v === 6 ? (parseIP(ip)?.family ?? '') : '';
}

export interface ParsedIP {
  family: IPFamily;
  value: bigint;
}

/**
 * Parses an address as Go's net.ParseIP does, except that an IPv4-mapped IPv6 address (::ffff:a.b.c.d)
 * is IPv4, as Go treats it. Returns undefined for anything else.
 */
export function parseIP(text: string): ParsedIP | undefined {
  const v = isIP(text);
  if (v === 4) return { family: 'IPv4', value: ipv4Value(text) };
  if (v !== 6 || text.includes('%')) return undefined;
  let head = text;
  const lastColon = text.lastIndexOf(':');
  if (text.slice(lastColon + 1).includes('.')) {
    const v4 = ipv4Value(text.slice(lastColon + 1));
    head = `${text.slice(0, lastColon + 1)}${(v4 >> 16n).toString(16)}:${(v4 & 0xffffn).toString(16)}`;
  }
  const [left = '', right] = head.split('::') as [string, string | undefined];
  const words = (s: string) => (s === '' ? [] : s.split(':').map((w) => parseInt(w, 16)));
  const l = words(left);
  const r = right === undefined ? [] : words(right);
  const fill = 8 - l.length - r.length;
  const all = right === undefined ? l : [...l, ...new Array<number>(Math.max(0, fill)).fill(0), ...r];
  let value = 0n;
  for (const w of all) value = (value << 16n) | BigInt(w);
  if (value >> 32n === 0xffffn) return { family: 'IPv4', value: value & 0xffffffffn };
  return { family: 'IPv6', value };
}

function ipv4Value(text: string): bigint {
  return text.split('.').reduce((acc, part) => (acc << 8n) | BigInt(Number(part)), 0n);
}

/** Go's net.IP.String(): dotted quad, or RFC 5952 IPv6 (lowercase, longest run of 2+ zero words as '::'). */
export function formatIP(family: IPFamily, value: bigint): string {
  if (family === 'IPv4') return [24n, 16n, 8n, 0n].map((s) => String((value >> s) & 0xffn)).join('.');
  const words: number[] = [];
  for (let i = 7; i >= 0; i--) words.push(Number((value >> BigInt(i * 16)) & 0xffffn));
  let bestStart = -1;
  let bestLen = 0;
  for (let i = 0; i < 8; ) {
    if (words[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && words[j] === 0) j++;
    if (j - i > bestLen && j - i >= 2) {
      bestStart = i;
      bestLen = j - i;
    }
    i = j;
  }
  const hex = (ws: number[]) => ws.map((w) => w.toString(16)).join(':');
  if (bestStart < 0) return hex(words);
  return `${hex(words.slice(0, bestStart))}::${hex(words.slice(bestStart + bestLen))}`;
}

/** A CIDR: its family, network address, prefix length, and its text as Go prints an IPNet. */
export class CIDR {
  readonly bits: number;
  constructor(
    readonly family: IPFamily,
    readonly network: bigint,
    readonly prefix: number,
  ) {
    this.bits = family === 'IPv4' ? 32 : 128;
  }

  static parse(text: string): CIDR {
    const slash = text.indexOf('/');
    const ip = slash < 0 ? undefined : parseIP(text.slice(0, slash));
    const prefix = slash < 0 ? NaN : Number(text.slice(slash + 1));
    const max = ip?.family === 'IPv4' && isIP(text.slice(0, slash)) === 4 ? 32 : 128;
    if (!ip || !Number.isInteger(prefix) || prefix < 0 || prefix > max) throw new Error(`invalid CIDR address: ${text}`);
    // An IPv4-mapped IPv6 CIDR counts from the IPv6 prefix, as Go's ParseCIDR does.
    const bits = max === 32 ? prefix : ip.family === 'IPv4' ? Math.max(0, prefix - 96) : prefix;
    const width = ip.family === 'IPv4' ? 32 : 128;
    const mask = ((1n << BigInt(width)) - 1n) ^ ((1n << BigInt(width - bits)) - 1n);
    return new CIDR(ip.family, ip.value & mask, bits);
  }

  /** Addresses in the CIDR (2^(bits-prefix)). */
  get size(): bigint {
    return 1n << BigInt(this.bits - this.prefix);
  }

  contains(value: bigint): boolean {
    return value >= this.network && value < this.network + this.size;
  }

  toString(): string {
    return `${formatIP(this.family, this.network)}/${this.prefix}`;
  }
}

/**
 * The addresses Kubernetes' ipallocator hands out in a CIDR: from the network address + 1, without the
 * network address and (IPv4) the broadcast address; an IPv6 range is capped at 65536 addresses (the bitmap
 * size), as 1.23 does. Offset 0 is the first address, the kubernetes Service's.
 */
export class ServiceIPRange {
  readonly size: number;
  readonly base: bigint;
  constructor(readonly cidr: CIDR) {
    let max = cidr.size;
    if (cidr.family === 'IPv6' && max > 65536n) max = 65536n;
    if (cidr.family === 'IPv4') max -= 1n;
    max -= 1n;
    this.size = Number(max > 0n ? max : 0n);
    this.base = cidr.network + 1n;
  }

  /** The offset of an address, or -1 when it is outside the range the allocator serves. */
  offsetOf(ip: string): number {
    const p = parseIP(ip);
    if (!p || p.family !== this.cidr.family || !this.cidr.contains(p.value)) return -1;
    const off = p.value - this.base;
    return off >= 0n && off < BigInt(this.size) ? Number(off) : -1;
  }

  ipAt(offset: number): string {
    return formatIP(this.cidr.family, this.base + BigInt(offset));
  }
}
