/**
 * Reading a PEM PKCS#10 certificate request, as Kubernetes' certificates.ParseCSR and Go's
 * x509.ParseCertificateRequest + CheckSignature do what the CSR API needs: the subject (CN, O, ...), the
 * subject alternative names of its extension request, the public key (SPKI DER) and whether the request's
 * signature verifies with that key. Synchronous (validation hooks are), with a small DER reader; the
 * signature is checked by node:crypto.
 */
import { createPublicKey, verify, type KeyObject } from 'node:crypto';

export interface ParsedCSR {
  /** The subject's attributes by short name (CN, O, OU, C, L, ST, ...), each with its values in order. */
  subject: Record<string, string[]>;
  commonName: string;
  organizations: string[];
  dnsNames: string[];
  ipAddresses: string[];
  emailAddresses: string[];
  uris: string[];
  /** The subject Name, DER. */
  subjectDER: Buffer;
  /** SubjectPublicKeyInfo, DER. */
  spki: Buffer;
  publicKey: KeyObject;
}

interface TLV {
  tag: number;
  /** Start of the whole element (its tag byte). */
  start: number;
  /** Start and end of its content. */
  body: number;
  end: number;
}

const MALFORMED = 'x509: malformed certificate request';

function readTLV(buf: Buffer, at: number, limit = buf.length): TLV {
  if (at + 2 > limit) throw new Error(MALFORMED);
  const tag = buf[at]!;
  let len = buf[at + 1]!;
  let body = at + 2;
  if (len & 0x80) {
    const n = len & 0x7f;
    if (n === 0 || n > 4 || body + n > limit) throw new Error(MALFORMED);
    len = 0;
    for (let i = 0; i < n; i++) len = len * 256 + buf[body + i]!;
    body += n;
  }
  const end = body + len;
  if (end > limit) throw new Error(MALFORMED);
  return { tag, start: at, body, end };
}

/** The elements inside a constructed element. */
function children(buf: Buffer, t: TLV): TLV[] {
  const out: TLV[] = [];
  for (let at = t.body; at < t.end; ) {
    const c = readTLV(buf, at, t.end);
    out.push(c);
    at = c.end;
  }
  return out;
}

function oid(buf: Buffer, t: TLV): string {
  if (t.tag !== 0x06) throw new Error(MALFORMED);
  const b = buf.subarray(t.body, t.end);
  if (b.length === 0) throw new Error(MALFORMED);
  const parts = [Math.min(2, Math.floor(b[0]! / 40)), b[0]! - Math.min(2, Math.floor(b[0]! / 40)) * 40];
  let v = 0;
  for (let i = 1; i < b.length; i++) {
    v = v * 128 + (b[i]! & 0x7f);
    if ((b[i]! & 0x80) === 0) {
      parts.push(v);
      v = 0;
    }
  }
  return parts.join('.');
}

const ATTRIBUTE_NAMES: Record<string, string> = {
  '2.5.4.3': 'CN',
  '2.5.4.10': 'O',
  '2.5.4.11': 'OU',
  '2.5.4.6': 'C',
  '2.5.4.7': 'L',
  '2.5.4.8': 'ST',
  '2.5.4.9': 'STREET',
  '2.5.4.17': 'POSTALCODE',
  '2.5.4.5': 'SERIALNUMBER',
};

const EXTENSION_REQUEST = '1.2.840.113549.1.9.14';
const SUBJECT_ALT_NAME = '2.5.29.17';

/** Signature algorithms by OID: the digest node:crypto verifies with (null: the key decides, Ed25519). */
const SIGNATURE_ALGORITHMS: Record<string, string | null> = {
  '1.2.840.113549.1.1.5': 'sha1',
  '1.2.840.113549.1.1.11': 'sha256',
  '1.2.840.113549.1.1.12': 'sha384',
  '1.2.840.113549.1.1.13': 'sha512',
  '1.2.840.10045.4.3.2': 'sha256',
  '1.2.840.10045.4.3.3': 'sha384',
  '1.2.840.10045.4.3.4': 'sha512',
  '1.3.101.112': null,
};

function ipText(b: Buffer): string {
  if (b.length === 4) return [...b].join('.');
  if (b.length === 16) {
    const groups: string[] = [];
    for (let i = 0; i < 16; i += 2) groups.push(b.readUInt16BE(i).toString(16));
    // The shortest form, as Go's net.IP.String prints it.
    let best = -1;
    let bestLen = 1;
    for (let i = 0; i < 8; i++) {
      let j = i;
      while (j < 8 && groups[j] === '0') j++;
      if (j - i > bestLen) {
        best = i;
        bestLen = j - i;
      }
    }
    if (best < 0) return groups.join(':');
    return `${groups.slice(0, best).join(':')}::${groups.slice(best + bestLen).join(':')}`;
  }
  return b.toString('hex');
}

/** certificates.ParseCSR then CheckSignature: throws an Error with Go's message when either fails. */
export function parseCSR(request: string): ParsedCSR {
  const m = /-----BEGIN ([A-Z0-9 ]+)-----([\s\S]*?)-----END \1-----/.exec(request);
  if (!m || m[1] !== 'CERTIFICATE REQUEST') throw new Error('PEM block type must be CERTIFICATE REQUEST');
  const der = Buffer.from(m[2]!.replace(/\s+/g, ''), 'base64');
  const outer = readTLV(der, 0);
  if (outer.tag !== 0x30) throw new Error(MALFORMED);
  const [info, sigAlg, sig] = children(der, outer);
  if (!info || !sigAlg || !sig || info.tag !== 0x30 || sigAlg.tag !== 0x30 || sig.tag !== 0x03) throw new Error(MALFORMED);
  const [version, name, spkiTLV, attrs] = children(der, info);
  if (!version || !name || !spkiTLV || version.tag !== 0x02 || name.tag !== 0x30 || spkiTLV.tag !== 0x30) throw new Error(MALFORMED);
  const subject: Record<string, string[]> = {};
  for (const rdn of children(der, name)) {
    for (const atv of children(der, rdn)) {
      const [type, value] = children(der, atv);
      if (!type || !value) throw new Error(MALFORMED);
      const key = ATTRIBUTE_NAMES[oid(der, type)] ?? oid(der, type);
      (subject[key] ??= []).push(der.subarray(value.body, value.end).toString('utf8'));
    }
  }
  const out: ParsedCSR = {
    subject,
    commonName: subject['CN']?.[0] ?? '',
    organizations: subject['O'] ?? [],
    dnsNames: [],
    ipAddresses: [],
    emailAddresses: [],
    uris: [],
    subjectDER: Buffer.from(der.subarray(name.start, name.end)),
    spki: Buffer.from(der.subarray(spkiTLV.start, spkiTLV.end)),
    publicKey: undefined as unknown as KeyObject,
  };
  try {
    out.publicKey = createPublicKey({ key: out.spki, format: 'der', type: 'spki' });
  } catch {
    throw new Error('x509: unsupported public key type in certificate request');
  }
  if (attrs && attrs.tag === 0xa0) {
    for (const attr of children(der, attrs)) {
      const [type, values] = children(der, attr);
      if (!type || !values || oid(der, type) !== EXTENSION_REQUEST) continue;
      for (const exts of children(der, values)) {
        for (const ext of children(der, exts)) {
          const parts = children(der, ext);
          if (!parts[0] || oid(der, parts[0]) !== SUBJECT_ALT_NAME) continue;
          const octets = parts[parts.length - 1]!;
          const names = readTLV(der, octets.body, octets.end);
          for (const gn of children(der, names)) {
            const v = der.subarray(gn.body, gn.end);
            if (gn.tag === 0x82) out.dnsNames.push(v.toString('ascii'));
            else if (gn.tag === 0x87) out.ipAddresses.push(ipText(v));
            else if (gn.tag === 0x81) out.emailAddresses.push(v.toString('ascii'));
            else if (gn.tag === 0x86) out.uris.push(v.toString('ascii'));
          }
        }
      }
    }
  }
  const [algOID] = children(der, sigAlg);
  if (!algOID) throw new Error(MALFORMED);
  const alg = oid(der, algOID);
  if (!(alg in SIGNATURE_ALGORITHMS)) throw new Error('x509: cannot verify signature: algorithm unimplemented');
  const signature = der.subarray(sig.body + 1, sig.end);
  let ok: boolean;
  try {
    ok = verify(SIGNATURE_ALGORITHMS[alg] ?? null, der.subarray(info.start, info.end), out.publicKey, signature);
  } catch {
    ok = false;
  }
  if (!ok) {
    const kind = out.publicKey.asymmetricKeyType;
    throw new Error(kind === 'ec' ? 'x509: ECDSA verification failure' : kind === 'ed25519' ? 'x509: Ed25519 verification failure' : 'crypto/rsa: verification error');
  }
  return out;
}
