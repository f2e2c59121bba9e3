import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  canonicalQuantity,
  ERR_FORMAT_WRONG,
  ERR_NUMERIC,
  ERR_SUFFIX,
  newMilliQuantity,
  newQuantity,
  newScaledQuantity,
  parseQuantity,
  Quantity,
  QuantityParseError,
  quantityFromJSON,
  tryParseQuantity,
  type QuantityFormat,
} from '../../src/util/quantity.js';

const MAX_INT64 = (1n << 63n) - 1n;

/** decQuantity(i, exponent, format) from Kubernetes' quantity_test.go */
function dec(unscaled: bigint | number, exponent: number, format: QuantityFormat): Quantity {
  return new Quantity(BigInt(unscaled), exponent, format);
}

// TestQuantityParse: input, expected value, expected format
const parseTable: [string, bigint | number, number, QuantityFormat][] = [
  ['0', 0, 0, 'DecimalSI'],
  ['0n', 0, 0, 'DecimalSI'],
  ['0u', 0, 0, 'DecimalSI'],
  ['0m', 0, 0, 'DecimalSI'],
  ['0Ki', 0, 0, 'BinarySI'],
  ['0k', 0, 0, 'DecimalSI'],
  ['0Mi', 0, 0, 'BinarySI'],
  ['0M', 0, 0, 'DecimalSI'],
  ['0Gi', 0, 0, 'BinarySI'],
  ['0G', 0, 0, 'DecimalSI'],
  ['0Ti', 0, 0, 'BinarySI'],
  ['0T', 0, 0, 'DecimalSI'],
  ['1', 1, 0, 'DecimalSI'],
  ['1Ki', 1024, 0, 'BinarySI'],
  ['8Ki', 8 * 1024, 0, 'BinarySI'],
  ['7Mi', 7 * 1024 * 1024, 0, 'BinarySI'],
  ['6Gi', 6 * 1024 ** 3, 0, 'BinarySI'],
  ['5Ti', 5 * 1024 ** 4, 0, 'BinarySI'],
  ['4Pi', 4n * 1024n ** 5n, 0, 'BinarySI'],
  ['3Ei', 3n * 1024n ** 6n, 0, 'BinarySI'],
  ['10Ti', 10 * 1024 ** 4, 0, 'BinarySI'],
  ['100Ti', 100 * 1024 ** 4, 0, 'BinarySI'],
  ['5n', 5, -9, 'DecimalSI'],
  ['4u', 4, -6, 'DecimalSI'],
  ['3m', 3, -3, 'DecimalSI'],
  ['9', 9, 0, 'DecimalSI'],
  ['8k', 8, 3, 'DecimalSI'],
  ['50k', 5, 4, 'DecimalSI'],
  ['7M', 7, 6, 'DecimalSI'],
  ['6G', 6, 9, 'DecimalSI'],
  ['5T', 5, 12, 'DecimalSI'],
  ['40T', 4, 13, 'DecimalSI'],
  ['300T', 3, 14, 'DecimalSI'],
  ['2P', 2, 15, 'DecimalSI'],
  ['1E', 1, 18, 'DecimalSI'],
  ['1E-3', 1, -3, 'DecimalExponent'],
  ['1e3', 1, 3, 'DecimalExponent'],
  ['1E6', 1, 6, 'DecimalExponent'],
  ['1e9', 1, 9, 'DecimalExponent'],
  ['1E12', 1, 12, 'DecimalExponent'],
  ['1e15', 1, 15, 'DecimalExponent'],
  ['1E18', 1, 18, 'DecimalExponent'],
  ['1e14', 1, 14, 'DecimalExponent'],
  ['1e13', 1, 13, 'DecimalExponent'],
  ['100.035k', 100035, 0, 'DecimalSI'],
  ['0.001', 1, -3, 'DecimalSI'],
  ['0.0005k', 5, -1, 'DecimalSI'],
  ['0.005', 5, -3, 'DecimalSI'],
  ['0.05', 5, -2, 'DecimalSI'],
  ['0.5', 5, -1, 'DecimalSI'],
  ['0.00050k', 5, -1, 'DecimalSI'],
  ['0.00500', 5, -3, 'DecimalSI'],
  ['0.05000', 5, -2, 'DecimalSI'],
  ['0.50000', 5, -1, 'DecimalSI'],
  ['0.5e0', 5, -1, 'DecimalExponent'],
  ['0.5e-1', 5, -2, 'DecimalExponent'],
  ['0.5e-2', 5, -3, 'DecimalExponent'],
  ['10.035M', 10035, 3, 'DecimalSI'],
  ['1.2e3', 12, 2, 'DecimalExponent'],
  ['1.3E+6', 13, 5, 'DecimalExponent'],
  ['1.40e9', 14, 8, 'DecimalExponent'],
  ['1.53E12', 153, 10, 'DecimalExponent'],
  ['1.6e15', 16, 14, 'DecimalExponent'],
  ['1.7E18', 17, 17, 'DecimalExponent'],
  ['9.01', 901, -2, 'DecimalSI'],
  ['8.1k', 81, 2, 'DecimalSI'],
  ['7.123456M', 7123456, 0, 'DecimalSI'],
  ['6.987654321G', 6987654321, 0, 'DecimalSI'],
  ['5.444T', 5444, 9, 'DecimalSI'],
  ['40.1T', 401, 11, 'DecimalSI'],
  ['300.2T', 3002, 11, 'DecimalSI'],
  ['2.5P', 25, 14, 'DecimalSI'],
  ['1.01E', 101, 16, 'DecimalSI'],
  // things that saturate or round
  ['3.001n', 4, -9, 'DecimalSI'],
  ['1.1E-9', 2, -9, 'DecimalExponent'],
  ['0.0000000001', 1, -9, 'DecimalSI'],
  ['0.0000000005', 1, -9, 'DecimalSI'],
  ['0.00000000050', 1, -9, 'DecimalSI'],
  ['0.5e-9', 1, -9, 'DecimalExponent'],
  ['0.9n', 1, -9, 'DecimalSI'],
  ['0.00000012345', 124, -9, 'DecimalSI'],
  ['0.00000012354', 124, -9, 'DecimalSI'],
  ['9Ei', MAX_INT64, 0, 'BinarySI'],
  ['9223372036854775807Ki', MAX_INT64, 0, 'BinarySI'],
  ['12E', 12, 18, 'DecimalSI'],
  // fractional binary
  ['100.035Ki', 10243584, -2, 'BinarySI'],
  ['0.5Mi', 0.5 * 1024 * 1024, 0, 'BinarySI'],
  ['0.05Gi', 536870912, -1, 'BinarySI'],
  ['0.025Ti', 274877906944, -1, 'BinarySI'],
  // written by trolls
  ['0.000000000001Ki', 2, -9, 'DecimalSI'],
  ['.001', 1, -3, 'DecimalSI'],
  ['.0001k', 100, -3, 'DecimalSI'],
  ['1.', 1, 0, 'DecimalSI'],
  ['1.G', 1, 9, 'DecimalSI'],
];

void describe('parseQuantity (Kubernetes TestQuantityParse)', () => {
  void it('parses every table entry to the expected value and format', () => {
    assert.ok(parseTable.length >= 40);
    for (const [input, unscaled, exp, format] of parseTable) {
      const want = dec(unscaled, exp, format);
      const got = parseQuantity(input);
      assert.equal(got.cmp(want), 0, `${input}: got ${got.toString()}, want ${want.toString()}`);
      assert.equal(got.format, format, `${input}: format`);
    }
  });

  void it('parses the negative of every entry to the negated value with the same format', () => {
    for (const [input, unscaled, exp, format] of parseTable) {
      const want = dec(-BigInt(unscaled), exp, format);
      const got = parseQuantity('-' + input);
      assert.equal(got.cmp(want), 0, `-${input}: got ${got.toString()}, want ${want.toString()}`);
      assert.equal(got.format, format, `-${input}: format`);
    }
  });

  void it('parses every entry with an explicit + to the same value and format', () => {
    for (const [input, unscaled, exp, format] of parseTable) {
      const got = parseQuantity('+' + input);
      assert.equal(got.cmp(dec(unscaled, exp, format)), 0, `+${input}`);
      assert.equal(got.format, format, `+${input}: format`);
    }
  });

  const invalid: [string, string][] = [
    ['', ERR_FORMAT_WRONG],
    ['1.1.M', ERR_FORMAT_WRONG],
    ['1+1.0M', ERR_FORMAT_WRONG],
    ['0.1mi', ERR_SUFFIX],
    ['0.1am', ERR_FORMAT_WRONG],
    ['aoeu', ERR_FORMAT_WRONG],
    ['.5i', ERR_SUFFIX],
    ['1i', ERR_SUFFIX],
    ['-3.01i', ERR_SUFFIX],
    ['-3.01e-', ERR_SUFFIX],
    [' 1', ERR_FORMAT_WRONG],
    ['1 ', ERR_FORMAT_WRONG],
    ['Non-Numeric', ERR_FORMAT_WRONG],
    ['1e', ERR_SUFFIX],
    ['1Ki3', ERR_SUFFIX],
    ['1e99999999999999999999', ERR_SUFFIX],
    ['.Ei', ERR_NUMERIC],
  ];
  void it('rejects invalid quantities with Kubernetes error messages', () => {
    for (const [input, message] of invalid) {
      assert.throws(
        () => parseQuantity(input),
        (e: unknown) => e instanceof QuantityParseError && e.message === message,
        JSON.stringify(input),
      );
      assert.equal(tryParseQuantity(input), null);
    }
  });

  void it('words the format error exactly as Kubernetes', () => {
    assert.equal(ERR_FORMAT_WRONG, "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'");
    assert.equal(ERR_NUMERIC, 'unable to parse numeric part of quantity');
    assert.equal(ERR_SUFFIX, "unable to parse quantity's suffix");
  });
});

void describe('Quantity.toString (Kubernetes TestQuantityString)', () => {
  // value, canonical string, an alternate spelling that must canonicalize to it
  const table: [Quantity, string, string][] = [
    [dec(1024 * 1024 * 1024, 0, 'BinarySI'), '1Gi', '1024Mi'],
    [dec(300 * 1024 * 1024, 0, 'BinarySI'), '300Mi', '307200Ki'],
    [dec(6 * 1024, 0, 'BinarySI'), '6Ki', ''],
    [dec(1001 * 1024 ** 3, 0, 'BinarySI'), '1001Gi', '1025024Mi'],
    [dec(1024 ** 4, 0, 'BinarySI'), '1Ti', '1024Gi'],
    [dec(5, 0, 'BinarySI'), '5', '5000m'],
    [dec(500, -3, 'BinarySI'), '500m', '0.5'],
    [dec(1, 9, 'DecimalSI'), '1G', '1000M'],
    [dec(1000, 6, 'DecimalSI'), '1G', '0.001T'],
    [dec(1000000, 3, 'DecimalSI'), '1G', ''],
    [dec(1000000000, 0, 'DecimalSI'), '1G', ''],
    [dec(1, -3, 'DecimalSI'), '1m', '1000u'],
    [dec(80, -3, 'DecimalSI'), '80m', ''],
    [dec(1080, -3, 'DecimalSI'), '1080m', '1.08'],
    [dec(108, -2, 'DecimalSI'), '1080m', '1080000000n'],
    [dec(10800, -4, 'DecimalSI'), '1080m', ''],
    [dec(300, 6, 'DecimalSI'), '300M', ''],
    [dec(1, 12, 'DecimalSI'), '1T', ''],
    [dec(1, 18, 'DecimalSI'), '1E', ''],
    [dec(1234567, 6, 'DecimalSI'), '1234567M', ''],
    [dec(1234567, -3, 'BinarySI'), '1234567m', ''],
    [dec(3, 3, 'DecimalSI'), '3k', ''],
    [dec(1025, 0, 'BinarySI'), '1025', ''],
    [dec(0, 0, 'DecimalSI'), '0', ''],
    [dec(0, 0, 'BinarySI'), '0', ''],
    [dec(1, 9, 'DecimalExponent'), '1e9', '.001e12'],
    [dec(1, -3, 'DecimalExponent'), '1e-3', '0.001e0'],
    [dec(1, -9, 'DecimalExponent'), '1e-9', '1000e-12'],
    [dec(80, -3, 'DecimalExponent'), '80e-3', ''],
    [dec(300, 6, 'DecimalExponent'), '300e6', ''],
    [dec(1, 12, 'DecimalExponent'), '1e12', ''],
    [dec(1, 3, 'DecimalExponent'), '1e3', ''],
    [dec(3, 3, 'DecimalExponent'), '3e3', ''],
    [dec(0, 0, 'DecimalExponent'), '0', '00'],
    [dec(1, -9, 'DecimalSI'), '1n', ''],
    [dec(80, -9, 'DecimalSI'), '80n', ''],
    [dec(1080, -9, 'DecimalSI'), '1080n', ''],
    [dec(108, -8, 'DecimalSI'), '1080n', ''],
    [dec(10800, -10, 'DecimalSI'), '1080n', ''],
    [dec(1, -6, 'DecimalSI'), '1u', ''],
    [dec(80, -6, 'DecimalSI'), '80u', ''],
    [dec(1080, -6, 'DecimalSI'), '1080u', ''],
  ];

  void it('serializes values canonically and round-trips canonical strings', () => {
    for (const [q, expect, alternate] of table) {
      assert.equal(q.toString(), expect, `${expect}`);
      assert.equal(parseQuantity(expect).toString(), expect, `parse(${expect})`);
      if (alternate) assert.equal(canonicalQuantity(alternate), expect, `alternate ${alternate}`);
    }
  });

  void it('serializes negated values with a leading minus', () => {
    for (const [q, expect] of table) {
      if (q.isZero()) continue;
      const neg = parseQuantity('-' + q.canonical());
      assert.equal(neg.canonical(), '-' + expect);
    }
  });

  void it('falls back to exponent notation beyond E for DecimalSI', () => {
    assert.equal(dec(1, 21, 'DecimalSI').toString(), '1e21');
    assert.equal(dec(5, 21, 'DecimalSI').toString(), '5e21');
    assert.equal(canonicalQuantity('1000E'), '1e21');
    assert.equal(canonicalQuantity('1000000E'), '1e24');
  });
});

void describe('canonicalQuantity', () => {
  // Kubernetes TestQuantityParseEmit plus everyday spellings
  const table: [string, string][] = [
    ['1Ki', '1Ki'],
    ['1Mi', '1Mi'],
    ['1Gi', '1Gi'],
    ['1024Mi', '1Gi'],
    ['1000M', '1G'],
    ['.001Ki', '1024m'],
    ['.000001Ki', '1024u'],
    ['.000000001Ki', '1024n'],
    ['.000000000001Ki', '2n'],
    ['1.5Gi', '1536Mi'],
    ['1000m', '1'],
    ['0.5', '500m'],
    ['1024Ki', '1Mi'],
    ['100M', '100M'],
    ['1.5', '1500m'],
    ['0', '0'],
    ['100m', '100m'],
    ['250m', '250m'],
    ['2000m', '2'],
    ['128974848', '128974848'],
    ['129e6', '129e6'],
    ['129M', '129M'],
    ['123Mi', '123Mi'],
    ['0.1', '100m'],
    ['1e3', '1e3'], // the exponent format is remembered, as Kubernetes does
    ['1000e0', '1e3'],
    ['2048', '2048'],
    ['1.5Ki', '1536'],
    ['512Mi', '512Mi'],
    ['0.5Gi', '512Mi'],
    ['0.25Ki', '256'],
    ['1023', '1023'],
  ];
  void it('emits what Kubernetes emits', () => {
    for (const [input, expect] of table) {
      assert.equal(canonicalQuantity(input), expect, input);
      if (parseQuantity(input).isZero()) continue;
      assert.equal(canonicalQuantity('-' + input), '-' + expect, '-' + input);
    }
  });

  void it('keeps an input string that is already canonical enough, as Kubernetes does', () => {
    // Kubernetes caches the parsed string when it is in (near) canonical form
    assert.equal(canonicalQuantity('+1'), '+1');
    assert.equal(canonicalQuantity('01'), '01');
    assert.equal(canonicalQuantity('1.500'), '1.500');
    assert.equal(canonicalQuantity('10.035M'), '10.035M');
    assert.equal(parseQuantity('1.500').canonical(), '1500m');
    // but not a string that ends in 000, starts with 0 after stripping, or has a non-multiple-of-3 scale
    assert.equal(canonicalQuantity('1000'), '1k');
    assert.equal(canonicalQuantity('0.5'), '500m');
    assert.equal(canonicalQuantity('-0'), '0');
    assert.equal(canonicalQuantity('+0'), '0');
    assert.equal(canonicalQuantity('0m'), '0');
  });

  void it('rounds sub-nano precision up to the next nano', () => {
    assert.equal(canonicalQuantity('0.9n'), '1n');
    assert.equal(canonicalQuantity('1.1n'), '2n');
    assert.equal(canonicalQuantity('0.00000000001'), '1n');
    assert.equal(canonicalQuantity('-0.00000000001'), '-1n');
    assert.equal(canonicalQuantity('1.0000000001'), '1000000001n');
  });

  void it('caps binary quantities at 2^63-1', () => {
    assert.equal(canonicalQuantity('8Ei'), '9223372036854775807');
    assert.equal(canonicalQuantity('-8Ei'), '-9223372036854775807');
    assert.equal(canonicalQuantity('7Ei'), '7Ei');
  });

  void it('keeps arbitrary precision for decimal quantities', () => {
    assert.equal(canonicalQuantity('18446744073709551616'), '18446744073709551616');
    assert.equal(canonicalQuantity('1.2345'), '1234500u');
    // the exponent is lowered to a multiple of three
    assert.equal(canonicalQuantity('1e1000'), '10e999');
  });
});

void describe('Quantity comparison and accessors', () => {
  void it('compares as Kubernetes TestQuantityCmp', () => {
    const table: [string, string, number][] = [
      ['0', '0', 0],
      ['100m', '50m', 1],
      ['50m', '100m', -1],
      ['10000T', '100Gi', 1],
      ['1Gi', '1024Mi', 0],
      ['1k', '1000', 0],
      ['1e3', '1k', 0],
      ['-1', '1', -1],
      ['-2', '-1', -1],
      ['1n', '0', 1],
      ['18446744073709551616', '18446744073709551615', 1],
      ['1e1000', '1e999', 1],
    ];
    for (const [x, y, want] of table) {
      assert.equal(parseQuantity(x).cmp(parseQuantity(y)), want, `${x} vs ${y}`);
      assert.equal(parseQuantity(y).cmp(parseQuantity(x)), -want || 0, `${y} vs ${x}`);
    }
  });

  void it('reports the sign', () => {
    assert.equal(parseQuantity('0').sign(), 0);
    assert.equal(parseQuantity('-0').sign(), 0);
    assert.equal(parseQuantity('5m').sign(), 1);
    assert.equal(parseQuantity('-5m').sign(), -1);
  });

  void it('rounds value() up away from zero to an int64', () => {
    const table: [string, bigint, bigint][] = [
      ['1', 1n, 1000n],
      ['1000m', 1n, 1000n],
      ['1001m', 2n, 1001n],
      ['0.5', 1n, 500n],
      ['1n', 1n, 1n],
      ['-1.5', -2n, -1500n],
      ['1Ki', 1024n, 1024000n],
      ['1.5Gi', 1610612736n, 1610612736000n],
      ['100M', 100000000n, 100000000000n],
      ['1e3', 1000n, 1000000n],
    ];
    for (const [input, value, milli] of table) {
      assert.equal(parseQuantity(input).value(), value, `${input}.value()`);
      assert.equal(parseQuantity(input).milliValue(), milli, `${input}.milliValue()`);
    }
  });

  void it('builds quantities like NewQuantity / NewMilliQuantity / NewScaledQuantity (TestNewSet, TestMilliNewSet)', () => {
    assert.equal(newQuantity(1, 'DecimalSI').toString(), '1');
    assert.equal(newQuantity(1000, 'DecimalSI').toString(), '1k');
    assert.equal(newQuantity(1234000, 'DecimalSI').toString(), '1234k');
    assert.equal(newQuantity(1024, 'BinarySI').toString(), '1Ki');
    assert.equal(newQuantity(1024 * 1024, 'BinarySI').toString(), '1Mi');
    assert.equal(newQuantity(1000000, 'DecimalExponent').toString(), '1e6');
    assert.equal(newMilliQuantity(1, 'DecimalSI').toString(), '1m');
    assert.equal(newMilliQuantity(1000, 'DecimalSI').toString(), '1');
    assert.equal(newMilliQuantity(1234000, 'DecimalSI').toString(), '1234');
    assert.equal(newMilliQuantity(1024, 'BinarySI').toString(), '1024m');
    assert.equal(newMilliQuantity(1024 * 1024, 'BinarySI').toString(), '1048576m');
    assert.equal(newMilliQuantity(1000000, 'DecimalExponent').toString(), '1e3');
    assert.equal(newScaledQuantity(1, -9).toString(), '1n');
    assert.equal(newScaledQuantity(1000, -9).toString(), '1u');
    assert.equal(newScaledQuantity(1, 3).toString(), '1k');
    for (const v of [1, 1000, 1234000, 1024]) {
      assert.equal(parseQuantity(newQuantity(v, 'DecimalSI').toString()).value(), BigInt(v));
      assert.equal(parseQuantity(newMilliQuantity(v, 'DecimalSI').toString()).milliValue(), BigInt(v));
    }
  });

  void it('decodes JSON values like Quantity.UnmarshalJSON (TestJSONWhitespace)', () => {
    const table: [unknown, string][] = [
      [' 1', '1'],
      ['1 ', '1'],
      [1, '1'],
      [10, '10'],
      [-1, '-1'],
      [' -1', '-1'],
      ['100m', '100m'],
    ];
    for (const [input, expect] of table) assert.equal(quantityFromJSON(input).toString(), expect);
    assert.throws(() => quantityFromJSON(true), QuantityParseError);
    assert.equal(JSON.stringify({ cpu: parseQuantity('1000m') }), '{"cpu":"1"}');
  });
});
