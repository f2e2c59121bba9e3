// Kubernetes resource.Quantity: a fixed-point decimal number with a suffix.
//
// Behaviour follows k8s.io/apimachinery/pkg/api/resource (1.23 era):
//   - parsing accepts `<sign><digits>[.<digits>]<suffix>` where suffix is a decimal SI
//     suffix (n u m '' k M G T P E), a binary SI suffix (Ki Mi Gi Ti Pi Ei) or a decimal
//     exponent (e3, E-6, e+2);
//   - the suffix family (the "format") is remembered and reused when serializing;
//   - values finer than a nano are rounded away from zero to the next nano;
//   - binary SI values are silently capped at 2^63-1;
//   - a parsed string that is already "canonical enough" is kept verbatim and returned
//     by toString() (so "+1" and "1.500" round-trip unchanged, exactly as Kubernetes does);
//   - otherwise toString() produces the canonical form (largest suffix, no fraction).
//
// All arithmetic is exact (BigInt); no floating point is involved.

export type QuantityFormat = 'DecimalExponent' | 'BinarySI' | 'DecimalSI';

const SPLIT_RE_STRING = '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$';

/** Error messages, worded exactly as Kubernetes' ErrFormatWrong / ErrNumeric / ErrSuffix. */
export const ERR_FORMAT_WRONG = `quantities must match the regular expression '${SPLIT_RE_STRING}'`;
export const ERR_NUMERIC = 'unable to parse numeric part of quantity';
export const ERR_SUFFIX = "unable to parse quantity's suffix";

export class QuantityParseError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'QuantityParseError';
  }
}

const MAX_INT64 = (1n << 63n) - 1n;
const NANO = -9;

const DECIMAL_SUFFIXES: Record<string, number> = {
  n: -9,
  u: -6,
  m: -3,
  '': 0,
  k: 3,
  M: 6,
  G: 9,
  T: 12,
  P: 15,
  E: 18,
};
const BINARY_SUFFIXES: Record<string, number> = { Ki: 10, Mi: 20, Gi: 30, Ti: 40, Pi: 50, Ei: 60 };
const DECIMAL_SUFFIX_BY_EXP = new Map<number, string>(Object.entries(DECIMAL_SUFFIXES).map(([s, e]) => [e, s]));
const BINARY_SUFFIX_BY_EXP = new Map<number, string>([[0, ''], ...Object.entries(BINARY_SUFFIXES).map(([s, e]) => [e, s] as [number, string])]);

const SUFFIX_CHARS = 'eEinumkKMGTP';

function isDigit(c: string | undefined): boolean {
  return c !== undefined && c >= '0' && c <= '9';
}

/** Wraps a number to a signed 32-bit integer, as Go's int32 conversions do. */
function wrap32(n: number | bigint): number {
  return Number(BigInt.asIntN(32, BigInt(n)));
}

function pow10(n: number): bigint {
  return 10n ** BigInt(n);
}

function abs(n: bigint): bigint {
  return n < 0n ? -n : n;
}

function digitCount(n: bigint): number {
  return n === 0n ? 0 : abs(n).toString().length;
}

interface Scanned {
  positive: boolean;
  /** the numeric text (sign, digits and point) as it appeared, minus any suffix */
  value: string;
  /** integer digits, leading zeros stripped ("0" when none remain) */
  num: string;
  /** fraction digits */
  denom: string;
  suffix: string;
}

/** Splits a quantity string into sign, integer digits, fraction digits and suffix. */
function scanQuantity(str: string): Scanned | null {
  const end = str.length;
  let positive = true;
  let pos = 0;
  if (str[0] === '-') {
    positive = false;
    pos++;
  } else if (str[0] === '+') {
    pos++;
  }
  while (pos < end && str[pos] === '0') pos++;
  if (pos >= end) return { positive, value: '0', num: '0', denom: '', suffix: '' };

  let i = pos;
  while (i < end && isDigit(str[i])) i++;
  let num = str.slice(pos, i);
  if (i >= end) return { positive, value: str, num, denom: '', suffix: '' };
  pos = i;
  if (num === '') num = '0';

  let denom = '';
  if (str[pos] === '.') {
    pos++;
    i = pos;
    while (i < end && isDigit(str[i])) i++;
    denom = str.slice(pos, i);
    if (i >= end) return { positive, value: str, num, denom, suffix: '' };
    pos = i;
  }
  const value = str.slice(0, pos);

  const suffixStart = pos;
  i = pos;
  while (i < end && SUFFIX_CHARS.includes(str[i]!)) i++;
  if (i >= end) return { positive, value, num, denom, suffix: str.slice(suffixStart) };
  pos = i;
  if (str[pos] === '-' || str[pos] === '+') pos++;
  i = pos;
  while (i < end && isDigit(str[i])) i++;
  if (i >= end) return { positive, value, num, denom, suffix: str.slice(suffixStart) };
  // a character that belongs to neither the number nor the suffix
  return null;
}

interface Interpreted {
  base: 2 | 10;
  exponent: number;
  format: QuantityFormat;
}

/** Go strconv.ParseInt(s, 10, 64) */
function parseInt64(s: string): bigint | null {
  if (!/^[+-]?[0-9]+$/.test(s)) return null;
  const v = BigInt(s);
  if (v > MAX_INT64 || v < -(MAX_INT64 + 1n)) return null;
  return v;
}

function interpretSuffix(suffix: string): Interpreted | null {
  if (Object.hasOwn(DECIMAL_SUFFIXES, suffix)) return { base: 10, exponent: DECIMAL_SUFFIXES[suffix]!, format: 'DecimalSI' };
  if (Object.hasOwn(BINARY_SUFFIXES, suffix)) return { base: 2, exponent: BINARY_SUFFIXES[suffix]!, format: 'BinarySI' };
  if (suffix.length > 1 && (suffix[0] === 'e' || suffix[0] === 'E')) {
    const parsed = parseInt64(suffix.slice(1));
    if (parsed === null) return null;
    return { base: 10, exponent: wrap32(parsed), format: 'DecimalExponent' };
  }
  return null;
}

/** Parses a decimal number as inf.Dec.SetString does: optional sign, digits with at most one point. */
function parseDecimal(value: string): { unscaled: bigint; scale: number } | null {
  const m = /^([+-]?)([0-9]*)(?:\.([0-9]*))?$/.exec(value);
  if (!m) return null;
  const intPart = m[2] ?? '';
  const frac = m[3] ?? '';
  if (intPart.length + frac.length === 0) return null;
  const unscaled = BigInt((intPart + frac).replace(/^0+(?=.)/, '') || '0');
  return { unscaled: m[1] === '-' ? -unscaled : unscaled, scale: frac.length };
}

/** ceil(a / b) for a >= 0, b > 0 */
function ceilDiv(a: bigint, b: bigint): bigint {
  return (a + b - 1n) / b;
}

export class Quantity {
  /** the value is unscaled * 10^exp */
  private readonly unscaled: bigint;
  private readonly exp: number;
  /** whether Kubernetes would hold this value as an inf.Dec (slow parse path) rather than an int64 */
  private readonly dec: boolean;
  /** the original string, kept when Kubernetes would keep it */
  private readonly cached: string | undefined;
  readonly format: QuantityFormat;

  /** @internal use parseQuantity, newQuantity or newMilliQuantity */
  constructor(unscaled: bigint, exp: number, format: QuantityFormat, cached?: string, dec = false) {
    this.unscaled = unscaled;
    this.exp = exp;
    this.format = format;
    this.cached = cached;
    this.dec = dec;
  }

  /** -1, 0 or 1 */
  sign(): -1 | 0 | 1 {
    return this.unscaled === 0n ? 0 : this.unscaled < 0n ? -1 : 1;
  }

  isZero(): boolean {
    return this.unscaled === 0n;
  }

  /** Compares the values: -1 if this < other, 0 if equal, 1 if this > other. */
  cmp(other: Quantity): -1 | 0 | 1 {
    return compareDecimal(this.unscaled, this.exp, other.unscaled, other.exp);
  }

  /** Compares with an integer. */
  cmpInt(n: bigint | number): -1 | 0 | 1 {
    return compareDecimal(this.unscaled, this.exp, BigInt(n), 0);
  }

  equals(other: Quantity): boolean {
    return this.cmp(other) === 0;
  }

  /** The value rounded to an integer away from zero, as Kubernetes' Value() (an int64). */
  value(): bigint {
    return this.scaledValue(0);
  }

  /** The value in thousandths rounded away from zero, as Kubernetes' MilliValue() (an int64). */
  milliValue(): bigint {
    return this.scaledValue(-3);
  }

  /**
   * ceil(q / 10^scale) as an int64, as Kubernetes' ScaledValue. For values that do not
   * fit in an int64 Kubernetes' result is undefined; this returns the low 64 bits.
   */
  scaledValue(scale: number): bigint {
    const shift = this.exp - scale;
    if (shift >= 0) {
      if (shift > 64) return 0n; // 10^64 is a multiple of 2^64: the low 64 bits are zero
      return BigInt.asIntN(64, this.unscaled * pow10(shift));
    }
    const divisor = pow10(-shift);
    if (!this.dec) {
      // int64Amount: rounds away from zero
      const q = abs(this.unscaled) / divisor;
      const r = abs(this.unscaled) % divisor;
      const mag = r === 0n ? q : q + 1n;
      return BigInt.asIntN(64, this.unscaled < 0n ? -mag : mag);
    }
    // inf.Dec: Kubernetes' scaledValue adds one to the quotient when there is a remainder;
    // for small values the quotient is truncated, for large ones it is floored.
    const dif = -shift;
    if (this.unscaled < MAX_INT64 && dif < 19) {
      const q = this.unscaled / divisor; // truncates toward zero, like Go
      const r = this.unscaled % divisor;
      return BigInt.asIntN(64, r !== 0n ? q + 1n : q);
    }
    let q = this.unscaled / divisor;
    let r = this.unscaled % divisor;
    if (r < 0n) {
      q -= 1n;
      r += divisor;
    }
    return BigInt.asIntN(64, r !== 0n ? q + 1n : q);
  }

  /** The Kubernetes string form (Quantity.String()). */
  toString(): string {
    return this.cached ?? this.canonical();
  }

  /** JSON form: the string, as Kubernetes marshals quantities. */
  toJSON(): string {
    return this.toString();
  }

  /** The canonical form, ignoring any string kept from parsing (CanonicalizeBytes). */
  canonical(): string {
    if (this.unscaled === 0n) return '0';
    let format = this.format;
    if (format === 'BinarySI') {
      if (this.cmpInt(-1024) > 0 && this.cmpInt(1024) < 0) {
        format = 'DecimalSI';
      } else if (!this.isInteger()) {
        format = 'DecimalSI';
      }
    }
    if (format === 'BinarySI') {
      // an integer here: exp >= 0, or unscaled divisible by 10^-exp (checked above)
      let v = this.exp >= 0 ? this.unscaled * pow10(this.exp) : this.unscaled / pow10(-this.exp);
      let e = 0;
      while (v !== 0n && v % 1024n === 0n) {
        v /= 1024n;
        e++;
      }
      return v.toString() + (BINARY_SUFFIX_BY_EXP.get(e * 10) ?? '');
    }
    // decimal: move every factor of ten into the exponent, then lower it to a multiple of three
    let m = this.unscaled;
    let e = this.exp;
    while (m % 10n === 0n) {
      m /= 10n;
      e++;
    }
    const rem = ((e % 3) + 3) % 3;
    if (rem !== 0) {
      m *= pow10(rem);
      e -= rem;
    }
    if (format === 'DecimalSI') {
      const suffix = DECIMAL_SUFFIX_BY_EXP.get(e);
      // DecimalSI has no suffix beyond E (10^18): fall back to exponent notation rather
      // than dropping the magnitude.
      if (suffix !== undefined) return m.toString() + suffix;
    }
    return m.toString() + (e === 0 ? '' : `e${e}`);
  }

  private isInteger(): boolean {
    if (this.exp >= 0) return true;
    if (-this.exp > digitCount(this.unscaled)) return this.unscaled === 0n;
    return this.unscaled % pow10(-this.exp) === 0n;
  }
}

function compareDecimal(a: bigint, aExp: number, b: bigint, bExp: number): -1 | 0 | 1 {
  const sa = a === 0n ? 0 : a < 0n ? -1 : 1;
  const sb = b === 0n ? 0 : b < 0n ? -1 : 1;
  if (sa !== sb) return sa < sb ? -1 : 1;
  if (sa === 0) return 0;
  // same sign: compare magnitudes by their number of integer digits first
  const magA = digitCount(a) + aExp;
  const magB = digitCount(b) + bExp;
  let c: number;
  if (magA !== magB) {
    c = magA < magB ? -1 : 1;
  } else {
    const e = Math.min(aExp, bExp);
    const x = abs(a) * pow10(aExp - e);
    const y = abs(b) * pow10(bExp - e);
    c = x === y ? 0 : x < y ? -1 : 1;
  }
  if (c === 0) return 0;
  return (sa < 0 ? -c : c) as -1 | 1;
}

/** Parses a quantity as Kubernetes' resource.ParseQuantity; throws QuantityParseError. */
export function parseQuantity(str: string): Quantity {
  if (str.length === 0) throw new QuantityParseError(ERR_FORMAT_WRONG);
  if (str === '0') return new Quantity(0n, 0, 'DecimalSI', '0');

  const scanned = scanQuantity(str);
  if (scanned === null) throw new QuantityParseError(ERR_FORMAT_WRONG);
  const { positive, value, num, denom, suffix } = scanned;

  const interpreted = interpretSuffix(suffix);
  if (interpreted === null) throw new QuantityParseError(ERR_SUFFIX);
  const { base, exponent } = interpreted;
  let format = interpreted.format;

  // Fast path: Kubernetes keeps small, exact values as a scaled int64 and may keep the
  // input string as the serialized form.
  let precision: number;
  let scale = 0;
  let mantissa = 1n;
  if (format === 'BinarySI') {
    if (exponent >= 0 && denom.length === 0) {
      mantissa = 1n << BigInt(exponent);
      precision = 15 - num.length - Math.trunc((exponent * 3) / 10) - 1;
    } else {
      precision = -1;
    }
  } else {
    scale = exponent;
    precision = 18 - (num.length + denom.length);
  }
  if (precision >= 0) {
    scale = wrap32(scale - denom.length);
    if (scale >= NANO) {
      const shifted = num + denom;
      const v = BigInt(shifted);
      let result = v * mantissa;
      if (result <= MAX_INT64) {
        if (!positive) result = -result;
        let keep: boolean;
        if (format === 'BinarySI') {
          keep = exponent % 10 === 0 && (v & 7n) !== 0n;
        } else {
          keep = scale % 3 === 0 && !shifted.endsWith('000') && shifted[0] !== '0';
        }
        return new Quantity(result, scale, format, keep ? str : undefined);
      }
    }
  }

  // Slow path: arbitrary precision.
  const parsed = parseDecimal(value);
  if (parsed === null) throw new QuantityParseError(ERR_NUMERIC);
  let unscaled = parsed.unscaled;
  let exp: number;
  if (base === 10) {
    exp = -wrap32(parsed.scale + wrap32(-exponent));
  } else {
    unscaled *= 1n << BigInt(exponent);
    exp = -parsed.scale;
  }
  const negative = unscaled < 0n;
  let mag = abs(unscaled);
  // round any non-zero value up to the minimum representable value (a nano)
  if (mag !== 0n && exp < NANO) {
    mag = ceilDiv(mag, pow10(NANO - exp));
    exp = NANO;
  }
  if (format === 'BinarySI' && compareDecimal(mag, exp, MAX_INT64, 0) > 0) {
    mag = MAX_INT64;
    exp = 0;
  }
  if (format === 'BinarySI' && mag !== 0n && compareDecimal(mag, exp, 1n, 0) < 0) {
    format = 'DecimalSI';
  }
  return new Quantity(negative ? -mag : mag, exp, format, undefined, true);
}

/** Parses a quantity, returning null instead of throwing. */
export function tryParseQuantity(str: string): Quantity | null {
  try {
    return parseQuantity(str);
  } catch (e) {
    if (e instanceof QuantityParseError) return null;
    throw e;
  }
}

/** The Kubernetes serialization of a quantity string (parse then String()); throws QuantityParseError. */
export function canonicalQuantity(str: string): string {
  return parseQuantity(str).toString();
}

/**
 * Decodes a quantity from a JSON value as Quantity.UnmarshalJSON does: strings are
 * trimmed of surrounding whitespace, numbers are taken by their decimal text.
 * Throws QuantityParseError on anything else.
 */
export function quantityFromJSON(value: unknown): Quantity {
  if (typeof value === 'string') return parseQuantity(value.trim());
  if (typeof value === 'number' && Number.isFinite(value)) return parseQuantity(String(value));
  if (typeof value === 'bigint') return parseQuantity(value.toString());
  throw new QuantityParseError(ERR_FORMAT_WRONG);
}

/** NewQuantity: an integer value in the given format. */
export function newQuantity(value: bigint | number, format: QuantityFormat): Quantity {
  return new Quantity(BigInt(value), 0, format);
}

/** NewMilliQuantity: value/1000 in the given format. */
export function newMilliQuantity(value: bigint | number, format: QuantityFormat): Quantity {
  return new Quantity(BigInt(value), -3, format);
}

/** NewScaledQuantity: value * 10^scale in DecimalSI format. */
export function newScaledQuantity(value: bigint | number, scale: number): Quantity {
  return new Quantity(BigInt(value), scale, 'DecimalSI');
}
