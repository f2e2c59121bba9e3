import { describe, it } from 'node:test';
import assert from 'node:assert/strict';

import {
  applyFieldValidation,
  bodyGVK,
  cannotBeHandledMessage,
  checkFields,
  decodeObjectBody,
  fieldValidationDirective,
  goJSONSyntaxError,
  parseBody,
  strictDecodingMessage,
  summarizeData,
  unrecognizedObjectMessage,
  type ParsedBody,
} from '../../src/registry/decode.js';
import { StatusError } from '../../src/registry/errors.js';
import type { Definitions, Schema } from '../../src/registry/schema.js';
import { ERR_FORMAT_WRONG } from '../../src/util/quantity.js';

const ref = (name: string): Schema => ({ $ref: `#/definitions/${name}` });

/** A kind of our own: an ObjectMeta-like metadata, a spec with quantities, an int32, a list of objects, a free-form field. */
const defs: Definitions = {
  'io.example.v1.Widget': {
    type: 'object',
    properties: {
      apiVersion: { type: 'string' },
      kind: { type: 'string' },
      metadata: ref('io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta'),
      spec: ref('io.example.v1.WidgetSpec'),
    },
    'x-kubernetes-group-version-kind': [{ group: 'example.io', version: 'v1', kind: 'Widget' }],
  },
  'io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta': {
    type: 'object',
    properties: {
      name: { type: 'string' },
      namespace: { type: 'string' },
      labels: { type: 'object', additionalProperties: { type: 'string' } },
      generation: { type: 'integer', format: 'int64' },
      creationTimestamp: ref('io.k8s.apimachinery.pkg.apis.meta.v1.Time'),
    },
  },
  'io.k8s.apimachinery.pkg.apis.meta.v1.Time': { type: 'string', format: 'date-time' },
  'io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime': { type: 'string', format: 'date-time' },
  'io.k8s.apimachinery.pkg.api.resource.Quantity': { type: 'string' },
  'io.example.v1.WidgetSpec': {
    type: 'object',
    properties: {
      replicas: { type: 'integer', format: 'int32' },
      paused: { type: 'boolean' },
      ratio: { type: 'number', format: 'double' },
      resources: { type: 'object', additionalProperties: ref('io.k8s.apimachinery.pkg.api.resource.Quantity') },
      ports: { type: 'array', items: ref('io.example.v1.Port') },
      tags: { type: 'array', items: { type: 'string' } },
      byName: { type: 'object', additionalProperties: ref('io.example.v1.Port') },
      config: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
      payload: { type: 'string', format: 'byte' },
      renewTime: ref('io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime'),
    },
  },
  'io.example.v1.Port': {
    type: 'object',
    properties: {
      name: { type: 'string' },
      containerPort: { type: 'integer', format: 'int32' },
      targetPort: { 'x-kubernetes-int-or-string': true },
    },
  },
};
const widget = ref('io.example.v1.Widget');

function statusOf(fn: () => unknown): { code: number; reason: string; message: string } {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof StatusError, `expected a StatusError, got ${String(e)}`);
    return { code: e.status.code, reason: e.status.reason ?? '', message: e.status.message ?? '' };
  }
  assert.fail('expected an error');
}

const json = (s: string) => Buffer.from(s, 'utf8');

function check(body: string, format: 'json' | 'yaml' = 'json') {
  const parsed = parseBody(json(body), format, 'Widget');
  return { parsed, result: checkFields(parsed.value, widget, defs, parsed) };
}

describe('parseBody (JSON)', () => {
  it('returns what JSON.parse returns when there are no duplicates', () => {
    const text = JSON.stringify({ apiVersion: 'example.io/v1', kind: 'Widget', metadata: { name: 'a', labels: { x: 'y' } }, spec: { replicas: 3, tags: ['a', 'b'] } });
    const parsed = parseBody(json(text), 'json');
    assert.deepEqual(parsed.value, JSON.parse(text));
    assert.deepEqual(parsed.duplicates, []);
    assert.equal(parsed.format, 'json');
    assert.equal(parsed.numbers, undefined);
  });

  it('reports duplicate fields with sigs.k8s.io/json paths, list indices included', () => {
    const parsed = parseBody(
      json('{"metadata":{"name":"a","name":"b"},"spec":{"ports":[{"name":"p"},{"name":"q","name":"r"}],"ports2":1,"ports2":2}}'),
      'json',
    );
    assert.deepEqual(parsed.duplicates, ['duplicate field "metadata.name"', 'duplicate field "spec.ports[1].name"', 'duplicate field "spec.ports2"']);
    assert.deepEqual(parsed.duplicateFields[0], { parent: 'metadata', key: 'name', after: 'name', message: 'duplicate field "metadata.name"' });
    assert.equal((parsed.value as { metadata: { name: string } }).metadata.name, 'b');
  });

  it('reports a field repeated three times once', () => {
    assert.deepEqual(parseBody(json('{"a":1,"a":2,"a":3}'), 'json').duplicates, ['duplicate field "a"']);
  });

  it('sees through escapes and whitespace when looking for duplicates', () => {
    assert.deepEqual(parseBody(json('{"a" : 1 , "\\u0061" : 2, "s": "x\\":y"}'), 'json').duplicates, ['duplicate field "a"']);
    assert.deepEqual(parseBody(json('{"a\\\\":1,"b":"\\"a\\":"}'), 'json').duplicates, []);
  });

  it('merges a repeated object into the earlier one as Go decodes it', () => {
    const parsed = parseBody(json('{"metadata":{"name":"a","labels":{"x":"1"}},"metadata":{"labels":{"y":"2"}}}'), 'json');
    assert.deepEqual(parsed.value, { metadata: { name: 'a', labels: { x: '1', y: '2' } } });
  });

  it('keeps number literals a double cannot keep exactly', () => {
    const parsed = parseBody(json('{"spec":{"replicas":3.0,"ratio":1e3,"tags":[1.50],"big":12345678901234567890}}'), 'json');
    assert.deepEqual([...(parsed.numbers ?? new Map())], [
      ['spec.replicas', '3.0'],
      ['spec.ratio', '1e3'],
      ['spec.tags[0]', '1.50'],
      ['spec.big', '12345678901234567890'],
    ]);
  });

  it('refuses a body that is not JSON with Kubernetes message and summary', () => {
    const s = statusOf(() => parseBody(json('{"apiVersion": "v1", "kind": "Namespace", "metadata": {'), 'json', 'Namespace'));
    assert.equal(s.code, 400);
    assert.equal(s.reason, 'BadRequest');
    assert.equal(
      s.message,
      'the object provided is unrecognized (must be of type Namespace): couldn\'t get version/kind; json parse error: unexpected end of JSON input ({"apiVersion": "v1", "kind": " ...)',
    );
    assert.equal(
      statusOf(() => parseBody(json('not json'), 'json', 'Namespace')).message,
      "the object provided is unrecognized (must be of type Namespace): couldn't get version/kind; json parse error: invalid character 'o' in literal null (expecting 'u') (6e6f74206a736f6e)",
    );
    assert.equal(
      statusOf(() => parseBody(json(''), 'json', 'Namespace')).message,
      "the object provided is unrecognized (must be of type Namespace): couldn't get version/kind; json parse error: unexpected end of JSON input (<empty>)",
    );
    assert.equal(statusOf(() => parseBody(json('{'), 'json')).message, "couldn't get version/kind; json parse error: unexpected end of JSON input");
  });

  it('refuses a body that is not an object, or whose apiVersion or kind is not a string', () => {
    assert.equal(
      statusOf(() => parseBody(json('[1]'), 'json', 'Widget')).message,
      'the object provided is unrecognized (must be of type Widget): couldn\'t get version/kind; json parse error: json: cannot unmarshal array into Go value of type struct { APIVersion string "json:\\"apiVersion,omitempty\\""; Kind string "json:\\"kind,omitempty\\"" } (5b315d)',
    );
    assert.equal(
      statusOf(() => parseBody(json('{"apiVersion": 1}'), 'json', 'Widget')).message,
      'the object provided is unrecognized (must be of type Widget): couldn\'t get version/kind; json parse error: json: cannot unmarshal number into Go struct field .apiVersion of type string ({"apiVersion": 1})',
    );
    assert.equal(
      statusOf(() => parseBody(json('{"apiVersion":"a/b/c"}'), 'json', 'Widget')).message,
      'the object provided is unrecognized (must be of type Widget): unexpected GroupVersion string: a/b/c ({"apiVersion":"a/b/c"})',
    );
    assert.equal(parseBody(json('null'), 'json', 'Widget').value, null);
  });

  it('refuses nesting deeper than encoding/json allows', () => {
    const nest = (n: number) => '{"a":'.repeat(n) + '1' + '}'.repeat(n);
    assert.equal(statusOf(() => parseBody(json(nest(10001)), 'json')).message, "couldn't get version/kind; json parse error: invalid character '{' exceeded max depth");
    assert.equal(typeof parseBody(json(nest(10000)), 'json').value, 'object');
  });
});

describe('goJSONSyntaxError', () => {
  const table: [string, string | null][] = [
    ['{"a":1}', null],
    ['  ', 'unexpected end of JSON input'],
    ['{"a":1,}', "invalid character '}' looking for beginning of object key string"],
    ['[1,]', "invalid character ']' looking for beginning of value"],
    ['{"a" 1}', "invalid character '1' after object key"],
    ['{"a":1 "b":2}', `invalid character '"' after object key:value pair`],
    ['[1 2]', "invalid character '2' after array element"],
    ['{} x', "invalid character 'x' after top-level value"],
    ['01', "invalid character '1' after top-level value"],
    ['-', "invalid character ' ' in numeric literal"],
    ['1.', "invalid character ' ' after decimal point in numeric literal"],
    ['1e+', "invalid character ' ' in exponent of numeric literal"],
    ['tru', "invalid character ' ' in literal true (expecting 'e')"],
    ['"\\q"', "invalid character 'q' in string escape code"],
    ['"\\u12x4"', "invalid character 'x' in \\u hexadecimal character escape"],
    ['"a\u0001"', "invalid character '\\x01' in string literal"],
    ["'a'", "invalid character '\\'' looking for beginning of value"],
    ['\ufeff{}', "invalid character 'ï' looking for beginning of value"],
  ];
  for (const [input, want] of table) {
    it(JSON.stringify(input), () => assert.equal(goJSONSyntaxError(json(input)), want));
  }
});

describe('parseBody (YAML)', () => {
  it('reads YAML as yaml.v2 does: YAML 1.1 booleans, octal, hex, nulls, keys converted and sorted', () => {
    const parsed = parseBody(json('b: yes\na: 0755\nc: 0x1F\nd: ~\ne: "yes"\nf: 1_000\ng: 1.5\nh: on\n1: int key\ntrue: bool key\n'), 'yaml');
    assert.deepEqual(parsed.value, { '1': 'int key', a: 493, b: true, c: 31, d: null, e: 'yes', f: 1000, g: 1.5, h: true, true: 'bool key' });
    assert.deepEqual(Object.keys(parsed.value as object), ['1', 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'true']);
  });

  it('reports duplicate keys with their lines, the later value winning', () => {
    const parsed = parseBody(json('metadata:\n  name: a\n  name: b\nspec:\n  ports:\n  - name: p\n    name: q\n'), 'yaml');
    assert.deepEqual(parsed.duplicates, ['line 3: key "name" already set in map', 'line 7: key "name" already set in map']);
    assert.deepEqual(parsed.value, { metadata: { name: 'b' }, spec: { ports: [{ name: 'q' }] } });
  });

  it('takes the first document, anchors and merge keys included', () => {
    const parsed = parseBody(json('base: &b {p: 1}\nderived:\n  <<: *b\n  q: 2\n---\nother: doc\n'), 'yaml');
    assert.deepEqual(parsed.value, { base: { p: 1 }, derived: { p: 1, q: 2 } });
    // yaml.v2 reads y, n, on, off (keys too) as booleans
    assert.deepEqual(parseBody(json('y: n\n'), 'yaml').value, { true: false });
    assert.equal(parseBody(json(''), 'yaml').value, null);
  });

  it('keeps integers beyond 2^53 as their digits', () => {
    const parsed = parseBody(json('spec:\n  big: 9007199254740993\n'), 'yaml');
    assert.equal(parsed.numbers?.get('spec.big'), '9007199254740993');
  });

  it('refuses YAML that does not parse, hex summary and all', () => {
    const s = statusOf(() => parseBody(json('a: b: c\n'), 'yaml', 'Widget'));
    assert.equal(s.code, 400);
    assert.equal(
      s.message,
      'the object provided is unrecognized (must be of type Widget): error converting YAML to JSON: yaml: line 1: mapping values are not allowed in this context (613a20623a20630a)',
    );
    assert.equal(
      statusOf(() => parseBody(json('a: *nope\n'), 'yaml')).message,
      "error converting YAML to JSON: yaml: unknown anchor 'nope' referenced",
    );
    assert.equal(statusOf(() => parseBody(json('a: .inf\n'), 'yaml')).message, 'error converting YAML to JSON: json: unsupported value: +Inf');
    assert.match(statusOf(() => parseBody(json('- a\n- b\n'), 'yaml')).message, /json: cannot unmarshal array into Go value of type struct/);
  });
});

describe('checkFields', () => {
  it('drops and reports unknown fields with their paths, keeps apiVersion, kind and free-form fields', () => {
    const { result } = check(
      JSON.stringify({
        apiVersion: 'example.io/v1',
        kind: 'Widget',
        extra: 1,
        metadata: { name: 'w', bogus: true },
        spec: { replicas: 2, foo: 'x', ports: [{ name: 'a', zap: 1 }], byName: { web: { name: 'w', zip: 2 } }, config: { anything: { goes: [1, 2] } } },
      }),
    );
    assert.deepEqual(result.unknown, [
      'unknown field "extra"',
      'unknown field "metadata.bogus"',
      'unknown field "spec.foo"',
      'unknown field "spec.ports[0].zap"',
      'unknown field "spec.byName.web.zip"',
    ]);
    assert.deepEqual(result.pruned, {
      apiVersion: 'example.io/v1',
      kind: 'Widget',
      metadata: { name: 'w' },
      spec: { replicas: 2, ports: [{ name: 'a' }], byName: { web: { name: 'w' } }, config: { anything: { goes: [1, 2] } } },
    });
    assert.deepEqual(result.typeErrors, []);
    assert.equal(result.decodeError, undefined);
  });

  it('returns the very object when nothing changes', () => {
    const obj = { apiVersion: 'example.io/v1', kind: 'Widget', metadata: { name: 'w' }, spec: { replicas: 1, resources: { cpu: '100m' } } };
    assert.equal(checkFields(obj, widget, defs).pruned, obj);
  });

  it('drops nulls from objects; in maps and lists a null is the zero value', () => {
    const { result } = check('{"metadata":{"name":null,"labels":{"a":null}},"spec":{"replicas":null,"tags":["x",null],"config":{"keep":null}}}');
    assert.deepEqual(result.pruned, { metadata: { labels: { a: '' } }, spec: { tags: ['x', ''], config: { keep: null } } });
    assert.deepEqual(checkFields(null, widget, defs).pruned, {});
  });

  it('reports values of the wrong type as encoding/json does', () => {
    const { result } = check('{"spec":{"replicas":"3","paused":"yes","ports":{"a":1},"tags":[1],"ratio":"x"},"metadata":{"labels":{"a":1},"generation":1.5}}');
    assert.deepEqual(
      result.typeErrors.map((e) => [e.path, e.message, e.fatal]),
      [
        ['spec.replicas', 'json: cannot unmarshal string into Go struct field WidgetSpec.spec.replicas of type int32', false],
        ['spec.paused', 'json: cannot unmarshal string into Go struct field WidgetSpec.spec.paused of type bool', false],
        ['spec.ports', 'json: cannot unmarshal object into Go struct field WidgetSpec.spec.ports of type []v1.Port', false],
        ['spec.tags[0]', 'json: cannot unmarshal number into Go struct field WidgetSpec.spec.tags of type string', false],
        ['spec.ratio', 'json: cannot unmarshal string into Go struct field WidgetSpec.spec.ratio of type float64', false],
        ['metadata.labels.a', 'json: cannot unmarshal number into Go struct field ObjectMeta.metadata.labels of type string', false],
        ['metadata.generation', 'json: cannot unmarshal number 1.5 into Go struct field ObjectMeta.metadata.generation of type int64', false],
      ],
    );
    assert.equal(result.decodeError, 'json: cannot unmarshal string into Go struct field WidgetSpec.spec.replicas of type int32');
  });

  it('takes integers as strconv.ParseInt does: exact literals, within the size', () => {
    assert.deepEqual(check('{"spec":{"replicas":2147483647}}').result.typeErrors, []);
    assert.equal(
      check('{"spec":{"replicas":2147483648}}').result.decodeError,
      'json: cannot unmarshal number 2147483648 into Go struct field WidgetSpec.spec.replicas of type int32',
    );
    assert.equal(check('{"spec":{"replicas":3.0}}').result.decodeError, 'json: cannot unmarshal number 3.0 into Go struct field WidgetSpec.spec.replicas of type int32');
    assert.equal(check('{"spec":{"replicas":1e2}}').result.decodeError, 'json: cannot unmarshal number 1e2 into Go struct field WidgetSpec.spec.replicas of type int32');
    assert.equal(
      check('{"spec":{"ports":[{"containerPort":80},{"containerPort":8.5}]}}').result.decodeError,
      'json: cannot unmarshal number 8.5 into Go struct field Port.spec.ports.containerPort of type int32',
    );
    assert.deepEqual(check('spec:\n  replicas: 3.0\n', 'yaml').result.typeErrors, []);
  });

  it('takes quantities as strings or numbers, canonically, and fails on anything else', () => {
    const { result } = check('{"spec":{"resources":{"cpu":"100m","memory":1,"storage":"1.5Gi","gpu":1e3,"pods":" 10 "}}}');
    assert.deepEqual(result.typeErrors, []);
    assert.deepEqual((result.pruned as { spec: unknown }).spec, { resources: { cpu: '100m', memory: '1', storage: '1536Mi', gpu: '1e3', pods: '10' } });
    const bad = check('{"spec":{"resources":{"cpu":"lots","memory":true}}}').result;
    assert.deepEqual(bad.typeErrors.map((e) => [e.path, e.message, e.fatal]), [
      ['spec.resources.cpu', ERR_FORMAT_WRONG, true],
      ['spec.resources.memory', ERR_FORMAT_WRONG, true],
    ]);
  });

  it('takes int-or-string as a string or an int32; the unmarshaler error is the one reported', () => {
    assert.deepEqual(check('{"spec":{"ports":[{"targetPort":"http"},{"targetPort":8080}]}}').result.typeErrors, []);
    const { result } = check('{"spec":{"replicas":"x","ports":[{"targetPort":1.5}]}}');
    assert.equal(result.typeErrors.length, 2);
    assert.equal(result.decodeError, 'json: cannot unmarshal number 1.5 into Go struct field Port.spec.ports.targetPort of type int32');
    assert.equal(
      check('{"spec":{"ports":[{"targetPort":true}]}}').result.decodeError,
      'json: cannot unmarshal bool into Go struct field Port.spec.ports.targetPort of type int32',
    );
  });

  it('keeps times already in the written form, and checks their ranges as time.Parse does', () => {
    for (const t of ['2000-02-29T23:59:59Z', '0000-01-01T00:00:00Z', '9999-12-31T23:59:59Z', '2024-04-30T00:00:00Z']) {
      const r = check(`{"metadata":{"creationTimestamp":"${t}"}}`).result;
      assert.deepEqual([r.typeErrors, r.pruned], [[], { metadata: { creationTimestamp: t } }]);
    }
    const micro = check('{"spec":{"renewTime":"2024-01-02T03:04:05.000000Z"}}').result;
    assert.deepEqual([micro.typeErrors, micro.pruned], [[], { spec: { renewTime: '2024-01-02T03:04:05.000000Z' } }]);
    const errors: [string, string][] = [
      ['1900-02-29T00:00:00Z', 'day'],
      ['2024-04-31T00:00:00Z', 'day'],
      ['2024-01-00T00:00:00Z', 'day'],
      ['2024-00-01T00:00:00Z', 'month'],
      ['2024-01-01T24:00:00Z', 'hour'],
      ['2024-01-01T00:60:00Z', 'minute'],
      ['2024-01-01T00:00:60Z', 'second'],
    ];
    for (const [t, what] of errors) {
      const r = check(`{"metadata":{"creationTimestamp":"${t}"}}`).result;
      assert.deepEqual(r.typeErrors, [{ path: 'metadata.creationTimestamp', message: `parsing time "${t}": ${what} out of range`, fatal: true }]);
    }
  });

  it('reads times as time.Parse(RFC3339) and writes them back as metav1.Time does', () => {
    const ok = check('{"metadata":{"creationTimestamp":"2024-02-29T23:30:00.5+01:00"},"spec":{"renewTime":"2024-01-02T03:04:05.123456Z"}}').result;
    assert.deepEqual(ok.typeErrors, []);
    assert.deepEqual(ok.pruned, { metadata: { creationTimestamp: '2024-02-29T22:30:00Z' }, spec: { renewTime: '2024-01-02T03:04:05.123456Z' } });
    const errors: [string, string][] = [
      ['"yesterday"', 'parsing time "yesterday" as "2006-01-02T15:04:05Z07:00": cannot parse "yesterday" as "2006"'],
      ['"2024-13-01T00:00:00Z"', 'parsing time "2024-13-01T00:00:00Z": month out of range'],
      ['"2023-02-29T00:00:00Z"', 'parsing time "2023-02-29T00:00:00Z": day out of range'],
      ['"2024-01-01"', 'parsing time "2024-01-01" as "2006-01-02T15:04:05Z07:00": cannot parse "" as "T"'],
      ['"2024-01-01T00:00:00Zjunk"', 'parsing time "2024-01-01T00:00:00Zjunk": extra text: "junk"'],
      ['5', 'json: cannot unmarshal number into Go struct field ObjectMeta.metadata.creationTimestamp of type string'],
    ];
    for (const [value, message] of errors) {
      const r = check(`{"metadata":{"creationTimestamp":${value}}}`).result;
      assert.deepEqual(r.typeErrors, [{ path: 'metadata.creationTimestamp', message, fatal: true }]);
    }
    assert.equal(
      check('{"spec":{"renewTime":"2024-01-02T03:04:05Z"}}').result.decodeError,
      'parsing time "2024-01-02T03:04:05Z" as "2006-01-02T15:04:05.000000Z07:00": cannot parse "Z" as ".000000"',
    );
  });

  it('reads bytes as base64.StdEncoding does', () => {
    assert.deepEqual(check('{"spec":{"payload":"aGVs\\nbG8="}}').result.pruned, { spec: { payload: 'aGVsbG8=' } });
    assert.deepEqual(check('{"spec":{"payload":[104,105]}}').result.pruned, { spec: { payload: 'aGk=' } });
    for (const [value, at] of [
      ['aGVsbG8', 4],
      ['aGV$bG8=', 3],
      ['aGVsbA=', 7],
      ['aGVsbG8=x', 8],
    ] as const) {
      assert.deepEqual(check(`{"spec":{"payload":"${value}"}}`).result.typeErrors, [
        { path: 'spec.payload', message: `illegal base64 data at input byte ${at}`, fatal: false },
      ]);
    }
  });

  it('orders JSON problems as the decoder meets them, a repeated unknown field reported once as unknown', () => {
    const body = `{"apiVersion":"example.io/v1","kind":"Widget",
      "metadata":{"name":"dupename","name":"w","labels":{"a":"1","a":"2"},"unknownMeta":"v"},
      "spec":{"unknown1":"v","unknownDupe":"1","unknownDupe":"2","paused":true,"paused":false,
        "ports":[{"name":"p","junk":1,"containerPort":1,"containerPort":2}],"config":{"x":1,"x":2}}}`;
    const { result } = check(body);
    assert.deepEqual(result.problems, [
      'duplicate field "metadata.name"',
      'duplicate field "metadata.labels.a"',
      'unknown field "metadata.unknownMeta"',
      'unknown field "spec.unknown1"',
      'unknown field "spec.unknownDupe"',
      'duplicate field "spec.paused"',
      'unknown field "spec.ports[0].junk"',
      'duplicate field "spec.ports[0].containerPort"',
      'duplicate field "spec.config.x"',
    ]);
  });

  it('orders YAML problems as Kubernetes does: the duplicate keys, then unknown fields in sorted-key order', () => {
    const body = 'spec:\n  zeta: 1\n  paused: true\n  paused: false\n  alpha: 2\nmetadata:\n  name: a\n  name: b\n  other: x\n';
    const { result } = check(body, 'yaml');
    assert.deepEqual(result.problems, [
      'line 4: key "paused" already set in map',
      'line 8: key "name" already set in map',
      'unknown field "metadata.other"',
      'unknown field "spec.alpha"',
      'unknown field "spec.zeta"',
    ]);
  });

  it('reproduces the field_validation integration test for a typed kind (JSON and YAML)', () => {
    const deployDefs: Definitions = {
      'io.k8s.api.apps.v1.Deployment': {
        type: 'object',
        properties: { apiVersion: { type: 'string' }, kind: { type: 'string' }, metadata: ref('io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta'), spec: ref('io.k8s.api.apps.v1.DeploymentSpec') },
      },
      'io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta': defs['io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta']!,
      'io.k8s.api.apps.v1.DeploymentSpec': {
        type: 'object',
        properties: {
          paused: { type: 'boolean' },
          selector: { type: 'object', properties: { matchLabels: { type: 'object', additionalProperties: { type: 'string' } } } },
          template: { type: 'object', properties: { metadata: ref('io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta'), spec: ref('io.k8s.api.core.v1.PodSpec') } },
        },
      },
      'io.k8s.api.core.v1.PodSpec': { type: 'object', properties: { containers: { type: 'array', items: ref('io.k8s.api.core.v1.Container') } } },
      'io.k8s.api.core.v1.Container': { type: 'object', properties: { name: { type: 'string' }, image: { type: 'string' }, imagePullPolicy: { type: 'string' } } },
    };
    const jsonBody = `{"apiVersion": "apps/v1", "kind": "Deployment",
      "metadata": {"name": "dupename", "name": "d", "labels": {"app": "nginx"}, "unknownMeta": "metaVal"},
      "spec": {"unknown1": "val1", "unknownDupe": "valDupe", "unknownDupe": "valDupe2", "paused": true, "paused": false,
        "selector": {"matchLabels": {"app": "nginx"}},
        "template": {"metadata": {"labels": {"app": "nginx"}}, "spec": {"containers": [{"name": "nginx", "image": "nginx:latest",
          "unknownNested": "val1", "imagePullPolicy": "Always", "imagePullPolicy": "Never"}]}}}}`;
    const yamlBody = [
      'apiVersion: apps/v1',
      'kind: Deployment',
      'metadata:',
      '  name: dupename',
      '  name: d',
      '  unknownMeta: metaVal',
      '  labels:',
      '    app: nginx',
      'spec:',
      '  unknown1: val1',
      '  unknownDupe: valDupe',
      '  unknownDupe: valDupe2',
      '  paused: true',
      '  paused: false',
      '  selector:',
      '    matchLabels:',
      '      app: nginx',
      '  template:',
      '    metadata:',
      '      labels:',
      '        app: nginx',
      '    spec:',
      '      containers:',
      '      - name: nginx',
      '        image: nginx:latest',
      '        unknownNested: val1',
      '        imagePullPolicy: Always',
      '        imagePullPolicy: Never',
    ].join('\n');
    const opts = { group: 'apps', version: 'v1', kind: 'Deployment', schema: ref('io.k8s.api.apps.v1.Deployment'), defs: deployDefs };
    const strictJSON = statusOf(() => decodeObjectBody(json(jsonBody), 'json', { ...opts, fieldValidation: 'Strict', warnings: [] }));
    assert.equal(strictJSON.code, 400);
    assert.equal(
      strictJSON.message,
      'Deployment in version "v1" cannot be handled as a Deployment: strict decoding error: duplicate field "metadata.name", unknown field "metadata.unknownMeta", unknown field "spec.unknown1", unknown field "spec.unknownDupe", duplicate field "spec.paused", unknown field "spec.template.spec.containers[0].unknownNested", duplicate field "spec.template.spec.containers[0].imagePullPolicy"',
    );
    const warnings: string[] = [];
    const decoded = decodeObjectBody(json(yamlBody), 'yaml', { ...opts, fieldValidation: 'Warn', warnings });
    assert.deepEqual(warnings, [
      'line 5: key "name" already set in map',
      'line 12: key "unknownDupe" already set in map',
      'line 14: key "paused" already set in map',
      'line 28: key "imagePullPolicy" already set in map',
      'unknown field "metadata.unknownMeta"',
      'unknown field "spec.template.spec.containers[0].unknownNested"',
      'unknown field "spec.unknown1"',
      'unknown field "spec.unknownDupe"',
    ]);
    assert.deepEqual(decoded.gvk, { group: 'apps', version: 'v1', kind: 'Deployment' });
    assert.deepEqual((decoded.object as { metadata: unknown }).metadata, { labels: { app: 'nginx' }, name: 'd' });
    assert.equal(
      statusOf(() => decodeObjectBody(json(yamlBody), 'yaml', { ...opts, fieldValidation: 'Strict', warnings: [] })).message,
      'Deployment in version "v1" cannot be handled as a Deployment: strict decoding error: error converting YAML to JSON: yaml: unmarshal errors:\n' +
        '  line 5: key "name" already set in map\n' +
        '  line 12: key "unknownDupe" already set in map\n' +
        '  line 14: key "paused" already set in map\n' +
        '  line 28: key "imagePullPolicy" already set in map, unknown field "metadata.unknownMeta", unknown field "spec.template.spec.containers[0].unknownNested", unknown field "spec.unknown1", unknown field "spec.unknownDupe"',
    );
    const ignored: string[] = [];
    decodeObjectBody(json(jsonBody), 'json', { ...opts, fieldValidation: 'Ignore', warnings: ignored });
    assert.deepEqual(ignored, []);
  });
});

describe('field validation', () => {
  it('defaults to Warn and takes the three directives', () => {
    assert.equal(fieldValidationDirective(undefined), 'Warn');
    assert.equal(fieldValidationDirective(''), 'Warn');
    assert.equal(fieldValidationDirective('Ignore'), 'Ignore');
    assert.equal(fieldValidationDirective('Warn'), 'Warn');
    assert.equal(fieldValidationDirective('Strict'), 'Strict');
  });

  it('refuses anything else as the options validation does (422)', () => {
    const s = statusOf(() => fieldValidationDirective('strict'));
    assert.equal(s.code, 422);
    assert.equal(s.reason, 'Invalid');
    assert.equal(s.message, 'CreateOptions.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: "strict": supported values: "", "Ignore", "Strict", "Warn"');
    assert.match(statusOf(() => fieldValidationDirective('x', 'UpdateOptions')).message, /^UpdateOptions\.meta\.k8s\.io "" is invalid: /);
  });

  it('Strict fails with the problems joined, Warn adds each as a warning, Ignore does nothing', () => {
    const problems = ['unknown field "spec.foo"', 'duplicate field "metadata.name"'];
    const s = statusOf(() => applyFieldValidation('Strict', problems, []));
    assert.equal(s.code, 400);
    assert.equal(s.reason, 'BadRequest');
    assert.equal(s.message, 'strict decoding error: unknown field "spec.foo", duplicate field "metadata.name"');
    assert.equal(
      statusOf(() => applyFieldValidation('Strict', problems, [], { bodyKind: 'Widget', bodyVersion: 'v1', kind: 'Widget' })).message,
      'Widget in version "v1" cannot be handled as a Widget: strict decoding error: unknown field "spec.foo", duplicate field "metadata.name"',
    );
    const warnings = ['earlier'];
    applyFieldValidation('Warn', problems, warnings);
    assert.deepEqual(warnings, ['earlier', ...problems]);
    const none: string[] = [];
    applyFieldValidation('Ignore', problems, none);
    applyFieldValidation('Strict', [], none);
    assert.deepEqual(none, []);
  });

  it('words YAML duplicate lines as one yaml.v2 error', () => {
    assert.equal(
      strictDecodingMessage(['line 2: key "a" already set in map', 'line 3: key "b" already set in map', 'unknown field "c"']),
      'strict decoding error: error converting YAML to JSON: yaml: unmarshal errors:\n  line 2: key "a" already set in map\n  line 3: key "b" already set in map, unknown field "c"',
    );
  });
});

describe('decodeObjectBody', () => {
  const opts = (fieldValidation: 'Ignore' | 'Warn' | 'Strict', warnings: string[] = []) => ({
    group: 'example.io',
    version: 'v1',
    kind: 'Widget',
    schema: widget,
    defs,
    fieldValidation,
    warnings,
  });

  it('fails a type error whatever the directive, worded with the body kind and version', () => {
    const body = json('{"apiVersion":"example.io/v1","kind":"Widget","spec":{"replicas":"two","bogus":1}}');
    for (const fv of ['Ignore', 'Warn', 'Strict'] as const) {
      const s = statusOf(() => decodeObjectBody(body, 'json', opts(fv)));
      assert.equal(s.code, 400);
      assert.equal(s.message, 'Widget in version "v1" cannot be handled as a Widget: json: cannot unmarshal string into Go struct field WidgetSpec.spec.replicas of type int32');
    }
  });

  it('defaults the body kind and version from the endpoint', () => {
    const warnings: string[] = [];
    const out = decodeObjectBody(json('{"metadata":{"name":"w"},"spec":{"bogus":1}}'), 'json', opts('Warn', warnings));
    assert.deepEqual(out, { object: { metadata: { name: 'w' }, spec: {} }, gvk: { group: 'example.io', version: 'v1', kind: 'Widget' } });
    assert.deepEqual(warnings, ['unknown field "spec.bogus"']);
  });
});

describe('messages', () => {
  it('summarizes bodies as the apiserver does', () => {
    assert.equal(summarizeData(json('')), '<empty>');
    assert.equal(summarizeData(json('{"a":1}')), '{"a":1}');
    assert.equal(summarizeData(json('{"kind":"Namespace","apiVersion":"v1"}')), '{"kind":"Namespace","apiVersio ...');
    assert.equal(summarizeData(json('kind: x')), '6b696e643a2078');
    assert.equal(summarizeData(json('x'.repeat(40))), '78'.repeat(30) + ' ...');
  });

  it('words decode failures as transformDecodeError', () => {
    assert.equal(unrecognizedObjectMessage('Pod', 'boom', json('[]')), 'the object provided is unrecognized (must be of type Pod): boom (5b5d)');
    assert.equal(cannotBeHandledMessage('Pod', 'v1', 'Pod', 'boom'), 'Pod in version "v1" cannot be handled as a Pod: boom');
  });

  it('reads the body group, version and kind as gvkWithDefaults', () => {
    const d = { group: 'apps', version: 'v1', kind: 'Deployment' };
    assert.deepEqual(bodyGVK({ apiVersion: 'apps/v1beta1', kind: 'Thing' }, d), { group: 'apps', version: 'v1beta1', kind: 'Thing' });
    assert.deepEqual(bodyGVK({ apiVersion: 'v1' }, d), { group: '', version: 'v1', kind: 'Deployment' });
    assert.deepEqual(bodyGVK({}, d), d);
    assert.deepEqual(bodyGVK(null, d), d);
  });

  it('parses and checks a whole body in one go', () => {
    const parsed: ParsedBody = parseBody(json('{"kind":"Widget","spec":{"replicas":1}}'), 'json', 'Widget');
    assert.deepEqual(checkFields(parsed.value, widget, defs, parsed).pruned, { kind: 'Widget', spec: { replicas: 1 } });
  });
});
