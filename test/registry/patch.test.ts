import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import YAML from 'yaml';
import { StatusError } from '../../src/registry/errors.js';
import { ref, type Definitions, type Schema } from '../../src/registry/schema.js';
import {
  applyJsonPatch,
  applyMergePatch,
  applyStrategicMergePatch,
  goJsonSyntaxError,
  MAX_JSON_PATCH_OPERATIONS,
  parsePatchType,
  PATCH_TYPES,
  unsupportedPatchType,
  type JsonObject,
} from '../../src/registry/patch.js';

const GENERIC_422 = 'the server rejected our request due to an error in our request';

/** Asserts `fn` throws a StatusError with this code, reason and message. */
function assertStatus(fn: () => unknown, code: number, message: string | RegExp, reason?: string): StatusError {
  let caught: unknown;
  try {
    fn();
  } catch (e) {
    caught = e;
  }
  assert.ok(caught instanceof StatusError, `expected a StatusError, got ${String(caught)}`);
  assert.equal(caught.code, code, caught.message);
  if (typeof message === 'string') assert.equal(caught.status.message, message);
  else assert.match(caught.status.message ?? '', message);
  if (reason !== undefined) assert.equal(caught.status.reason, reason);
  return caught;
}

function json(doc: unknown, patch: unknown): JsonObject {
  return applyJsonPatch(doc as JsonObject, JSON.stringify(patch));
}

function merge(doc: unknown, patch: unknown): JsonObject {
  return applyMergePatch(doc as JsonObject, JSON.stringify(patch));
}

// ---------------------------------------------------------------------------
// Patch types
// ---------------------------------------------------------------------------

void describe('patch types', () => {
  void it('lists the types in the order of Kubernetes', () => {
    assert.deepEqual(
      [...PATCH_TYPES],
      [
        'application/json-patch+json',
        'application/merge-patch+json',
        'application/strategic-merge-patch+json',
        'application/apply-patch+yaml',
      ],
    );
  });

  void it('answers an unknown type with the 415 of Kubernetes', () => {
    const err = unsupportedPatchType('application/json');
    assert.equal(err.code, 415);
    assert.equal(err.reason, 'UnsupportedMediaType');
    assert.equal(
      err.status.message,
      'the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json, application/apply-patch+yaml',
    );
    // custom resources do not take strategic merge patches
    assert.equal(
      unsupportedPatchType('x', ['application/json-patch+json', 'application/merge-patch+json', 'application/apply-patch+yaml']).status.message,
      'the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml',
    );
  });

  void it('reads a Content-Type as PatchResource does', () => {
    assert.equal(parsePatchType('application/merge-patch+json; charset=utf-8'), 'application/merge-patch+json');
    assert.equal(parsePatchType('application/strategic-merge-patch+json'), 'application/strategic-merge-patch+json');
    assertStatus(() => parsePatchType('application/json'), 415, /^the body of the request was in an unknown format/);
    assertStatus(() => parsePatchType(undefined), 415, /accepted media types include/);
    assertStatus(() => parsePatchType('Application/Merge-Patch+json'), 415, /accepted media types include/);
  });
});

// ---------------------------------------------------------------------------
// encoding/json syntax errors
// ---------------------------------------------------------------------------

void describe('goJsonSyntaxError (encoding/json scanner texts)', () => {
  const cases: [string, string | null][] = [
    ['{"a":1}', null],
    [' [1, 2.5e-3, true, false, null, "x\\u00e9\\n"] ', null],
    ['', 'unexpected end of JSON input'],
    ['{', 'unexpected end of JSON input'],
    ['[1,', 'unexpected end of JSON input'],
    ['"abc', 'unexpected end of JSON input'],
    ['{"a" 1}', "invalid character '1' after object key"],
    ['{"a":1 "b":2}', `invalid character '"' after object key:value pair`],
    ['{a:1}', "invalid character 'a' looking for beginning of object key string"],
    ['{"a":1,}', "invalid character '}' looking for beginning of object key string"],
    ['[1 2]', "invalid character '2' after array element"],
    ['[1,]', "invalid character ']' looking for beginning of value"],
    ['{"a":1}x', "invalid character 'x' after top-level value"],
    ['nul', "invalid character ' ' in literal null (expecting 'l')"],
    ['tru', "invalid character ' ' in literal true (expecting 'e')"],
    ['fals', "invalid character ' ' in literal false (expecting 'e')"],
    ['trUe', "invalid character 'U' in literal true (expecting 'u')"],
    ['-', "invalid character ' ' in numeric literal"],
    ['-a', "invalid character 'a' in numeric literal"],
    ['1.', "invalid character ' ' after decimal point in numeric literal"],
    ['1e', "invalid character ' ' in exponent of numeric literal"],
    ['01', "invalid character '1' after top-level value"],
    ['"\\x"', "invalid character 'x' in string escape code"],
    ['"\\u12g4"', "invalid character 'g' in \\u hexadecimal character escape"],
    ['"a\nb"', "invalid character '\\n' in string literal"],
    ["'a'", `invalid character '\\'' looking for beginning of value`],
    ['\t\u0001', "invalid character '\\x01' looking for beginning of value"],
    ['<THIS IS NOT JSON>', "invalid character '<' looking for beginning of value"],
  ];
  for (const [input, want] of cases) {
    void it(JSON.stringify(input), () => {
      assert.equal(goJsonSyntaxError(Buffer.from(input, 'utf8')), want);
    });
  }

  void it('quotes non-ASCII bytes as Go quotes a byte', () => {
    assert.equal(goJsonSyntaxError(Buffer.from('{é}', 'utf8')), "invalid character 'Ã' looking for beginning of object key string");
    assert.equal(goJsonSyntaxError(Uint8Array.from([0xef, 0xbb, 0xbf, 0x7b, 0x7d])), "invalid character 'ï' looking for beginning of value");
  });

  void it('limits nesting to 10000 levels', () => {
    assert.equal(goJsonSyntaxError(Buffer.from('['.repeat(10000) + ']'.repeat(10000))), null);
    assert.equal(goJsonSyntaxError(Buffer.from('['.repeat(10001))), "invalid character '[' exceeded max depth");
  });
});

// ---------------------------------------------------------------------------
// JSON Patch
// ---------------------------------------------------------------------------

void describe('applyJsonPatch: RFC 6902 appendix A', () => {
  void it('A.1 adds an object member', () => {
    assert.deepEqual(json({ foo: 'bar' }, [{ op: 'add', path: '/baz', value: 'qux' }]), { baz: 'qux', foo: 'bar' });
  });
  void it('A.2 adds an array element', () => {
    assert.deepEqual(json({ foo: ['bar', 'baz'] }, [{ op: 'add', path: '/foo/1', value: 'qux' }]), { foo: ['bar', 'qux', 'baz'] });
  });
  void it('A.3 removes an object member', () => {
    assert.deepEqual(json({ baz: 'qux', foo: 'bar' }, [{ op: 'remove', path: '/baz' }]), { foo: 'bar' });
  });
  void it('A.4 removes an array element', () => {
    assert.deepEqual(json({ foo: ['bar', 'qux', 'baz'] }, [{ op: 'remove', path: '/foo/1' }]), { foo: ['bar', 'baz'] });
  });
  void it('A.5 replaces a value', () => {
    assert.deepEqual(json({ baz: 'qux', foo: 'bar' }, [{ op: 'replace', path: '/baz', value: 'boo' }]), { baz: 'boo', foo: 'bar' });
  });
  void it('A.6 moves a value', () => {
    assert.deepEqual(
      json({ foo: { bar: 'baz', waldo: 'fred' }, qux: { corge: 'grault' } }, [{ op: 'move', from: '/foo/waldo', path: '/qux/thud' }]),
      { foo: { bar: 'baz' }, qux: { corge: 'grault', thud: 'fred' } },
    );
  });
  void it('A.7 moves an array element', () => {
    assert.deepEqual(json({ foo: ['all', 'grass', 'cows', 'eat'] }, [{ op: 'move', from: '/foo/1', path: '/foo/3' }]), {
      foo: ['all', 'cows', 'eat', 'grass'],
    });
  });
  void it('A.8 tests a value: success', () => {
    const doc = { baz: 'qux', foo: ['a', 2, 'c'] };
    assert.deepEqual(
      json(doc, [
        { op: 'test', path: '/baz', value: 'qux' },
        { op: 'test', path: '/foo/1', value: 2 },
      ]),
      doc,
    );
  });
  void it('A.9 tests a value: error (422 as the apiserver answers)', () => {
    const err = assertStatus(() => json({ baz: 'qux' }, [{ op: 'test', path: '/baz', value: 'bar' }]), 422, GENERIC_422, 'Invalid');
    assert.deepEqual(err.status.details, {});
  });
  void it('A.10 adds a nested member object', () => {
    assert.deepEqual(json({ foo: 'bar' }, [{ op: 'add', path: '/child', value: { grandchild: {} } }]), {
      foo: 'bar',
      child: { grandchild: {} },
    });
  });
  void it('A.11 ignores unrecognized elements', () => {
    assert.deepEqual(json({ foo: 'bar' }, [{ op: 'add', path: '/baz', value: 'qux', xyz: 123 }]), { foo: 'bar', baz: 'qux' });
  });
  void it('A.12 fails to add to a nonexistent target', () => {
    assertStatus(() => json({ foo: 'bar' }, [{ op: 'add', path: '/baz/bat', value: 'qux' }]), 422, GENERIC_422);
  });
  void it('A.13 a duplicate "op" member: the last one wins, and removing /baz fails', () => {
    const body = '[{ "op": "add", "path": "/baz", "value": "qux", "op": "remove" }]';
    assertStatus(() => applyJsonPatch({ foo: 'bar' }, body), 422, GENERIC_422);
  });
  void it('A.14 ~ escape ordering', () => {
    const doc = { '/': 9, '~1': 10 };
    assert.deepEqual(json(doc, [{ op: 'test', path: '/~01', value: 10 }]), doc);
  });
  void it('A.15 compares strings and numbers', () => {
    assertStatus(() => json({ '/': 9, '~1': 10 }, [{ op: 'test', path: '/~01', value: '10' }]), 422, GENERIC_422);
  });
  void it('A.16 adds an array value', () => {
    assert.deepEqual(json({ foo: ['bar'] }, [{ op: 'add', path: '/foo/-', value: ['abc', 'def'] }]), { foo: ['bar', ['abc', 'def']] });
  });
});

void describe('applyJsonPatch: evanphx/json-patch v4 behaviour', () => {
  void it('does not modify its input', () => {
    const doc = { a: { b: [1] } };
    json(doc, [{ op: 'add', path: '/a/b/-', value: 2 }]);
    assert.deepEqual(doc, { a: { b: [1] } });
  });
  void it('decodes ~1 and ~0 in tokens', () => {
    assert.deepEqual(json({ metadata: { labels: {} } }, [{ op: 'add', path: '/metadata/labels/a~1b~0c', value: 'x' }]), {
      metadata: { labels: { 'a/b~c': 'x' } },
    });
  });
  void it('replaces a missing object member by adding it', () => {
    assert.deepEqual(json({ a: 1 }, [{ op: 'replace', path: '/b', value: 2 }]), { a: 1, b: 2 });
  });
  void it('refuses to remove a missing member or index', () => {
    assertStatus(() => json({ a: 1 }, [{ op: 'remove', path: '/b' }]), 422, GENERIC_422);
    assertStatus(() => json({ a: [1] }, [{ op: 'remove', path: '/a/1' }]), 422, GENERIC_422);
    assertStatus(() => json({ a: [1] }, [{ op: 'replace', path: '/a/1', value: 2 }]), 422, GENERIC_422);
    assertStatus(() => json({ a: [1] }, [{ op: 'replace', path: '/a/-', value: 2 }]), 422, GENERIC_422);
  });
  void it('removes a member whose value is null', () => {
    assert.deepEqual(json({ a: null, b: 1 }, [{ op: 'remove', path: '/a' }]), { b: 1 });
  });
  void it('takes negative indices from the end, and Atoi indices', () => {
    assert.deepEqual(json({ a: [1, 2, 3] }, [{ op: 'remove', path: '/a/-1' }]), { a: [1, 2] });
    assert.deepEqual(json({ a: [1, 2, 3] }, [{ op: 'add', path: '/a/-1', value: 9 }]), { a: [1, 2, 3, 9] });
    assert.deepEqual(json({ a: [1, 2, 3] }, [{ op: 'add', path: '/a/-4', value: 0 }]), { a: [0, 1, 2, 3] });
    assert.deepEqual(json({ a: [1, 2, 3] }, [{ op: 'replace', path: '/a/-3', value: 0 }]), { a: [0, 2, 3] });
    assert.deepEqual(json({ a: [1, 2, 3] }, [{ op: 'test', path: '/a/01', value: 2 }]), { a: [1, 2, 3] });
    assert.deepEqual(json({ a: [1, 2, 3] }, [{ op: 'add', path: '/a/+3', value: 4 }]), { a: [1, 2, 3, 4] });
    assertStatus(() => json({ a: [1] }, [{ op: 'add', path: '/a/3', value: 0 }]), 422, GENERIC_422);
    assertStatus(() => json({ a: [1] }, [{ op: 'add', path: '/a/-3', value: 0 }]), 422, GENERIC_422);
    assertStatus(() => json({ a: [1] }, [{ op: 'add', path: '/a/x', value: 0 }]), 422, GENERIC_422);
  });
  void it('copies a missing member as null, and deep-copies values', () => {
    assert.deepEqual(json({ a: 1 }, [{ op: 'copy', from: '/b', path: '/c' }]), { a: 1, c: null });
    const out = json({ a: { x: [1] } }, [
      { op: 'copy', from: '/a', path: '/b' },
      { op: 'add', path: '/b/x/-', value: 2 },
    ]);
    assert.deepEqual(out, { a: { x: [1] }, b: { x: [1, 2] } });
    assertStatus(() => json({ a: [1] }, [{ op: 'copy', from: '/a/5', path: '/b' }]), 422, GENERIC_422);
  });
  void it('limits what copies add to 3 MiB', () => {
    const big = 'x'.repeat(1024 * 1024);
    const ops = [1, 2, 3].map((i) => ({ op: 'copy', from: '/a', path: `/c${i}` }));
    assert.equal(Object.keys(json({ a: big }, ops.slice(0, 2))).length, 3);
    assertStatus(() => json({ a: big }, ops), 422, GENERIC_422);
  });
  void it('refuses to move a missing member, or into a path that went with it', () => {
    assertStatus(() => json({ a: 1 }, [{ op: 'move', from: '/b', path: '/c' }]), 422, GENERIC_422);
    assertStatus(() => json({ a: { b: 1 } }, [{ op: 'move', from: '/a', path: '/a/c' }]), 422, GENERIC_422);
  });
  void it('tests null against a missing or null member', () => {
    assert.deepEqual(json({ a: null }, [{ op: 'test', path: '/a', value: null }]), { a: null });
    assert.deepEqual(json({}, [{ op: 'test', path: '/missing', value: null }]), {});
    assertStatus(() => json({ a: 1 }, [{ op: 'test', path: '/a', value: null }]), 422, GENERIC_422);
    assertStatus(() => json({ a: 1 }, [{ op: 'test', path: '/a' }]), 422, GENERIC_422);
  });
  void it('tests objects and arrays structurally', () => {
    assert.deepEqual(json({ a: { x: 1, y: [1, { z: 2 }] } }, [{ op: 'test', path: '/a', value: { y: [1, { z: 2 }], x: 1 } }]), {
      a: { x: 1, y: [1, { z: 2 }] },
    });
    assertStatus(() => json({ a: { x: 1 } }, [{ op: 'test', path: '/a', value: { x: 1, y: 2 } }]), 422, GENERIC_422);
    assertStatus(() => json({ a: [1] }, [{ op: 'test', path: '/a', value: [1, 2] }]), 422, GENERIC_422);
    assert.deepEqual(json({ a: 1 }, [{ op: 'test', path: '', value: { a: 1 } }]), { a: 1 });
  });
  void it('tests scalars by their JSON text, the current object as Go encodes it', () => {
    const doc = { a: 'a<b', n: 1, s: 'A' };
    // Go writes "<" as \u003c, so the literal text does not match, the escaped one does
    assertStatus(() => json(doc, [{ op: 'test', path: '/a', value: 'a<b' }]), 422, GENERIC_422);
    assert.deepEqual(applyJsonPatch(doc, '[{"op":"test","path":"/a","value":"a\\u003cb"}]'), doc);
    assertStatus(() => applyJsonPatch(doc, '[{"op":"test","path":"/n","value":1.0}]'), 422, GENERIC_422);
    assert.deepEqual(applyJsonPatch(doc, '[{"op":"test","path":"/n","value": 1 }]'), doc);
    assertStatus(() => applyJsonPatch(doc, '[{"op":"test","path":"/s","value":"\\u0041"}]'), 422, GENERIC_422);
    // a value added by the patch keeps the text it was sent with; a copy is re-encoded
    const added = [
      { op: 'add', path: '/b', value: 'x<y' },
      { op: 'test', path: '/b', value: 'x<y' },
    ];
    assert.deepEqual(json({}, added), { b: 'x<y' });
    assertStatus(() => json({}, [...added, { op: 'copy', from: '/b', path: '/c' }, { op: 'test', path: '/c', value: 'x<y' }]), 422, GENERIC_422);
    assert.deepEqual(
      applyJsonPatch(
        {},
        '[{"op":"add","path":"/b","value":{"k":["x<y"]}},{"op":"copy","from":"/b","path":"/c"},{"op":"test","path":"/c","value":{"k":["x\\u003cy"]}}]',
      ),
      { b: { k: ['x<y'] }, c: { k: ['x<y'] } },
    );
  });
  void it('adds the null value when "value" is missing', () => {
    assert.deepEqual(json({}, [{ op: 'add', path: '/a' }]), { a: null });
  });
  void it('refuses an unknown op, a missing path, a non-string path, and a null operation', () => {
    assertStatus(() => json({}, [{ op: 'frobnicate', path: '/a' }]), 422, GENERIC_422);
    assertStatus(() => json({}, [{ path: '/a', value: 1 }]), 422, GENERIC_422);
    assertStatus(() => json({}, [{ op: 'add', value: 1 }]), 422, GENERIC_422);
    assertStatus(() => json({}, [{ op: 'add', path: 5, value: 1 }]), 422, GENERIC_422);
    assertStatus(() => json({}, [null]), 422, GENERIC_422);
    assertStatus(() => json({}, [{ op: 'add', path: '', value: 1 }]), 422, GENERIC_422);
  });
  void it('uses a path without a leading slash from its second token on', () => {
    assert.deepEqual(json({}, [{ op: 'add', path: 'ignored/a', value: 1 }]), { a: 1 });
  });
  void it('applies nothing for an empty or null patch', () => {
    assert.deepEqual(applyJsonPatch({ a: 1 }, '[]'), { a: 1 });
    assert.deepEqual(applyJsonPatch({ a: 1 }, 'null'), { a: 1 });
  });
  void it('answers a replaced document that is not an object as the decoder does', () => {
    const err = assertStatus(
      () => json({ a: 1 }, [{ op: 'replace', path: '', value: [1, '<'] }]),
      422,
      ' "" is invalid: patch: Invalid value: "[1,\\"\\\\u003c\\"]": couldn\'t get version/kind; json parse error: json: cannot unmarshal array into Go value of type struct { APIVersion string "json:\\"apiVersion,omitempty\\""; Kind string "json:\\"kind,omitempty\\"" }',
      'Invalid',
    );
    assert.equal(err.status.details?.causes?.[0]?.field, 'patch');
    assertStatus(() => json({ a: 1 }, [{ op: 'replace', path: '', value: 'x' }]), 422, GENERIC_422);
  });
  void it('answers bodies that do not decode with 400 and the encoding/json text', () => {
    assertStatus(() => applyJsonPatch({}, '[{"op":"add",}]'), 400, `invalid character '}' looking for beginning of object key string`, 'BadRequest');
    assertStatus(() => applyJsonPatch({}, ''), 400, 'unexpected end of JSON input');
    assertStatus(() => applyJsonPatch({}, '{"op":"add"}'), 400, 'json: cannot unmarshal object into Go value of type jsonpatch.Patch');
    assertStatus(() => applyJsonPatch({}, '"x"'), 400, 'json: cannot unmarshal string into Go value of type jsonpatch.Patch');
    assertStatus(() => applyJsonPatch({}, '[{"op":"test","path":"/a"}, 1]'), 400, 'json: cannot unmarshal number into Go value of type jsonpatch.Operation');
    assertStatus(() => applyJsonPatch({}, '[[]]'), 400, 'json: cannot unmarshal array into Go value of type jsonpatch.Operation');
    assertStatus(() => applyJsonPatch({}, Buffer.from('[true]')), 400, 'json: cannot unmarshal bool into Go value of type jsonpatch.Operation');
  });
  void it('refuses more than 10000 operations with 413', () => {
    const ops = Array.from({ length: MAX_JSON_PATCH_OPERATIONS + 1 }, () => ({ op: 'test', path: '/a', value: 1 }));
    assertStatus(
      () => json({ a: 1 }, ops),
      413,
      'Request entity too large: The allowed maximum operations in a JSON patch is 10000, got 10001',
      'RequestEntityTooLarge',
    );
    assert.deepEqual(json({ a: 1 }, ops.slice(1)), { a: 1 });
  });
  void it('treats a "__proto__" member as data', () => {
    const out = json({}, [{ op: 'add', path: '/__proto__', value: { polluted: true } }]);
    assert.deepEqual(Object.keys(out), ['__proto__']);
    assert.equal(({} as Record<string, unknown>).polluted, undefined);
  });
});

// ---------------------------------------------------------------------------
// JSON Merge Patch
// ---------------------------------------------------------------------------

void describe('applyMergePatch: RFC 7386 appendix A', () => {
  const cases: [unknown, unknown, unknown][] = [
    [{ a: 'b' }, { a: 'c' }, { a: 'c' }],
    [{ a: 'b' }, { b: 'c' }, { a: 'b', b: 'c' }],
    [{ a: 'b' }, { a: null }, {}],
    [{ a: 'b', b: 'c' }, { a: null }, { b: 'c' }],
    [{ a: ['b'] }, { a: 'c' }, { a: 'c' }],
    [{ a: 'c' }, { a: ['b'] }, { a: ['b'] }],
    [{ a: { b: 'c' } }, { a: { b: 'd', c: null } }, { a: { b: 'd' } }],
    [{ a: [{ b: 'c' }] }, { a: [1] }, { a: [1] }],
    [{ e: null }, { a: 1 }, { e: null, a: 1 }],
    [{}, { a: { bb: { ccc: null } } }, { a: { bb: {} } }],
  ];
  for (const [doc, patch, want] of cases) {
    void it(`${JSON.stringify(doc)} + ${JSON.stringify(patch)}`, () => {
      assert.deepEqual(merge(doc, patch), want);
    });
  }

  void it('refuses a null or scalar patch with 400 "Invalid JSON Patch"', () => {
    assertStatus(() => applyMergePatch({ a: 'foo' }, 'null'), 400, 'Invalid JSON Patch', 'BadRequest');
    assertStatus(() => applyMergePatch({ a: 'foo' }, '"bar"'), 400, 'Invalid JSON Patch');
    assertStatus(() => applyMergePatch({ a: 'foo' }, '5'), 400, 'Invalid JSON Patch');
  });
  void it('answers an array patch (which replaces the document) with the decode error', () => {
    assertStatus(
      () => applyMergePatch({ a: 'b' }, '["c", null]'),
      422,
      ' "" is invalid: patch: Invalid value: "[\\"c\\"]": couldn\'t get version/kind; json parse error: json: cannot unmarshal array into Go value of type struct { APIVersion string "json:\\"apiVersion,omitempty\\""; Kind string "json:\\"kind,omitempty\\"" }',
      'Invalid',
    );
  });
});

void describe('applyMergePatch: evanphx/json-patch v4 behaviour', () => {
  void it('answers a body that is not JSON with 400 "Invalid JSON Patch"', () => {
    assertStatus(() => applyMergePatch({}, '{"a":'), 400, 'Invalid JSON Patch', 'BadRequest');
    assertStatus(() => applyMergePatch({}, ''), 400, 'Invalid JSON Patch');
  });
  void it('prunes nulls from added values, arrays included', () => {
    assert.deepEqual(merge({}, { a: [1, null, { b: null, c: 2 }] }), { a: [1, { c: 2 }] });
    assert.deepEqual(merge({ a: 'x' }, { a: { b: null, c: { d: null } } }), { a: { c: {} } });
    assert.deepEqual(merge({ a: [0] }, { a: [null] }), { a: [] });
    assert.deepEqual(merge({ a: null }, { a: { b: null } }), { a: {} });
  });
  void it('keeps nulls in an array replacing an object', () => {
    assert.deepEqual(merge({ a: { b: 1 } }, { a: [1, null] }), { a: [1, null] });
  });
  void it('merges nested objects and leaves the input alone', () => {
    const doc = { metadata: { labels: { a: '1', b: '2' }, name: 'x' } };
    assert.deepEqual(merge(doc, { metadata: { labels: { a: null, c: '3' } } }), { metadata: { labels: { b: '2', c: '3' }, name: 'x' } });
    assert.deepEqual(doc, { metadata: { labels: { a: '1', b: '2' }, name: 'x' } });
  });
  void it('treats a "__proto__" member as data', () => {
    const out = applyMergePatch({}, '{"__proto__":{"polluted":true}}');
    assert.deepEqual(Object.keys(out), ['__proto__']);
    assert.equal(({} as Record<string, unknown>).polluted, undefined);
  });
});

// ---------------------------------------------------------------------------
// Strategic merge patch: a pod-like schema
// ---------------------------------------------------------------------------

const str: Schema = { type: 'string' };
const podDefs: Definitions = {
  'test.Pod': {
    type: 'object',
    properties: {
      apiVersion: str,
      kind: str,
      metadata: ref('test.ObjectMeta'),
      spec: ref('test.PodSpec'),
      status: ref('test.PodStatus'),
    },
  },
  'test.ObjectMeta': {
    type: 'object',
    properties: {
      name: str,
      labels: { type: 'object', additionalProperties: str },
      finalizers: { type: 'array', items: str, 'x-kubernetes-patch-strategy': 'merge' },
      ownerReferences: {
        type: 'array',
        items: { type: 'object', properties: { uid: str, name: str } },
        'x-kubernetes-patch-strategy': 'merge',
        'x-kubernetes-patch-merge-key': 'uid',
      },
    },
  },
  'test.PodSpec': {
    type: 'object',
    properties: {
      containers: {
        type: 'array',
        items: ref('test.Container'),
        'x-kubernetes-patch-strategy': 'merge',
        'x-kubernetes-patch-merge-key': 'name',
      },
      tolerations: { type: 'array', items: { type: 'object', properties: { key: str, value: str } } },
      nodeSelector: { type: 'object', additionalProperties: str },
      volumes: {
        type: 'array',
        items: { type: 'object', properties: { name: str, emptyDir: { type: 'object' }, hostPath: { type: 'object' } } },
        'x-kubernetes-patch-strategy': 'merge,retainKeys',
        'x-kubernetes-patch-merge-key': 'name',
      },
      updateStrategy: {
        type: 'object',
        'x-kubernetes-patch-strategy': 'retainKeys',
        properties: { type: str, rollingUpdate: { type: 'object', properties: { maxSurge: str } } },
      },
      template: { type: 'object', 'x-kubernetes-patch-strategy': 'replace', 'x-kubernetes-preserve-unknown-fields': true },
    },
  },
  'test.Container': {
    type: 'object',
    properties: {
      name: str,
      image: str,
      args: { type: 'array', items: str },
      ports: {
        type: 'array',
        items: { type: 'object', properties: { containerPort: { type: 'integer' }, protocol: str, name: str } },
        'x-kubernetes-patch-strategy': 'merge',
        'x-kubernetes-patch-merge-key': 'containerPort',
      },
      env: {
        type: 'array',
        items: { type: 'object', properties: { name: str, value: str } },
        'x-kubernetes-patch-strategy': 'merge',
        'x-kubernetes-patch-merge-key': 'name',
      },
    },
  },
  'test.PodStatus': {
    type: 'object',
    properties: {
      phase: str,
      conditions: {
        type: 'array',
        items: { type: 'object', properties: { type: str, status: str, reason: str } },
        'x-kubernetes-patch-strategy': 'merge',
        'x-kubernetes-patch-merge-key': 'type',
      },
    },
  },
};
const podSchema = ref('test.Pod');

function smp(doc: unknown, patch: unknown): JsonObject {
  return applyStrategicMergePatch(doc as JsonObject, JSON.stringify(patch), podSchema, podDefs);
}

function pod(): JsonObject {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'p', labels: { app: 'web', tier: 'front' }, finalizers: ['a', 'b'] },
    spec: {
      containers: [
        { name: 'app', image: 'app:1', args: ['--x'], ports: [{ containerPort: 80 }, { containerPort: 443, protocol: 'TCP' }] },
        { name: 'sidecar', image: 'side:1' },
      ],
      tolerations: [{ key: 'k1' }, { key: 'k2' }],
      nodeSelector: { zone: 'a' },
    },
    status: { phase: 'Pending', conditions: [{ type: 'Ready', status: 'False' }, { type: 'Scheduled', status: 'True' }] },
  };
}

void describe('applyStrategicMergePatch: lists merged by key', () => {
  void it('merges containers by name and appends new ones', () => {
    const out = smp(pod(), { spec: { containers: [{ name: 'app', image: 'app:2' }, { name: 'new', image: 'new:1' }] } });
    assert.deepEqual((out.spec as JsonObject).containers, [
      { name: 'app', image: 'app:2', args: ['--x'], ports: [{ containerPort: 80 }, { containerPort: 443, protocol: 'TCP' }] },
      { name: 'new', image: 'new:1' },
      { name: 'sidecar', image: 'side:1' },
    ]);
  });
  void it('merges nested ports by containerPort', () => {
    const out = smp(pod(), { spec: { containers: [{ name: 'app', ports: [{ containerPort: 443, name: 'https' }, { containerPort: 8080 }] }] } });
    const app = ((out.spec as JsonObject).containers as JsonObject[])[0]!;
    assert.deepEqual(app.ports, [{ containerPort: 80 }, { containerPort: 443, protocol: 'TCP', name: 'https' }, { containerPort: 8080 }]);
  });
  void it('merges conditions by type', () => {
    const out = smp(pod(), { status: { conditions: [{ type: 'Ready', status: 'True' }] } });
    assert.deepEqual((out.status as JsonObject).conditions, [
      { type: 'Ready', status: 'True' },
      { type: 'Scheduled', status: 'True' },
    ]);
  });
  void it('deletes list items with $patch: delete', () => {
    const out = smp(pod(), { spec: { containers: [{ name: 'sidecar', $patch: 'delete' }] } });
    assert.deepEqual(
      ((out.spec as JsonObject).containers as JsonObject[]).map((c) => c.name),
      ['app'],
    );
  });
  void it('replaces a merging list with $patch: replace', () => {
    const out = smp(pod(), { status: { conditions: [{ $patch: 'replace' }, { type: 'Initialized', status: 'True' }] } });
    assert.deepEqual((out.status as JsonObject).conditions, [{ type: 'Initialized', status: 'True' }]);
    const empty = smp(pod(), { status: { conditions: [{ $patch: 'replace' }] } });
    assert.deepEqual((empty.status as JsonObject).conditions, []);
  });
  void it('refuses $patch: merge in a list and an unknown directive (500 with the text of Kubernetes)', () => {
    assertStatus(() => smp(pod(), { status: { conditions: [{ type: 'Ready', $patch: 'merge' }] } }), 500, 'merging lists cannot yet be specified in the patch');
    const err = assertStatus(
      () => smp(pod(), { status: { conditions: [{ type: 'Ready', $patch: 'bogus' }] } }),
      500,
      'unknown patch type: bogus in map: map[$patch:bogus type:Ready]',
    );
    assert.equal(err.status.reason, undefined);
  });
  void it('requires the merge key (500 "does not contain declared merge key")', () => {
    assertStatus(
      () => smp(pod(), { spec: { containers: [{ image: 'x', args: ['a', 'b'] }] } }),
      500,
      'map: map[args:[a b] image:x] does not contain declared merge key: name',
    );
    assertStatus(
      () => smp(pod(), { spec: { containers: [{ $patch: 'delete' }] } }),
      500,
      'map: map[$patch:delete] does not contain declared merge key: name',
    );
  });
  void it('adds a list the original does not have, without its directives', () => {
    const out = smp({ metadata: { name: 'x' } }, {
      metadata: { ownerReferences: [{ uid: 'u1', name: 'a' }, { uid: 'u2', $patch: 'delete' }] },
    });
    assert.deepEqual((out.metadata as JsonObject).ownerReferences, [{ uid: 'u1', name: 'a' }]);
  });
});

void describe('applyStrategicMergePatch: primitive lists and maps', () => {
  void it('merges a primitive list with merge strategy as a set, in the order Go gives', () => {
    // patch items keep the patch's order; an item the live list lacks sorts before live-only items
    const out = smp(pod(), { metadata: { finalizers: ['c', 'a'] } });
    assert.deepEqual((out.metadata as JsonObject).finalizers, ['c', 'a', 'b']);
    const dup = smp(pod(), { metadata: { finalizers: ['b', 'b', 'a'] } });
    assert.deepEqual((dup.metadata as JsonObject).finalizers, ['b', 'a']);
  });
  void it('deletes from a primitive list with $deleteFromPrimitiveList', () => {
    const out = smp(pod(), { metadata: { '$deleteFromPrimitiveList/finalizers': ['a', 'zz'] } });
    assert.deepEqual((out.metadata as JsonObject).finalizers, ['b']);
  });
  void it('deletes from an atomic list too, and never creates a list', () => {
    const out = smp(pod(), { spec: { containers: [{ name: 'app', '$deleteFromPrimitiveList/args': ['--x'] }] } });
    assert.deepEqual(((out.spec as JsonObject).containers as JsonObject[])[0]!.args, []);
    const none = smp({ metadata: {} }, { metadata: { '$deleteFromPrimitiveList/finalizers': ['a'] } });
    assert.deepEqual(none.metadata, {});
  });
  void it('orders a list with $setElementOrder', () => {
    const out = smp(pod(), { metadata: { '$setElementOrder/finalizers': ['b', 'c', 'a'], finalizers: ['c'] } });
    assert.deepEqual((out.metadata as JsonObject).finalizers, ['b', 'c', 'a']);
    const conds = smp(pod(), { status: { '$setElementOrder/conditions': [{ type: 'Scheduled' }, { type: 'Ready' }] } });
    assert.deepEqual(
      ((conds.status as JsonObject).conditions as JsonObject[]).map((c) => c.type),
      ['Scheduled', 'Ready'],
    );
  });
  void it('replaces a list without a merge strategy', () => {
    const out = smp(pod(), { spec: { tolerations: [{ key: 'k3' }] } });
    assert.deepEqual((out.spec as JsonObject).tolerations, [{ key: 'k3' }]);
  });
  void it('merges maps and deletes keys with null', () => {
    const out = smp(pod(), { metadata: { labels: { app: null, env: 'prod' } } });
    assert.deepEqual((out.metadata as JsonObject).labels, { tier: 'front', env: 'prod' });
  });
  void it('replaces a map with $patch: replace and empties it with $patch: delete', () => {
    const out = smp(pod(), { metadata: { labels: { $patch: 'replace', only: 'me' } } });
    assert.deepEqual((out.metadata as JsonObject).labels, { only: 'me' });
    const del = smp(pod(), { spec: { nodeSelector: { $patch: 'delete' } } });
    assert.deepEqual((del.spec as JsonObject).nodeSelector, {});
  });
  void it('drops a new map holding $patch, and nulls inside new values', () => {
    const out = smp({ spec: {} }, { spec: { nodeSelector: { $patch: 'delete' }, updateStrategy: { type: 'Recreate', rollingUpdate: null } } });
    assert.deepEqual(out.spec, { updateStrategy: { type: 'Recreate' } });
  });
  void it('replaces a field with the replace strategy', () => {
    const out = smp({ spec: { template: { a: 1, b: { c: 2 } } } }, { spec: { template: { b: { d: 3 } } } });
    assert.deepEqual((out.spec as JsonObject).template, { b: { d: 3 } });
  });
  void it('clears fields with $retainKeys', () => {
    const doc = { spec: { updateStrategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: '1' } } } };
    const out = smp(doc, { spec: { updateStrategy: { $retainKeys: ['type'], type: 'Recreate' } } });
    assert.deepEqual((out.spec as JsonObject).updateStrategy, { type: 'Recreate' });
    const vols = smp(
      { spec: { volumes: [{ name: 'v', emptyDir: {} }] } },
      { spec: { volumes: [{ name: 'v', $retainKeys: ['name', 'hostPath'], hostPath: { path: '/x' } }] } },
    );
    assert.deepEqual((vols.spec as JsonObject).volumes, [{ name: 'v', hostPath: { path: '/x' } }]);
  });
  void it('refuses malformed directives with 400', () => {
    const withStrategy = { spec: { updateStrategy: { type: 'RollingUpdate' } } };
    assertStatus(
      () => smp(withStrategy, { spec: { updateStrategy: { $retainKeys: 'type' } } }),
      400,
      'invalid patch format of retainKeys',
      'BadRequest',
    );
    assertStatus(() => smp(withStrategy, { spec: { updateStrategy: { $retainKeys: ['type'], rollingUpdate: {} } } }), 400, 'invalid patch format of retainKeys');
    // a value the original lacks is taken as it is: its directives are not examined
    assert.deepEqual(smp({ spec: {} }, { spec: { updateStrategy: { $retainKeys: 'type' } } }), { spec: { updateStrategy: { $retainKeys: 'type' } } });
    assertStatus(() => smp(pod(), { metadata: { $deleteFromPrimitiveList: ['a'] } }), 400, 'invalid patch format of primitive list');
    assertStatus(() => smp(pod(), { metadata: { '$deleteFromPrimitiveListX/finalizers': ['a'] } }), 400, 'invalid patch format of primitive list');
    assertStatus(() => smp(pod(), { metadata: { $setElementOrder: ['a'] } }), 400, 'invalid patch format of setElementOrder list');
  });
  void it('answers other directive misuse with 500 and the text of Kubernetes', () => {
    assertStatus(
      () => smp(pod(), { metadata: { '$setElementOrder/finalizers': 'a' } }),
      500,
      'expected a []interface {}, but received a string',
    );
    assertStatus(
      () => smp(pod(), { metadata: { '$setElementOrder/finalizers': ['a', 'b'], finalizers: ['b', 'a'] } }),
      500,
      "The order in patch list:\n[b a]\n doesn't match $setElementOrder list:\n[a b]\n",
    );
    assertStatus(() => smp(pod(), { metadata: { labels: { $patch: 5 } } }), 500, 'unknown patch type: %!s(int64=5) in map: map[$patch:5]');
    assertStatus(
      () => smp(pod(), { metadata: { finalizers: [1] } }),
      500,
      'list element types are not identical: [[a b] [1]]',
    );
  });
  void it('answers a list of lists with the generic 422', () => {
    assertStatus(() => smp({ metadata: { finalizers: [['a']] } }, { metadata: { finalizers: [['b']] } }), 422, GENERIC_422, 'Invalid');
  });
  void it('merges fields the schema does not know like a merge patch', () => {
    const out = smp(
      { extra: { a: 1, list: [1, 2], nested: { x: 1 } } },
      { extra: { b: 2, list: [3], nested: { x: null, y: 2 } }, other: 'new' },
    );
    assert.deepEqual(out, { extra: { a: 1, b: 2, list: [3], nested: { y: 2 } }, other: 'new' });
  });
  void it('replaces values of a different type', () => {
    assert.deepEqual(smp({ metadata: { labels: 'x' } }, { metadata: { labels: { a: 'b', c: null } } }), { metadata: { labels: { a: 'b' } } });
    assert.deepEqual(smp({ a: [1] }, { a: 'x' }), { a: 'x' });
  });
  void it('accepts a decoded patch, and leaves its inputs alone', () => {
    const doc = pod();
    const patch = { metadata: { labels: { app: null } } };
    const out = applyStrategicMergePatch(doc, patch, podSchema, podDefs);
    assert.deepEqual((out.metadata as JsonObject).labels, { tier: 'front' });
    assert.deepEqual(doc, pod());
    assert.deepEqual(patch, { metadata: { labels: { app: null } } });
  });
  void it('answers bodies that do not decode as an object with 400', () => {
    const run = (body: string) => applyStrategicMergePatch(pod(), body, podSchema, podDefs);
    assertStatus(() => run('{"metadata":'), 400, 'unexpected end of JSON input', 'BadRequest');
    assertStatus(() => run('[1]'), 400, 'json: cannot unmarshal array into Go value of type map[string]interface {}');
    assertStatus(() => run('"x"'), 400, 'json: cannot unmarshal string into Go value of type map[string]interface {}');
    assert.deepEqual(run('null'), pod());
  });
  void it('empties the document with a top-level $patch: delete', () => {
    assert.deepEqual(smp(pod(), { $patch: 'delete' }), {});
  });
});

// ---------------------------------------------------------------------------
// Strategic merge patch: cases of Kubernetes' patch_test.go (MergeItem schema)
// ---------------------------------------------------------------------------

const mergeItemDefs: Definitions = {
  mergeItem: {
    type: 'object',
    properties: {
      name: str,
      value: str,
      other: str,
      mergingList: { type: 'array', items: ref('mergeItem'), 'x-kubernetes-patch-strategy': 'merge', 'x-kubernetes-patch-merge-key': 'name' },
      nonMergingList: { type: 'array', items: ref('mergeItem') },
      mergingIntList: { type: 'array', items: { type: 'integer' }, 'x-kubernetes-patch-strategy': 'merge' },
      nonMergingIntList: { type: 'array', items: { type: 'integer' } },
      mergeItemPtr: { type: 'array', items: ref('mergeItem'), 'x-kubernetes-patch-strategy': 'merge', 'x-kubernetes-patch-merge-key': 'name' },
      simpleMap: { type: 'object', additionalProperties: str },
      replacingItem: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true, 'x-kubernetes-patch-strategy': 'replace' },
      retainKeysMap: { ...ref('retainKeysMergeItem'), 'x-kubernetes-patch-strategy': 'retainKeys' },
      retainKeysMergingList: {
        type: 'array',
        items: ref('mergeItem'),
        'x-kubernetes-patch-strategy': 'merge,retainKeys',
        'x-kubernetes-patch-merge-key': 'name',
      },
    },
  },
  retainKeysMergeItem: {
    type: 'object',
    properties: {
      name: str,
      value: str,
      other: str,
      simpleMap: { type: 'object', additionalProperties: str },
      mergingIntList: { type: 'array', items: { type: 'integer' }, 'x-kubernetes-patch-strategy': 'merge' },
      mergingList: { type: 'array', items: ref('mergeItem'), 'x-kubernetes-patch-strategy': 'merge', 'x-kubernetes-patch-merge-key': 'name' },
      nonMergingList: { type: 'array', items: ref('mergeItem') },
    },
  },
};

interface Case {
  description: string;
  original?: string;
  twoWay?: string;
  modified?: string;
  twoWayResult?: string;
  current?: string;
  threeWay?: string;
  result?: string;
  expectedError?: string;
}

function y(text: string | undefined): JsonObject {
  return (YAML.parse(text ?? '{}') as JsonObject | null) ?? {};
}

function mergeItemPatch(original: JsonObject, patch: JsonObject): JsonObject {
  return applyStrategicMergePatch(original, JSON.stringify(patch), ref('mergeItem'), mergeItemDefs);
}

function runCases(cases: Case[]): void {
  for (const c of cases) {
    void it(c.description, () => {
      if (c.twoWay !== undefined) {
        if (c.expectedError !== undefined) {
          assert.throws(() => mergeItemPatch(y(c.original), y(c.twoWay)), (e: unknown) => e instanceof StatusError && e.message.includes(c.expectedError!));
        } else {
          assert.deepEqual(mergeItemPatch(y(c.original), y(c.twoWay)), y(c.twoWayResult ?? c.modified), 'two-way');
        }
      }
      if (c.threeWay !== undefined && c.result !== undefined) {
        assert.deepEqual(mergeItemPatch(y(c.current), y(c.threeWay)), y(c.result), 'three-way');
      }
    });
  }
}

void describe('applyStrategicMergePatch: custom cases of patch_test.go', () => {
  runCases([
    { description: 'unique scalars when merging lists', original: 'mergingIntList: [1, 2]', twoWay: 'mergingIntList: [2, 3]', modified: 'mergingIntList: [1, 2, 3]' },
    { description: 'delete map from nested map', original: 'simpleMap: {key1: 1, key2: 1}', twoWay: 'simpleMap: {$patch: delete}', modified: 'simpleMap: {}' },
    { description: 'delete all items from merging list', original: 'mergingList: [{name: 1}, {name: 2}]', twoWay: 'mergingList: [{$patch: replace}]', modified: 'mergingList: []' },
    { description: 'merge empty merging lists', original: 'mergingList: []', twoWay: 'mergingList: []', modified: 'mergingList: []' },
    { description: 'delete all keys from map', original: '{name: 1, value: 1}', twoWay: '{$patch: replace}', modified: '{}' },
    { description: 'add key and delete all keys from map', original: '{name: 1, value: 1}', twoWay: '{other: a, $patch: replace}', modified: '{other: a}' },
    {
      description: 'delete all duplicate entries in a merging list',
      original: 'mergingList: [{name: 1}, {name: 1}, {name: 2, value: a}, {name: 3}, {name: 3}]',
      twoWay: 'mergingList: [{name: 1, $patch: delete}, {name: 3, $patch: delete}]',
      modified: 'mergingList: [{name: 2, value: a}]',
    },
    { description: 'retainKeys map can add a field when no retainKeys directive present', original: 'retainKeysMap: {name: foo}', twoWay: 'retainKeysMap: {value: bar}', modified: 'retainKeysMap: {name: foo, value: bar}' },
    { description: 'retainKeys map can delete a field when no retainKeys directive present', original: 'retainKeysMap: {name: foo, value: a}', twoWay: 'retainKeysMap: {value: null}', modified: 'retainKeysMap: {name: foo}' },
    { description: 'retainKeys map merge an empty map', original: 'retainKeysMap: {name: foo, value: a}', twoWay: 'retainKeysMap: {}', modified: 'retainKeysMap: {name: foo, value: a}' },
    {
      description: 'retainKeys list can change a field when no retainKeys directive present',
      original: 'retainKeysMergingList: [{name: bar}, {name: foo, value: a}]',
      twoWay: 'retainKeysMergingList: [{name: foo, value: b}]',
      modified: 'retainKeysMergingList: [{name: bar}, {name: foo, value: b}]',
    },
    {
      description: 'preserve the order from the patch in a merging list',
      original: 'mergingList: [{name: 1}, {name: 2, value: b}, {name: 3}]',
      twoWay: 'mergingList: [{name: 3, value: c}, {name: 1, value: a}, {name: 2, other: x}]',
      modified: 'mergingList: [{name: 3, value: c}, {name: 1, value: a}, {name: 2, value: b, other: x}]',
    },
    {
      description: 'preserve the order from the patch in a merging list 2',
      original: 'mergingList: [{name: 1}, {name: 2, value: b}, {name: 3}]',
      twoWay: 'mergingList: [{name: 3, value: c}, {name: 1, value: a}]',
      modified: 'mergingList: [{name: 2, value: b}, {name: 3, value: c}, {name: 1, value: a}]',
    },
    { description: 'preserve the order from the patch in a merging int list', original: 'mergingIntList: [1, 2, 3]', twoWay: 'mergingIntList: [3, 1, 2]', modified: 'mergingIntList: [3, 1, 2]' },
    { description: 'preserve the order from the patch in a merging int list 2', original: 'mergingIntList: [1, 2, 3]', twoWay: 'mergingIntList: [3, 1]', modified: 'mergingIntList: [2, 3, 1]' },
    {
      description: '$setElementOrder contains item that is not present in the list to be merged',
      original: 'mergingList: [{name: 1}, {name: 3}]',
      twoWay: '{$setElementOrder/mergingList: [{name: 3}, {name: 2}, {name: 1}], mergingList: [{name: 3, value: 3}, {name: 1, value: 1}]}',
      modified: 'mergingList: [{name: 3, value: 3}, {name: 1, value: 1}]',
    },
    {
      description: '$setElementOrder contains item that is not present in the int list to be merged',
      original: 'mergingIntList: [1, 3]',
      twoWay: '$setElementOrder/mergingIntList: [3, 2, 1]',
      modified: 'mergingIntList: [3, 1]',
    },
    {
      description: 'should check if order in $setElementOrder and patch list match',
      original: 'mergingList: [{name: 1}, {name: 3}, {name: 2}]',
      twoWay: '{$setElementOrder/mergingList: [{name: 1}, {name: 2}, {name: 3}], mergingList: [{name: 3, value: 3}, {name: 1, value: 1}]}',
      expectedError: "doesn't match",
    },
    {
      description: 'should check if order in $setElementOrder and patch int list match',
      original: 'mergingIntList: [1, 3, 2]',
      twoWay: '{$setElementOrder/mergingIntList: [1, 2, 3], mergingIntList: [3, 1]}',
      expectedError: "doesn't match",
    },
    { description: 'missing merge key should error out', original: 'mergingList: [{name: 1, value: a}]', twoWay: 'mergingList: [{value: b}]', expectedError: 'does not contain declared merge key' },
    { description: '$deleteFromPrimitiveList of nonexistent item should not add the item', original: 'mergingIntList: [1, 2]', twoWay: '$deleteFromPrimitiveList/mergingIntList: [3]', modified: 'mergingIntList: [1, 2]' },
    { description: '$deleteFromPrimitiveList on empty primitive list should not add the item', original: 'mergingIntList:', twoWay: '$deleteFromPrimitiveList/mergingIntList: [3]', modified: 'mergingIntList:' },
    { description: '$deleteFromPrimitiveList on nonexistent primitive list should not add the list', original: 'foo: [bar]', twoWay: '$deleteFromPrimitiveList/mergingIntList: [3]', modified: 'foo: [bar]' },
    { description: '$deleteFromPrimitiveList should delete item from a list with merge patch strategy', original: 'mergingIntList: [1, 2, 3]', twoWay: '$deleteFromPrimitiveList/mergingIntList: [2]', modified: 'mergingIntList: [1, 3]' },
    { description: '$deleteFromPrimitiveList should delete item from a list without merge patch strategy', original: 'nonMergingIntList: [1, 2, 3]', twoWay: '$deleteFromPrimitiveList/nonMergingIntList: [2]', modified: 'nonMergingIntList: [1, 3]' },
  ]);
});

void describe('applyStrategicMergePatch: raw cases of patch_test.go', () => {
  runCases([
    {
      description: 'nested patch merge with empty list',
      original: 'name: hi',
      current: 'name: hi\nmergingList: [{name: hello2}]',
      twoWay: 'mergingList: [{name: hello}, {$patch: delete, name: doesntexist}]',
      twoWayResult: 'name: hi\nmergingList: [{name: hello}]',
      threeWay: '{$setElementOrder/mergingList: [{name: hello}, {name: doesntexist}], mergingList: [{name: hello}, {$patch: delete, name: doesntexist}]}',
      result: 'name: hi\nmergingList: [{name: hello}, {name: hello2}]',
    },
    {
      description: 'delete items in lists of scalars',
      original: 'mergingIntList: [1, 2, 3]',
      twoWay: '{$setElementOrder/mergingIntList: [1, 2], $deleteFromPrimitiveList/mergingIntList: [3]}',
      modified: 'mergingIntList: [1, 2]',
      current: 'mergingIntList: [1, 2, 3, 4]',
      threeWay: '{$setElementOrder/mergingIntList: [1, 2], $deleteFromPrimitiveList/mergingIntList: [3]}',
      result: 'mergingIntList: [1, 2, 4]',
    },
    {
      description: 'delete all duplicate items in lists of scalars',
      original: 'mergingIntList: [1, 2, 3, 3]',
      twoWay: '{$setElementOrder/mergingIntList: [1, 2], $deleteFromPrimitiveList/mergingIntList: [3]}',
      modified: 'mergingIntList: [1, 2]',
      current: 'mergingIntList: [1, 2, 3, 3, 4]',
      threeWay: '{$setElementOrder/mergingIntList: [1, 2], $deleteFromPrimitiveList/mergingIntList: [3]}',
      result: 'mergingIntList: [1, 2, 4]',
    },
    {
      description: 'add and delete items in lists of scalars',
      original: 'mergingIntList: [1, 2, 3]',
      twoWay: '{$setElementOrder/mergingIntList: [1, 2, 4], $deleteFromPrimitiveList/mergingIntList: [3], mergingIntList: [4]}',
      modified: 'mergingIntList: [1, 2, 4]',
      current: 'mergingIntList: [1, 2, 3, 4]',
      threeWay: '{$setElementOrder/mergingIntList: [1, 2, 4], $deleteFromPrimitiveList/mergingIntList: [3]}',
      result: 'mergingIntList: [1, 2, 4]',
    },
    {
      description: 'merge lists of maps',
      original: 'mergingList: [{name: 1}, {name: 2, value: 2}]',
      twoWay: '{$setElementOrder/mergingList: [{name: 4}, {name: 1}, {name: 2}, {name: 3}], mergingList: [{name: 4, value: 4}, {name: 3, value: 3}]}',
      modified: 'mergingList: [{name: 4, value: 4}, {name: 1}, {name: 2, value: 2}, {name: 3, value: 3}]',
      current: 'mergingList: [{name: 1, other: a}, {name: 2, value: 2, other: b}]',
      threeWay: '{$setElementOrder/mergingList: [{name: 4}, {name: 1}, {name: 2}, {name: 3}], mergingList: [{name: 4, value: 4}, {name: 3, value: 3}]}',
      result: 'mergingList: [{name: 4, value: 4}, {name: 1, other: a}, {name: 2, value: 2, other: b}, {name: 3, value: 3}]',
    },
    {
      description: 'merge lists of maps with conflict',
      current: 'mergingList: [{name: 1, other: a}, {name: 2, value: 3, other: b}]',
      threeWay: '{$setElementOrder/mergingList: [{name: 1}, {name: 2}, {name: 3}], mergingList: [{name: 2, value: 2}, {name: 3, value: 3}]}',
      result: 'mergingList: [{name: 1, other: a}, {name: 2, value: 2, other: b}, {name: 3, value: 3}]',
    },
    {
      description: 'add field to map in merging list with conflict',
      current: 'mergingList: [{name: 1, other: a}, {name: 3, value: 2, other: b}]',
      threeWay: '{$setElementOrder/mergingList: [{name: 1}, {name: 2}], mergingList: [{name: 1, value: 1}, {name: 2, value: 2}]}',
      result: 'mergingList: [{name: 1, value: 1, other: a}, {name: 2, value: 2}, {name: 3, value: 2, other: b}]',
    },
    {
      description: 'delete map from merging list',
      original: 'mergingList: [{name: 1}, {name: 2}]',
      twoWay: '{$setElementOrder/mergingList: [{name: 2}], mergingList: [{name: 1, $patch: delete}]}',
      modified: 'mergingList: [{name: 2}]',
      current: 'mergingList: [{name: 1}, {name: 2, other: b}]',
      threeWay: '{$setElementOrder/mergingList: [{name: 2}], mergingList: [{name: 1, $patch: delete}]}',
      result: 'mergingList: [{name: 2, other: b}]',
    },
    {
      description: 'delete missing map from merging list with conflict',
      current: 'mergingList: [{name: 3, other: a}]',
      threeWay: '{$setElementOrder/mergingList: [{name: 2}], mergingList: [{name: 2}, {name: 1, $patch: delete}]}',
      result: 'mergingList: [{name: 2}, {name: 3, other: a}]',
    },
    {
      description: 'add map and delete map from merging list',
      original: 'mergingList: [{name: 1}, {name: 2}]',
      twoWay: '{$setElementOrder/mergingList: [{name: 2}, {name: 3}], mergingList: [{name: 3}, {name: 1, $patch: delete}]}',
      modified: 'mergingList: [{name: 2}, {name: 3}]',
      current: 'mergingList: [{name: 1}, {name: 2, other: b}, {name: 4, other: c}]',
      threeWay: '{$setElementOrder/mergingList: [{name: 2}, {name: 3}], mergingList: [{name: 3}, {name: 1, $patch: delete}]}',
      result: 'mergingList: [{name: 2, other: b}, {name: 4, other: c}, {name: 3}]',
    },
    {
      description: 'add map and delete map from merging list with conflict',
      current: 'mergingList: [{name: 1, other: a}, {name: 4, other: c}]',
      threeWay: '{$setElementOrder/mergingList: [{name: 2}, {name: 3}], mergingList: [{name: 2}, {name: 3}, {name: 1, $patch: delete}]}',
      result: 'mergingList: [{name: 4, other: c}, {name: 2}, {name: 3}]',
    },
    {
      description: 'delete field from map in merging list',
      current: 'mergingList: [{name: 1, value: 1, other: a}, {name: 2, value: 2, other: b}]',
      threeWay: '{$setElementOrder/mergingList: [{name: 1}, {name: 2}], mergingList: [{name: 1, value: null}]}',
      result: 'mergingList: [{name: 1, other: a}, {name: 2, value: 2, other: b}]',
    },
    {
      description: 'replace non merging list nested in merging list with deletion conflict',
      current: 'mergingList: [{name: 1, other: a, nonMergingList: [{name: 2, value: 2}]}, {name: 2, other: b}]',
      threeWay: '{$setElementOrder/mergingList: [{name: 1}, {name: 2}], mergingList: [{name: 1, nonMergingList: [{name: 1, value: 1}]}]}',
      result: 'mergingList: [{name: 1, other: a, nonMergingList: [{name: 1, value: 1}]}, {name: 2, other: b}]',
    },
    {
      description: 'add field to map in merging list nested in merging list with value conflict',
      current: 'mergingList: [{name: 1, other: a, mergingList: [{name: 1, value: a, other: c}, {name: 2, value: b, other: d}]}, {name: 2, other: b}]',
      threeWay:
        '{$setElementOrder/mergingList: [{name: 1}, {name: 2}], mergingList: [{$setElementOrder/mergingList: [{name: 1}, {name: 2}], name: 1, mergingList: [{name: 1, value: 1}, {name: 2, value: 2}]}]}',
      result: 'mergingList: [{name: 1, other: a, mergingList: [{name: 1, value: 1, other: c}, {name: 2, value: 2, other: d}]}, {name: 2, other: b}]',
    },
    {
      description: 'add field to map in merging list nested in merging list with deletion conflict (reordered)',
      current: 'mergingList: [{name: 1, other: a, mergingList: [{name: 2, value: 2, other: d}]}, {name: 2, other: b}]',
      threeWay:
        '{$setElementOrder/mergingList: [{name: 1}, {name: 2}], mergingList: [{$setElementOrder/mergingList: [{name: 2}, {name: 1}], name: 1, mergingList: [{name: 1, value: 1}]}]}',
      result: 'mergingList: [{name: 1, other: a, mergingList: [{name: 2, value: 2, other: d}, {name: 1, value: 1}]}, {name: 2, other: b}]',
    },
    {
      description: 'add map to merging list by pointer',
      current: 'mergeItemPtr: [{name: 1, other: a}, {name: 3}]',
      threeWay: '{$setElementOrder/mergeItemPtr: [{name: 1}, {name: 2}], mergeItemPtr: [{name: 2}]}',
      result: 'mergeItemPtr: [{name: 1, other: a}, {name: 2}, {name: 3}]',
    },
    {
      description: 'add map to merging list by pointer with conflict',
      current: 'mergeItemPtr: [{name: 3}]',
      threeWay: '{$setElementOrder/mergeItemPtr: [{name: 1}, {name: 2}], mergeItemPtr: [{name: 1}, {name: 2}]}',
      result: 'mergeItemPtr: [{name: 1}, {name: 2}, {name: 3}]',
    },
    {
      description: 'merge lists of scalars',
      current: 'mergingIntList: [1, 2, 4]',
      threeWay: '{$setElementOrder/mergingIntList: [1, 2, 3], mergingIntList: [3]}',
      result: 'mergingIntList: [1, 2, 3, 4]',
    },
    {
      description: 'add an item in a list of primitives and preserve order',
      original: 'mergingIntList: [1, 2]',
      twoWay: '{$setElementOrder/mergingIntList: [3, 1, 2], mergingIntList: [3]}',
      modified: 'mergingIntList: [3, 1, 2]',
      current: 'mergingIntList: [1, 4, 2]',
      threeWay: '{$setElementOrder/mergingIntList: [3, 1, 2], mergingIntList: [3]}',
      result: 'mergingIntList: [3, 1, 4, 2]',
    },
    {
      description: 'delete an item in a list of primitives and preserve order',
      current: 'mergingIntList: [1, 2, 3]',
      threeWay: '{$setElementOrder/mergingIntList: [2, 1], $deleteFromPrimitiveList/mergingIntList: [3]}',
      result: 'mergingIntList: [2, 1]',
    },
    {
      description: 'add multiple items in a list and preserve order',
      current: 'mergingList: [{name: 1, other: a}, {name: 2, value: 2, other: b}]',
      threeWay: '{$setElementOrder/mergingList: [{name: 1}, {name: 4}, {name: 2}, {name: 3}], mergingList: [{name: 4, value: 4}, {name: 3, value: 3}]}',
      result: 'mergingList: [{name: 1, other: a}, {name: 4, value: 4}, {name: 2, value: 2, other: b}, {name: 3, value: 3}]',
    },
    {
      description: 'delete an item in a list and preserve order',
      current: 'mergingList: [{name: 1, other: a}, {name: 2, value: 2, other: b}, {name: 3, value: 3}]',
      threeWay: '{$setElementOrder/mergingList: [{name: 2}, {name: 1}], mergingList: [{name: 3, $patch: delete}]}',
      result: 'mergingList: [{name: 2, value: 2, other: b}, {name: 1, other: a}]',
    },
    {
      description: 'change an item in a list and preserve order',
      current: 'mergingList: [{name: 1, other: a}, {name: 2, value: 2, other: b}, {name: 3, value: 3}]',
      threeWay: '{$setElementOrder/mergingList: [{name: 2}, {name: 3}, {name: 1}], mergingList: [{name: 3, value: x}]}',
      result: 'mergingList: [{name: 2, value: 2, other: b}, {name: 3, value: x}, {name: 1, other: a}]',
    },
    {
      description: 'add and delete an item in a list and preserve order',
      current: 'mergingList: [{name: 1, other: a}, {name: 2, value: 2, other: b}, {name: 3, value: 3}]',
      threeWay: '{$setElementOrder/mergingList: [{name: 4}, {name: 2}, {name: 1}], mergingList: [{name: 4, value: 4}, {name: 3, $patch: delete}]}',
      result: 'mergingList: [{name: 4, value: 4}, {name: 2, value: 2, other: b}, {name: 1, other: a}]',
    },
    {
      description: 'set elements order in a list with server-only items',
      current: 'mergingList: [{name: 1, other: a}, {name: 3, value: 3}, {name: 4, value: 4}, {name: 2, value: 2}, {name: 9}]',
      threeWay: '$setElementOrder/mergingList: [{name: 4}, {name: 2}, {name: 3}, {name: 1}]',
      result: 'mergingList: [{name: 4, value: 4}, {name: 2, value: 2}, {name: 3, value: 3}, {name: 1, other: a}, {name: 9}]',
    },
    {
      description: 'set elements order in a list with server-only items 2',
      current: 'mergingList: [{name: 1, other: a}, {name: 2, value: 2}, {name: 9}, {name: 3, value: 3}, {name: 4, value: 4}]',
      threeWay: '$setElementOrder/mergingList: [{name: 2}, {name: 1}, {name: 4}, {name: 3}]',
      result: 'mergingList: [{name: 2, value: 2}, {name: 1, other: a}, {name: 9}, {name: 4, value: 4}, {name: 3, value: 3}]',
    },
    {
      description: 'set elements order in a list with server-only items 3',
      current: 'mergingList: [{name: 1, other: a}, {name: 2, value: 2}, {name: 7}, {name: 9}, {name: 8}, {name: 3, value: 3}, {name: 4, value: 4}]',
      threeWay: '$setElementOrder/mergingList: [{name: 2}, {name: 1}, {name: 4}, {name: 3}]',
      result: 'mergingList: [{name: 2, value: 2}, {name: 1, other: a}, {name: 7}, {name: 9}, {name: 8}, {name: 4, value: 4}, {name: 3, value: 3}]',
    },
    {
      description: 'add multiple items in a int list and preserve order',
      current: 'mergingIntList: [1, 2]',
      threeWay: '{$setElementOrder/mergingIntList: [1, 4, 2, 3], mergingIntList: [4, 3]}',
      result: 'mergingIntList: [1, 4, 2, 3]',
    },
    {
      description: 'add and delete an item in a int list and preserve order',
      current: 'mergingIntList: [1, 2, 3]',
      threeWay: '{$setElementOrder/mergingIntList: [4, 2, 1], mergingIntList: [4], $deleteFromPrimitiveList/mergingIntList: [3]}',
      result: 'mergingIntList: [4, 2, 1]',
    },
    {
      description: 'set elements order in a int list with server-only items 2',
      current: 'mergingIntList: [1, 2, 9, 3, 4]',
      threeWay: '$setElementOrder/mergingIntList: [2, 1, 4, 3]',
      result: 'mergingIntList: [2, 1, 9, 4, 3]',
    },
    {
      description: 'set elements order in a int list with server-only items 3',
      current: 'mergingIntList: [1, 2, 7, 9, 8, 3, 4]',
      threeWay: '$setElementOrder/mergingIntList: [2, 1, 4, 3]',
      result: 'mergingIntList: [2, 1, 7, 9, 8, 4, 3]',
    },
    {
      description: 'behavior of set element order for a merging list with duplicate',
      original: 'mergingList: [{name: 1}, {name: 2, value: dup1}, {name: 3}, {name: 2, value: dup2}, {name: 4}]',
      twoWay: '$setElementOrder/mergingList: [{name: 2}, {name: 1}, {name: 4}, {name: 3}, {name: 2}]',
      twoWayResult: 'mergingList: [{name: 2, value: dup1}, {name: 2, value: dup2}, {name: 1}, {name: 4}, {name: 3}]',
    },
    {
      description: 'behavior of set element order for a merging int list with duplicate',
      original: 'mergingIntList: [1, 2, 3, 2, 4]',
      twoWay: '$setElementOrder/mergingIntList: [2, 1, 4, 3, 2]',
      twoWayResult: 'mergingIntList: [2, 2, 1, 4, 3]',
    },
    {
      description: 'retainKeys map should clear defaulted field with conflict (discriminated union)',
      current: 'retainKeysMap: {name: type1, value: foo}',
      threeWay: 'retainKeysMap: {$retainKeys: [name, other], name: type2, other: bar}',
      result: 'retainKeysMap: {name: type2, other: bar}',
    },
    {
      description: 'retainKeys map deletes a field and clears a field',
      current: 'retainKeysMap: {name: foo, value: bar, other: a}',
      threeWay: 'retainKeysMap: {$retainKeys: [name], value: null}',
      result: 'retainKeysMap: {name: foo}',
    },
    {
      description: 'retainKeys map adds a field in a nested map',
      current: 'retainKeysMap: {name: foo, value: bar, simpleMap: {key1: a, key3: c}}',
      threeWay: 'retainKeysMap: {$retainKeys: [name, simpleMap, value], simpleMap: {key2: b}}',
      result: 'retainKeysMap: {name: foo, value: bar, simpleMap: {key1: a, key2: b, key3: c}}',
    },
    {
      description: 'retainKeys map nested non-merging list with no change with conflict',
      current: 'retainKeysMap: {name: foo, nonMergingList: [{name: a}, {name: b}, {name: c}]}',
      threeWay: 'retainKeysMap: {$retainKeys: [name, nonMergingList, value], value: bar, nonMergingList: [{name: a}, {name: b}]}',
      result: 'retainKeysMap: {name: foo, value: bar, nonMergingList: [{name: a}, {name: b}]}',
    },
    {
      description: 'retainKeys map nested merging int list with no change',
      current: 'retainKeysMap: {name: foo, mergingIntList: [1, 2, 3]}',
      threeWay: 'retainKeysMap: {$retainKeys: [mergingIntList, name, value], $setElementOrder/mergingIntList: [1, 2], value: bar}',
      result: 'retainKeysMap: {name: foo, value: bar, mergingIntList: [1, 2, 3]}',
    },
    {
      description: 'retainKeys map adds an item in nested merging int list',
      current: 'retainKeysMap: {name: foo, mergingIntList: [1, 2, 3]}',
      threeWay: 'retainKeysMap: {$setElementOrder/mergingIntList: [1, 2, 4], $retainKeys: [mergingIntList, name], mergingIntList: [4]}',
      result: 'retainKeysMap: {name: foo, mergingIntList: [1, 2, 4, 3]}',
    },
    {
      description: 'retainKeys map adds an item and deletes an item in nested merging int list',
      current: 'retainKeysMap: {name: foo, mergingIntList: [1, 2, 3, 4]}',
      threeWay:
        'retainKeysMap: {$retainKeys: [mergingIntList, name], mergingIntList: [5], $deleteFromPrimitiveList/mergingIntList: [2], $setElementOrder/mergingIntList: [1, 3, 5]}',
      result: 'retainKeysMap: {name: foo, mergingIntList: [1, 3, 5, 4]}',
    },
    {
      description: 'retainKeys map deletes nested merging int list',
      current: 'retainKeysMap: {name: foo, mergingIntList: [1, 2, 3]}',
      threeWay: 'retainKeysMap: {$retainKeys: [name], mergingIntList: null}',
      result: 'retainKeysMap: {name: foo}',
    },
    {
      description: 'retainKeys map adds an item in nested merging list',
      current: 'retainKeysMap: {name: foo, mergingList: [{name: a}, {name: b}, {name: x}]}',
      threeWay: 'retainKeysMap: {$retainKeys: [mergingList, name], $setElementOrder/mergingList: [{name: a}, {name: b}, {name: c}], mergingList: [{name: c}]}',
      result: 'retainKeysMap: {name: foo, mergingList: [{name: a}, {name: b}, {name: c}, {name: x}]}',
    },
    {
      description: 'retainKeys map deletes an item in nested merging list',
      current: 'retainKeysMap: {name: foo, mergingList: [{name: a}, {name: b}, {name: x}]}',
      threeWay: 'retainKeysMap: {$retainKeys: [mergingList, name], $setElementOrder/mergingList: [{name: a}], mergingList: [{name: b, $patch: delete}]}',
      result: 'retainKeysMap: {name: foo, mergingList: [{name: a}, {name: x}]}',
    },
    {
      description: 'retainKeys list of maps clears a field',
      current: 'retainKeysMergingList: [{name: bar}, {name: foo, value: a, other: x}]',
      threeWay: '{$setElementOrder/retainKeysMergingList: [{name: bar}, {name: foo}], retainKeysMergingList: [{$retainKeys: [name, value], name: foo}]}',
      result: 'retainKeysMergingList: [{name: bar}, {name: foo, value: a}]',
    },
    {
      description: 'retainKeys list of maps deletes a field and clear a field',
      current: 'retainKeysMergingList: [{name: bar}, {name: foo, value: a, other: x}]',
      threeWay: '{$setElementOrder/retainKeysMergingList: [{name: bar}, {name: foo}], retainKeysMergingList: [{$retainKeys: [name], name: foo, value: null}]}',
      result: 'retainKeysMergingList: [{name: bar}, {name: foo}]',
    },
    {
      description: 'delete and reorder in one list, reorder in another',
      current: 'mergingList: [{name: a, value: a}, {name: b, value: b}]\nmergeItemPtr: [{name: c, value: c}, {name: d, value: d}]',
      threeWay: '{$setElementOrder/mergingList: [{name: b}], $setElementOrder/mergeItemPtr: [{name: d}, {name: c}], mergingList: [{$patch: delete, name: a}]}',
      result: 'mergingList: [{name: b, value: b}]\nmergeItemPtr: [{name: d, value: d}, {name: c, value: c}]',
    },
    {
      description: 'replace RawExtension field, rest unchanged',
      current: 'name: my-object\nvalue: some-value\nother: current-other\nmergingList: [{name: 1}, {name: 2}, {name: 3}]\nreplacingItem: {Some: Generic, Yaml: Inside, The: RawExtension, Field: Period}',
      threeWay: 'replacingItem: {Newly: Modified, Yaml: Inside, The: RawExtension}',
      result: 'name: my-object\nvalue: some-value\nother: current-other\nmergingList: [{name: 1}, {name: 2}, {name: 3}]\nreplacingItem: {Newly: Modified, Yaml: Inside, The: RawExtension}',
    },
    {
      description: 'replace RawExtension field and merge list',
      current: 'mergingList: [{name: 1}, {name: 3}]\nreplacingItem: {Some: Generic, Field: Period}',
      threeWay: '{$setElementOrder/mergingList: [{name: 1}, {name: 2}], mergingList: [{name: 2}], replacingItem: {Newly: Modified}}',
      result: 'mergingList: [{name: 1}, {name: 2}, {name: 3}]\nreplacingItem: {Newly: Modified}',
    },
  ]);
});

void describe('applyStrategicMergePatch: null handling of patch_test.go (TestUnknownField)', () => {
  const cases: [string, string, string, string][] = [
    ['discard nulls in nested and adds not nulls', '{"name":"foo"}', '{"complex_nullable":{"key":{"keynotnull":"value","keynull":null}}}', '{"complex_nullable":{"key":{"keynotnull":"value"}},"name":"foo"}'],
    ['discard if modified all nulls', '{}', '{"complex":{"nested":null}}', '{"complex":{}}'],
    ['null values in original are preserved', '{"thing":null}', '{"nested":{"value":5}}', '{"nested":{"value":5},"thing":null}'],
    ['add empty slices', '{"name":"foo"}', '{"complex_nullable":[]}', '{"complex_nullable":[],"name":"foo"}'],
    ['filter nulls from nested slices', '{}', '{"complex_nullable":[{"inner_one":{"key_one":"foo","key_two":null}}]}', '{"complex_nullable":[{"inner_one":{"key_one":"foo"}}]}'],
    ['not filter nulls from non-associative slice', '{}', '{"complex_nullable":["key1",null,"key2"]}', '{"complex_nullable":["key1",null,"key2"]}'],
    ['removed only', '{"name":"foo","scalar":true,"complex":{"nested":true},"array":[1,2,3]}', '{"complex":null,"scalar":null}', '{"array":[1,2,3],"name":"foo"}'],
  ];
  for (const [description, current, patch, want] of cases) {
    void it(description, () => {
      const out = applyStrategicMergePatch(JSON.parse(current) as JsonObject, patch, ref('mergeItem'), mergeItemDefs);
      assert.deepEqual(out, JSON.parse(want));
    });
  }
});

void describe('applyStrategicMergePatch: Go element order beyond insertion sort', () => {
  void it('orders a $setElementOrder of more than 20 items as Go does', () => {
    const n = 45;
    const current = Array.from({ length: n }, (_, i) => i);
    const order = [...current].reverse();
    const out = mergeItemPatch({ mergingIntList: current }, { '$setElementOrder/mergingIntList': order });
    assert.deepEqual(out.mergingIntList, order);
    const maps = mergeItemPatch(
      { mergingList: current.map((i) => ({ name: String(i) })) },
      { '$setElementOrder/mergingList': order.map((i) => ({ name: String(i) })), mergingList: [{ name: '44', value: 'x' }] },
    );
    assert.deepEqual(
      (maps.mergingList as JsonObject[]).map((m) => m.name),
      order.map(String),
    );
    assert.deepEqual((maps.mergingList as JsonObject[])[0], { name: '44', value: 'x' });
  });
});
