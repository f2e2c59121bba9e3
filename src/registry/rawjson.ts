/**
 * Answering a read without decoding: a stored object is the compact JSON that JSON.stringify wrote (less its
 * resourceVersion), so the answer JSON.stringify would give for the decoded object, whose metadata gains
 * resourceVersion as its last key, is the stored text with `"resourceVersion":"N"` put before the closing
 * brace of the top-level metadata.
 *
 * That holds only for text in JSON.stringify's own form, so the whole text is checked for it: no whitespace
 * between tokens, strings with JSON.stringify's escapes only, integers it writes back digit for digit, no
 * key that JSON.parse would move (array-index keys) and valid UTF-8. Anything else (another writer's JSON,
 * a fraction, a metadata that already names a resourceVersion) answers null and the caller decodes.
 */
import { isUtf8 } from 'node:buffer';

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const LBRACE = 0x7b;
const RBRACE = 0x7d;
const LBRACKET = 0x5b;
const RBRACKET = 0x5d;
const MINUS = 0x2d;
const ZERO = 0x30;
const NINE = 0x39;

/** `"metadata"` and `"resourceVersion"` as they appear as keys. */
const METADATA = Buffer.from('"metadata"');
const RESOURCE_VERSION = Buffer.from('"resourceVersion"');

/** Thrown (as a value, never escaping this module) when the text is not in JSON.stringify's form. */
const NOT_CANONICAL = -1;

/** Hex digits JSON.stringify writes in \u escapes (lowercase). */
function isLowerHex(c: number | undefined): boolean {
  return c !== undefined && ((c >= ZERO && c <= NINE) || (c >= 0x61 && c <= 0x66));
}

/** End (exclusive) of the string that starts at `i` (a quote), or NOT_CANONICAL. */
function skipString(b: Uint8Array, i: number): number {
  const n = b.length;
  for (i++; i < n; i++) {
    const c = b[i]!;
    if (c === QUOTE) return i + 1;
    if (c < 0x20) return NOT_CANONICAL;
    if (c !== BACKSLASH) continue;
    const e = b[++i];
    if (e === QUOTE || e === BACKSLASH || e === 0x62 || e === 0x66 || e === 0x6e || e === 0x72 || e === 0x74) continue;
    // \u00XX: JSON.stringify escapes only control characters without a short form (and lone surrogates,
    // which are left to the decoding path).
    if (e !== 0x75 || b[i + 1] !== ZERO || b[i + 2] !== ZERO || !isLowerHex(b[i + 3]) || !isLowerHex(b[i + 4])) return NOT_CANONICAL;
    const hi = b[i + 3]!;
    const lo = b[i + 4]!;
    if (hi !== ZERO && hi !== 0x31) return NOT_CANONICAL;
    const code = (hi - ZERO) * 16 + (lo <= NINE ? lo - ZERO : lo - 0x61 + 10);
    if (code === 0x08 || code === 0x09 || code === 0x0a || code === 0x0c || code === 0x0d) return NOT_CANONICAL;
    i += 4;
  }
  return NOT_CANONICAL;
}

/** Whether the key string in [start, end) is one JSON.parse would reorder (an array index). */
function isIndexKey(b: Uint8Array, start: number, end: number): boolean {
  const c = b[start + 1]!;
  if (c < ZERO || c > NINE) return false;
  for (let i = start + 2; i < end - 1; i++) {
    const d = b[i]!;
    if (d < ZERO || d > NINE) return false;
  }
  return true;
}

/** End of the integer at `i`, in the form JSON.stringify writes it (exact in a double), or NOT_CANONICAL. */
function skipNumber(b: Uint8Array, i: number): number {
  const n = b.length;
  let j = i;
  if (b[j] === MINUS) j++;
  const first = j;
  while (j < n && b[j]! >= ZERO && b[j]! <= NINE) j++;
  const digits = j - first;
  if (digits === 0 || digits > 15) return NOT_CANONICAL;
  if (b[first] === ZERO && (digits > 1 || first > i)) return NOT_CANONICAL; // leading zero, or -0
  const next = b[j];
  if (next === 0x2e || next === 0x65 || next === 0x45) return NOT_CANONICAL; // fractions and exponents
  return j;
}

function skipLiteral(b: Uint8Array, i: number, word: string): number {
  for (let k = 0; k < word.length; k++) if (b[i + k] !== word.charCodeAt(k)) return NOT_CANONICAL;
  return i + word.length;
}

/** End of the value at `i`, or NOT_CANONICAL. */
function skipValue(b: Uint8Array, i: number): number {
  const c = b[i];
  if (c === QUOTE) return skipString(b, i);
  if (c === LBRACE) return skipObject(b, i, null);
  if (c === LBRACKET) {
    i++;
    if (b[i] === RBRACKET) return i + 1;
    for (;;) {
      i = skipValue(b, i);
      if (i < 0) return NOT_CANONICAL;
      if (b[i] === COMMA) i++;
      else if (b[i] === RBRACKET) return i + 1;
      else return NOT_CANONICAL;
    }
  }
  if (c === 0x74) return skipLiteral(b, i, 'true');
  if (c === 0x66) return skipLiteral(b, i, 'false');
  if (c === 0x6e) return skipLiteral(b, i, 'null');
  if (c === MINUS || (c !== undefined && c >= ZERO && c <= NINE)) return skipNumber(b, i);
  return NOT_CANONICAL;
}

/** Where the top-level metadata object lies: [start, end) with end just past its closing brace. */
interface Found {
  metaStart: number;
  metaEnd: number;
}

/**
 * End of the object at `i`, or NOT_CANONICAL. With `found` (the top level), records the span of the one
 * "metadata" key's object value; inside metadata, a resourceVersion key makes the text unusable.
 */
function skipObject(b: Uint8Array, i: number, found: Found | null, isMetadata = false): number {
  i++;
  if (b[i] === RBRACE) return i + 1;
  for (;;) {
    if (b[i] !== QUOTE) return NOT_CANONICAL;
    const keyStart = i;
    i = skipString(b, i);
    if (i < 0 || b[i] !== COLON) return NOT_CANONICAL;
    if (isIndexKey(b, keyStart, i)) return NOT_CANONICAL;
    const valueStart = i + 1;
    if (found !== null && equalsAt(b, keyStart, i, METADATA)) {
      if (found.metaStart >= 0 || b[valueStart] !== LBRACE) return NOT_CANONICAL;
      i = skipObject(b, valueStart, null, true);
      if (i < 0) return NOT_CANONICAL;
      found.metaStart = valueStart;
      found.metaEnd = i;
    } else {
      if (isMetadata && equalsAt(b, keyStart, i, RESOURCE_VERSION)) return NOT_CANONICAL;
      i = skipValue(b, valueStart);
      if (i < 0) return NOT_CANONICAL;
    }
    if (b[i] === COMMA) i++;
    else if (b[i] === RBRACE) return i + 1;
    else return NOT_CANONICAL;
  }
}

function equalsAt(b: Uint8Array, start: number, end: number, word: Buffer): boolean {
  if (end - start !== word.length) return false;
  for (let k = 0; k < word.length; k++) if (b[start + k] !== word[k]) return false;
  return true;
}

/**
 * The bytes of JSON.stringify(obj) + '\n', where obj is the stored object `stored` decoded with
 * metadata.resourceVersion set to `resourceVersion`; null when the stored text is not in the form that
 * makes splicing exact.
 */
export function encodeWithResourceVersion(stored: Uint8Array, resourceVersion: string): Buffer | null {
  const b = stored;
  let at = splicePoints.get(b);
  if (at === undefined) {
    at = splicePoint(b);
    splicePoints.set(b, at);
  }
  if (at < 0) return null;
  const close = at >>> 1;
  const insert = `${at & 1 ? '' : ','}"resourceVersion":${JSON.stringify(resourceVersion)}`;
  const n = Buffer.byteLength(insert);
  const out = Buffer.allocUnsafe(b.length + n + 1);
  if (Buffer.isBuffer(b)) {
    b.copy(out, 0, 0, close);
    b.copy(out, close + n, close);
  } else {
    out.set(b.subarray(0, close), 0);
    out.set(b.subarray(close), close + n);
  }
  out.write(insert, close, 'utf8');
  out[out.length - 1] = 0x0a;
  return out;
}

/**
 * Where each stored text takes its resourceVersion, worked out once per text: a watch cache keeps the same
 * buffer for an object until it changes and serves every GET of it from that buffer, which is never written to.
 */
const splicePoints = new WeakMap<Uint8Array, number>();

/** The offset of metadata's closing brace times two, plus one when metadata is empty; -1 when splicing is not exact. */
function splicePoint(b: Uint8Array): number {
  if (b[0] !== LBRACE) return -1;
  const found: Found = { metaStart: -1, metaEnd: -1 };
  const end = skipObject(b, 0, found);
  if (end !== b.length || found.metaStart < 0 || !isUtf8(b)) return -1;
  const close = found.metaEnd - 1;
  return close * 2 + (close === found.metaStart + 1 ? 1 : 0);
}
