import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  aggregateMessage,
  duplicate,
  ErrorType,
  FieldError,
  FieldPath,
  forbidden,
  goQuote,
  internalError,
  invalid,
  isDNS1035Label,
  isDNS1123Label,
  isDNS1123Subdomain,
  isQualifiedName,
  isValidLabelValue,
  maskTrailingDash,
  nameIsDNS1035Label,
  nameIsDNSLabel,
  nameIsDNSSubdomain,
  notFound,
  notSupported,
  required,
  root,
  tooLong,
  tooMany,
  validateObjectMeta,
  validateObjectMetaUpdate,
  type NameValidator,
} from '../../src/util/validation.js';

const SUBDOMAIN_MSG =
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const LABEL_MSG =
  "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const DNS1035_MSG =
  "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";
const NAME_PART_MSG =
  "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const LABEL_VALUE_MSG =
  "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

const strs = (errs: FieldError[]): string[] => errs.map((e) => e.toString());
const meta = root('metadata');

void describe('FieldPath', () => {
  void it('prints children, indexes and keys as field.Path does', () => {
    assert.equal(root('spec').child('accessModes').index(0).toString(), 'spec.accessModes[0]');
    assert.equal(root('spec').child('resources').child('requests').key('storage').toString(), 'spec.resources.requests[storage]');
    assert.equal(root('spec').child('accessModes').index(0).key('storage').toString(), 'spec.accessModes[0][storage]');
    assert.equal(root('metadata', 'labels').toString(), 'metadata.labels');
    assert.equal(root('spec').child('template', 'spec').child('containers').index(2).child('name').toString(), 'spec.template.spec.containers[2].name');
    assert.equal(FieldPath.root('a').key('b.c').child('d').toString(), 'a[b.c].d');
  });
});

void describe('FieldError', () => {
  void it('prints as field.Error.Error() does', () => {
    const table: [FieldError, string][] = [
      [required(meta.child('name'), 'name or generateName is required'), 'metadata.name: Required value: name or generateName is required'],
      [required(meta.child('namespace')), 'metadata.namespace: Required value'],
      [
        notSupported(root('spec', 'accessModes'), 'Foo', ['ReadOnlyMany', 'ReadWriteMany', 'ReadWriteOnce']),
        'spec.accessModes: Unsupported value: "Foo": supported values: "ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce"',
      ],
      [invalid(meta.child('name'), 'A', SUBDOMAIN_MSG), `metadata.name: Invalid value: "A": ${SUBDOMAIN_MSG}`],
      [invalid(root('spec', 'replicas'), -1, 'must be greater than or equal to 0'), 'spec.replicas: Invalid value: -1: must be greater than or equal to 0'],
      [invalid(root('x'), 1.5, 'bad'), 'x: Invalid value: 1.5: bad'],
      [invalid(root('x'), true, 'bad'), 'x: Invalid value: true: bad'],
      [invalid(root('x'), null, 'bad'), 'x: Invalid value: "null": bad'],
      [invalid(root('x'), ['a', 'b'], 'bad'), 'x: Invalid value: []string{"a", "b"}: bad'],
      [invalid(root('x'), { b: '2', a: '1' }, 'bad'), 'x: Invalid value: map[string]string{"a":"1", "b":"2"}: bad'],
      [duplicate(root('spec', 'ports').index(1), 'http'), 'spec.ports[1]: Duplicate value: "http"'],
      [notFound(root('spec', 'volume'), 'data'), 'spec.volume: Not found: "data"'],
      [forbidden(meta.child('namespace'), 'not allowed on this type'), 'metadata.namespace: Forbidden: not allowed on this type'],
      [tooLong(meta.child('annotations'), '', 262144), 'metadata.annotations: Too long: must have at most 262144 bytes'],
      [tooMany(root('spec', 'items'), 5, 4), 'spec.items: Too many: 5: must have at most 4 items'],
      [internalError(root('spec'), new Error('boom')), 'spec: Internal error: boom'],
      [notSupported(root('x'), 'y', []), 'x: Unsupported value: "y"'],
    ];
    for (const [err, want] of table) assert.equal(err.toString(), want);
  });

  void it('exposes type, field, bad value, detail and the status cause', () => {
    const e = invalid(meta.child('name'), 'A', 'bad');
    assert.equal(e.type, ErrorType.Invalid);
    assert.equal(e.type, 'FieldValueInvalid');
    assert.equal(e.field, 'metadata.name');
    assert.equal(e.badValue, 'A');
    assert.equal(e.detail, 'bad');
    assert.equal(e.errorBody(), 'Invalid value: "A": bad');
    assert.deepEqual(e.toCause(), { reason: 'FieldValueInvalid', message: 'Invalid value: "A": bad', field: 'metadata.name' });
    assert.equal(required(root('a')).type, 'FieldValueRequired');
    assert.equal(internalError(root('a'), 'x').type, 'InternalError');
  });

  void it('quotes strings as Go does', () => {
    assert.equal(goQuote('a"b\\c'), '"a\\"b\\\\c"');
    assert.equal(goQuote('tab\there\n'), '"tab\\there\\n"');
    assert.equal(goQuote('\x00\x7f'), '"\\x00\\x7f"');
    assert.equal(goQuote('Māori 水'), '"Māori 水"');
    assert.equal(goQuote('\u00ad'), '"\\u00ad"');
  });

  void it('aggregates messages as ErrorList.ToAggregate', () => {
    assert.equal(aggregateMessage([]), '');
    const a = required(root('a'));
    const b = required(root('b'));
    assert.equal(aggregateMessage([a]), 'a: Required value');
    assert.equal(aggregateMessage([a, b, a]), '[a: Required value, b: Required value]');
    assert.equal(aggregateMessage([a, a]), 'a: Required value');
  });
});

void describe('name validators (Kubernetes util/validation tests)', () => {
  void it('IsDNS1123Label', () => {
    for (const v of ['a', 'ab', 'abc', 'a1', 'a-1', 'a--1--2--b', '0', '01', '012', '1a', '1-a', '1--a--b--2', 'a'.repeat(63)]) {
      assert.deepEqual(isDNS1123Label(v), [], v);
    }
    for (const v of ['', 'A', 'ABC', 'aBc', 'A1', 'A-1', '1-A', '-', 'a-', '-a', '1-', '-1', '_', 'a_', '_a', 'a_b', '1_', '_1', '1_2', '.', 'a.', '.a', 'a.b', '1.', '.1', '1.2', ' ', 'a ', ' a', 'a b', '1 ', ' 1', '1 2', 'a'.repeat(64)]) {
      assert.notDeepEqual(isDNS1123Label(v), [], v);
    }
    assert.deepEqual(isDNS1123Label('a.b'), [LABEL_MSG]);
    assert.deepEqual(isDNS1123Label('a'.repeat(64)), ['must be no more than 63 characters']);
    assert.deepEqual(isDNS1123Label('A'.repeat(64)), ['must be no more than 63 characters', LABEL_MSG]);
  });

  void it('IsDNS1123Subdomain', () => {
    const good = ['a', 'ab', 'abc', 'a1', 'a-1', 'a--1--2--b', '0', '01', '012', '1a', '1-a', '1--a--b--2', 'a.a', 'ab.a', 'abc.a', 'a1.a', 'a-1.a', 'a--1--2--b.a', 'a.1', 'ab.1', 'abc.1', 'a1.1', 'a-1.1', 'a--1--2--b.1', '0.a', '01.a', '012.a', '1a.a', '1-a.a', '0.1', '01.1', '012.1', '1a.1', '1-a.1', '1--a--b--2.1', 'a.b.c.d.e', 'aa.bb.cc.dd.ee', '1.2.3.4.5', '11.22.33.44.55', 'a'.repeat(253)];
    for (const v of good) assert.deepEqual(isDNS1123Subdomain(v), [], v);
    const bad = ['', 'A', 'ABC', 'aBc', 'A1', 'A-1', '1-A', '-', 'a-', '-a', '1-', '-1', '_', 'a_', '_a', 'a_b', '1_', '_1', '1_2', '.', 'a.', '.a', 'a..b', '1.', '.1', '1..2', ' ', 'a ', ' a', 'a b', '1 ', ' 1', '1 2', 'A.a', 'aB.a', 'ab.A', 'A1.a', 'a1.A', 'A.1', 'aB.1', 'A1.1', '1A.1', '0.A', '01.A', '012.A', '1A.a', '1a.A', 'A.B.C.D.E', 'AA.BB.CC.DD.EE', 'a.B.c.d.e', 'aa.bB.cc.dd.ee', 'a@b', 'a,b', 'a_b', 'a;b', 'a:b', 'a%b', 'a?b', 'a$b', 'a'.repeat(254)];
    for (const v of bad) assert.notDeepEqual(isDNS1123Subdomain(v), [], v);
    assert.deepEqual(isDNS1123Subdomain('A'), [SUBDOMAIN_MSG]);
    assert.deepEqual(isDNS1123Subdomain('a'.repeat(254)), ['must be no more than 253 characters']);
  });

  void it('IsDNS1035Label', () => {
    for (const v of ['a', 'ab', 'abc', 'a1', 'a-1', 'a--1--2--b', 'a'.repeat(63)]) assert.deepEqual(isDNS1035Label(v), [], v);
    for (const v of ['0', '01', '012', '1a', '1-a', '1--a--b--2', '', 'A', 'ABC', 'aBc', 'A1', 'A-1', '1-A', '-', 'a-', '-a', '1-', '-1', '_', 'a_', '_a', 'a_b', '1_', '_1', '1_2', '.', 'a.', '.a', 'a.b', '1.', '.1', '1.2', ' ', 'a ', ' a', 'a b', '1 ', ' 1', '1 2', 'a'.repeat(64)]) {
      assert.notDeepEqual(isDNS1035Label(v), [], v);
    }
    assert.deepEqual(isDNS1035Label('1a'), [DNS1035_MSG]);
  });

  void it('IsQualifiedName', () => {
    const good = ['simple', 'now-with-dashes', '1-starts-with-num', '1234', 'simple/simple', 'now-with-dashes/simple', 'now-with-dashes/now-with-dashes', 'now.with.dots/simple', 'now-with.dashes-and.dots/simple', '1-num.2-num/3-num', '1234/5678', '1.2.3.4/5678', 'Uppercase_Is_OK_123', 'example.com/Uppercase_Is_OK_123', 'requests.storage-foo', 'a'.repeat(63), 'a'.repeat(253) + '/' + 'b'.repeat(63)];
    for (const v of good) assert.deepEqual(isQualifiedName(v), [], v);
    const bad = ['nospecialchars%^=@', 'cantendwithadash-', '-cantstartwithadash-', 'only/one/slash', 'Example.com/abc', 'example_com/abc', 'example.com/', '/simple', 'a'.repeat(64), 'a'.repeat(254) + '/abc'];
    for (const v of bad) assert.notDeepEqual(isQualifiedName(v), [], v);
    assert.deepEqual(isQualifiedName('-x'), [NAME_PART_MSG]);
    assert.deepEqual(isQualifiedName('example.com/'), ['name part must be non-empty', NAME_PART_MSG]);
    assert.deepEqual(isQualifiedName('/simple'), ['prefix part must be non-empty']);
    assert.deepEqual(isQualifiedName('Example.com/abc'), ['prefix part ' + SUBDOMAIN_MSG]);
    assert.deepEqual(isQualifiedName('a'.repeat(64)), ['name part must be no more than 63 characters']);
    assert.deepEqual(isQualifiedName('only/one/slash'), [
      "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
    ]);
  });

  void it('IsValidLabelValue', () => {
    for (const v of ['simple', 'now-with-dashes', '1-starts-with-num', 'end-with-num-1', '1234', 'a'.repeat(63), '']) assert.deepEqual(isValidLabelValue(v), [], v);
    for (const v of ['nospecialchars%^=@', 'Tama-nui-te-rā.is.Māori.sun', '\\backslashes\\are\\bad', '-starts-with-dash', 'ends-with-dash-', '.starts.with.dot', 'ends.with.dot.', 'a'.repeat(64)]) {
      assert.notDeepEqual(isValidLabelValue(v), [], v);
    }
    assert.deepEqual(isValidLabelValue('-a'), [LABEL_VALUE_MSG]);
    assert.deepEqual(isValidLabelValue('a'.repeat(64)), ['must be no more than 63 characters']);
  });

  void it('masks a trailing dash for generateName prefixes', () => {
    assert.equal(maskTrailingDash('abc-'), 'aba');
    assert.equal(maskTrailingDash('-'), '-');
    assert.equal(maskTrailingDash('abc'), 'abc');
    assert.deepEqual(nameIsDNSSubdomain('web-', true), []);
    assert.notDeepEqual(nameIsDNSSubdomain('web-', false), []);
    assert.deepEqual(nameIsDNSLabel('web-', true), []);
    assert.deepEqual(nameIsDNS1035Label('web-', true), []);
    assert.notDeepEqual(nameIsDNSSubdomain('-', true), []);
    assert.notDeepEqual(nameIsDNSSubdomain('Web-', true), []);
  });
});

void describe('validateObjectMeta (Kubernetes objectmeta_test)', () => {
  const ok: NameValidator = () => [];

  void it('uses the given name function for name and generateName (TestValidateObjectMetaCustomName)', () => {
    const fn: NameValidator = (s) => (s === 'test' ? [] : ['wrong value']);
    const table: [Record<string, unknown>, number][] = [
      [{ name: 'test', generateName: '' }, 0],
      [{ name: 'test', generateName: 'test' }, 0],
      [{ name: 'invalid', generateName: '' }, 1],
      [{ name: 'invalid', generateName: 'test' }, 1],
      [{ name: 'invalid', generateName: 'invalid' }, 2],
    ];
    for (const [m, n] of table) {
      const errs = validateObjectMeta(m, false, fn, root('field'));
      assert.equal(errs.length, n, JSON.stringify(m));
      if (n > 0) assert.ok(errs[0]!.toString().includes('wrong value'));
    }
    assert.deepEqual(strs(validateObjectMeta({ name: 'invalid', generateName: 'invalid' }, false, fn, root('field'))), [
      'field.generateName: Invalid value: "invalid": wrong value',
      'field.name: Invalid value: "invalid": wrong value',
    ]);
  });

  void it('requires a name and validates it', () => {
    assert.deepEqual(strs(validateObjectMeta({}, false, nameIsDNSSubdomain, meta)), ['metadata.name: Required value: name or generateName is required']);
    assert.deepEqual(strs(validateObjectMeta({ name: 'A' }, false, nameIsDNSSubdomain, meta)), [`metadata.name: Invalid value: "A": ${SUBDOMAIN_MSG}`]);
    assert.deepEqual(strs(validateObjectMeta({ name: 'web-1' }, false, nameIsDNSSubdomain, meta)), []);
    assert.deepEqual(strs(validateObjectMeta({ name: 'web-abcde', generateName: 'web-' }, false, nameIsDNSSubdomain, meta)), []);
  });

  void it('validates namespaces as DNS labels (TestValidateObjectMetaNamespaces)', () => {
    assert.deepEqual(strs(validateObjectMeta({ name: 'test', namespace: 'foo.bar' }, true, ok, root('field'))), [
      `field.namespace: Invalid value: "foo.bar": ${LABEL_MSG}`,
    ]);
    const long = 'A'.repeat(64);
    const errs = validateObjectMeta({ name: 'test', namespace: long }, true, ok, root('field'));
    assert.equal(errs.length, 2);
    assert.ok(errs.every((e) => e.toString().includes('Invalid value')));
    assert.deepEqual(strs(validateObjectMeta({ name: 'test' }, true, ok, meta)), ['metadata.namespace: Required value']);
    assert.deepEqual(strs(validateObjectMeta({ name: 'test', namespace: 'ns' }, false, ok, meta)), ['metadata.namespace: Forbidden: not allowed on this type']);
  });

  void it('validates owner references (TestValidateObjectMetaOwnerReferences)', () => {
    const check = (refs: unknown[]): string[] => strs(validateObjectMeta({ name: 'test', namespace: 'test', ownerReferences: refs }, true, ok, root('field')));
    assert.deepEqual(check([{ apiVersion: 'customresourceVersion', kind: 'customresourceKind', name: 'name', uid: '1' }]), []);
    assert.deepEqual(check([{ apiVersion: 'v1', kind: 'Pod', name: 'name', uid: '1' }]), []);
    const event = check([{ apiVersion: 'v1', kind: 'Event', name: 'name', uid: '1' }]);
    assert.equal(event.length, 1);
    assert.ok(event[0]!.startsWith('field.ownerReferences: Invalid value: v1.OwnerReference{APIVersion:"v1", Kind:"Event", Name:"name", UID:"1"'));
    assert.ok(event[0]!.endsWith(': /v1, Kind=Event is disallowed from being an owner'));
    assert.deepEqual(check([{}]), [
      'field.ownerReferences.apiVersion: Invalid value: "": version must not be empty',
      'field.ownerReferences.kind: Invalid value: "": kind must not be empty',
      'field.ownerReferences.name: Invalid value: "": name must not be empty',
      'field.ownerReferences.uid: Invalid value: "": uid must not be empty',
    ]);
    assert.deepEqual(check([{ apiVersion: 'a/b/c', kind: 'Pod', name: 'n', uid: '1' }]), [
      'field.ownerReferences.apiVersion: Invalid value: "a/b/c": version must not be empty',
    ]);
    const base = { apiVersion: 'customresourceVersion', kind: 'customresourceKind', name: 'name' };
    assert.deepEqual(
      check([
        { ...base, uid: '1', controller: false },
        { ...base, uid: '2', controller: true },
        { ...base, uid: '3', controller: false },
        { ...base, uid: '4' },
      ]),
      [],
    );
    const two = check([
      { ...base, uid: '1', controller: false },
      { ...base, name: 'second', uid: '2', controller: true },
      { ...base, name: 'third', uid: '3', controller: true },
      { ...base, uid: '4' },
    ]);
    assert.equal(two.length, 1);
    assert.ok(two[0]!.startsWith('field.ownerReferences: Invalid value: []v1.OwnerReference{'));
    assert.ok(two[0]!.endsWith(': Only one reference can have Controller set to true. Found "true" in references for second and third'));
  });

  void it('rejects conflicting finalizers and invalid finalizer names', () => {
    assert.deepEqual(strs(validateObjectMeta({ name: 'test', finalizers: ['orphan', 'foregroundDeletion'] }, false, ok, root('field'))), [
      'field.finalizers: Invalid value: []string{"orphan", "foregroundDeletion"}: finalizer orphan and foregroundDeletion cannot be both set',
    ]);
    assert.deepEqual(strs(validateObjectMeta({ name: 'test', finalizers: ['kubernetes.io/pv-protection', 'bad finalizer'] }, false, ok, meta)), [
      `metadata.finalizers: Invalid value: "bad finalizer": ${NAME_PART_MSG}`,
    ]);
  });

  void it('validates labels and annotations', () => {
    assert.deepEqual(strs(validateObjectMeta({ name: 'a', labels: { 'app.kubernetes.io/name': 'web', '-bad': 'x', ok: '-bad' } }, false, ok, meta)), [
      `metadata.labels: Invalid value: "-bad": ${NAME_PART_MSG}`,
      `metadata.labels: Invalid value: "-bad": ${LABEL_VALUE_MSG}`,
    ]);
    assert.deepEqual(strs(validateObjectMeta({ name: 'a', annotations: { 'Example.COM/Key': 'anything at all: ok', 'a b': '' } }, false, ok, meta)), [
      `metadata.annotations: Invalid value: "a b": ${NAME_PART_MSG}`,
    ]);
    const big = 'x'.repeat(256 * 1024);
    assert.deepEqual(strs(validateObjectMeta({ name: 'a', annotations: { k: big } }, false, ok, meta)), [
      'metadata.annotations: Too long: must have at most 262144 bytes',
    ]);
    assert.deepEqual(strs(validateObjectMeta({ name: 'a', annotations: { k: big.slice(1) } }, false, ok, meta)), []);
  });

  void it('rejects a negative generation and bad managed fields', () => {
    assert.deepEqual(strs(validateObjectMeta({ name: 'a', generation: -1 }, false, ok, meta)), [
      'metadata.generation: Invalid value: -1: must be greater than or equal to 0',
    ]);
    assert.deepEqual(strs(validateObjectMeta({ name: 'a', managedFields: [{ manager: 'kubectl', operation: 'Patch', fieldsType: 'FieldsV2' }] }, false, ok, meta)), [
      'metadata.managedFields[0].operation: Invalid value: "Patch": must be `Apply` or `Update`',
      'metadata.managedFields[0].fieldsType: Invalid value: "FieldsV2": must be `FieldsV1`',
    ]);
    assert.deepEqual(strs(validateObjectMeta({ name: 'a', managedFields: [{ manager: 'k'.repeat(129), operation: 'Apply' }] }, false, ok, meta)), [
      'metadata.fieldManager: Too long: must have at most 128 bytes',
      'metadata.managedFields[0].manager: Too long: must have at most 128 bytes',
    ]);
  });

  void it('never throws on malformed input', () => {
    assert.deepEqual(strs(validateObjectMeta(null, false, ok, meta)), ['metadata.name: Required value: name or generateName is required']);
    assert.doesNotThrow(() => validateObjectMeta({ name: 'a', labels: 'x', ownerReferences: {}, finalizers: 3 }, true, ok, meta));
    assert.doesNotThrow(() => validateObjectMetaUpdate(undefined, 'x', meta));
  });
});

void describe('validateObjectMetaUpdate (Kubernetes objectmeta_test)', () => {
  const base = { name: 'test', resourceVersion: '1' };

  void it('treats creationTimestamp as immutable (TestValidateObjectMetaUpdateIgnoresCreationTimestamp)', () => {
    const t10 = '1970-01-01T00:00:10Z';
    const t11 = '1970-01-01T00:00:11Z';
    assert.deepEqual(strs(validateObjectMetaUpdate(base, { ...base, creationTimestamp: t10 }, root('field'))), [
      'field.creationTimestamp: Invalid value: 0001-01-01 00:00:00 +0000 UTC: field is immutable',
    ]);
    assert.deepEqual(strs(validateObjectMetaUpdate({ ...base, creationTimestamp: t10 }, base, root('field'))), [
      'field.creationTimestamp: Invalid value: 1970-01-01 00:00:10 +0000 UTC: field is immutable',
    ]);
    assert.equal(validateObjectMetaUpdate({ ...base, creationTimestamp: t10 }, { ...base, creationTimestamp: t11 }, root('field')).length, 1);
    assert.deepEqual(validateObjectMetaUpdate({ ...base, creationTimestamp: t10 }, { ...base, creationTimestamp: '1970-01-01T01:00:10+01:00' }, root('field')), []);
  });

  void it('forbids new finalizers while deleting (TestValidateFinalizersUpdate)', () => {
    const deleting = { ...base, deletionTimestamp: '2021-01-01T00:00:00Z' };
    const table: [Record<string, unknown>, Record<string, unknown>, string][] = [
      [{ ...deleting, finalizers: ['x/a'] }, { ...deleting, finalizers: ['x/a', 'y/b'] }, 'y/b'],
      [{ ...deleting, finalizers: ['x/a'] }, { ...deleting, finalizers: ['x/b'] }, 'x/b'],
      [{ ...deleting, finalizers: ['x/a', 'y/b'] }, { ...deleting, finalizers: ['x/a'] }, ''],
      [{ ...base, finalizers: ['x/a'] }, { ...base, finalizers: ['x/a', 'y/b'] }, ''],
    ];
    for (const [oldMeta, newMeta, want] of table) {
      const msg = aggregateMessage(validateObjectMetaUpdate(newMeta, oldMeta, root('field')));
      if (want === '') assert.equal(msg, '');
      else assert.ok(msg.includes(want), msg);
    }
    assert.deepEqual(strs(validateObjectMetaUpdate({ ...deleting, finalizers: ['x/a', 'y/b'] }, { ...deleting, finalizers: ['x/a'] }, meta)), [
      'metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{"y/b"}',
    ]);
  });

  void it('prevents deletion field mutation (TestValidateObjectMetaUpdatePreventsDeletionFieldMutation)', () => {
    const now = '1970-01-01T00:16:40Z';
    const later = '1970-01-01T00:33:20Z';
    const table: [Record<string, unknown>, Record<string, unknown>, string[]][] = [
      [base, base, []],
      [{ ...base, deletionTimestamp: now, deletionGracePeriodSeconds: 30 }, { ...base, deletionTimestamp: now, deletionGracePeriodSeconds: 30 }, []],
      [base, { ...base, deletionTimestamp: now }, ['field.deletionTimestamp: Invalid value: 1970-01-01 00:16:40 +0000 UTC: field is immutable']],
      [{ ...base, deletionTimestamp: now }, base, ['field.deletionTimestamp: Invalid value: "null": field is immutable']],
      [{ ...base, deletionTimestamp: now }, { ...base, deletionTimestamp: later }, ['field.deletionTimestamp: Invalid value: 1970-01-01 00:33:20 +0000 UTC: field is immutable']],
      [base, { ...base, deletionGracePeriodSeconds: 30 }, ['field.deletionGracePeriodSeconds: Invalid value: 30: field is immutable']],
      [{ ...base, deletionGracePeriodSeconds: 30 }, base, ['field.deletionGracePeriodSeconds: Invalid value: "null": field is immutable']],
      [{ ...base, deletionGracePeriodSeconds: 30 }, { ...base, deletionGracePeriodSeconds: 40 }, ['field.deletionGracePeriodSeconds: Invalid value: 40: field is immutable']],
    ];
    for (const [oldMeta, newMeta, want] of table) assert.deepEqual(strs(validateObjectMetaUpdate(newMeta, oldMeta, root('field'))), want);
  });

  void it('checks generation, resourceVersion and identity fields (TestObjectMetaGenerationUpdate)', () => {
    assert.deepEqual(strs(validateObjectMetaUpdate({ ...base, generation: 4 }, { ...base, generation: 5 }, root('field'))), [
      'field.generation: Invalid value: 4: must not be decremented',
    ]);
    assert.deepEqual(validateObjectMetaUpdate({ ...base, generation: 2 }, { ...base, generation: 1 }, root('field')), []);
    assert.deepEqual(validateObjectMetaUpdate({ ...base, generation: 5 }, { ...base, generation: 5 }, root('field')), []);
    assert.deepEqual(strs(validateObjectMetaUpdate({ name: 'test' }, base, meta)), ['metadata.resourceVersion: Invalid value: "": must be specified for an update']);
    assert.deepEqual(
      strs(validateObjectMetaUpdate({ ...base, name: 'other', namespace: 'b', uid: 'u2' }, { ...base, namespace: 'a', uid: 'u1' }, meta)),
      [
        'metadata.name: Invalid value: "other": field is immutable',
        'metadata.namespace: Invalid value: "b": field is immutable',
        'metadata.uid: Invalid value: "u2": field is immutable',
      ],
    );
    // generateName may change
    assert.deepEqual(validateObjectMetaUpdate({ ...base, generateName: 'x-' }, { ...base, generateName: 'y-' }, meta), []);
    // labels and annotations of the new object are validated
    assert.deepEqual(strs(validateObjectMetaUpdate({ ...base, labels: { a: '-' } }, base, meta)), [`metadata.labels: Invalid value: "-": ${LABEL_VALUE_MSG}`]);
  });
});
