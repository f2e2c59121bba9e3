import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  everything,
  labelSelectorAsSelector,
  matches,
  newRequirement,
  nothing,
  Operator,
  parse,
  Requirement,
  LabelSelector,
  SelectorParseError,
  selectorFromSet,
  tryParse,
  validatedSelectorFromSet,
  type Labels,
} from '../../src/util/labels.js';
import { root } from '../../src/util/validation.js';

const NAME_PART_REGEX =
  "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const LABEL_VALUE_REGEX =
  "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

function req(key: string, op: Operator, values: string[] = []): Requirement {
  const { requirement, errors } = newRequirement(key, op, values);
  assert.deepEqual(errors, [], `newRequirement(${key}, ${op}, ${values.join(',')})`);
  return requirement;
}

function parseError(selector: string): string {
  const r = tryParse(selector);
  assert.ok(r instanceof SelectorParseError, `expected ${JSON.stringify(selector)} to fail`);
  return r.message;
}

void describe('labels.parse (Kubernetes TestSelectorParse)', () => {
  void it('parses good selectors and re-strings them without spaces', () => {
    for (const s of ['x=a,y=b,z=c', '', 'x!=a,y=b', 'x=', 'x= ', 'x=,z= ', 'x= ,z= ', '!x', 'x>1', 'x>1,z<5']) {
      assert.equal(parse(s).toString(), s.replaceAll(' ', ''), s);
    }
  });

  void it('rejects bad selectors', () => {
    for (const s of ['x=a||y=b', 'x==a==b', '!x=a', 'x<a']) {
      assert.throws(() => parse(s), SelectorParseError, s);
    }
  });

  void it('parses deterministically (TestDeterministicParse)', () => {
    assert.equal(parse('x=a,a=x').toString(), parse('a=x,x=a').toString());
  });

  // TestSetSelectorParser: input, expected requirements (null when invalid)
  const setCases: [string, Requirement[] | null][] = [
    ['', []],
    ['\rx', [req('x', Operator.Exists)]],
    ['this-is-a-dns.domain.com/key-with-dash', [req('this-is-a-dns.domain.com/key-with-dash', Operator.Exists)]],
    [
      'this-is-another-dns.domain.com/key-with-dash in (so,what)',
      [req('this-is-another-dns.domain.com/key-with-dash', Operator.In, ['so', 'what'])],
    ],
    ['0.1.2.domain/99 notin (10.10.100.1, tick.tack.clock)', [req('0.1.2.domain/99', Operator.NotIn, ['10.10.100.1', 'tick.tack.clock'])]],
    ['foo  in\t (abc)', [req('foo', Operator.In, ['abc'])]],
    ['x notin\n (abc)', [req('x', Operator.NotIn, ['abc'])]],
    ['x  notin\t\t\t(abc,def)', [req('x', Operator.NotIn, ['abc', 'def'])]],
    ['x in (abc,def)', [req('x', Operator.In, ['abc', 'def'])]],
    ['x in (abc,)', [req('x', Operator.In, ['', 'abc'])]],
    ['x in ()', [req('x', Operator.In, [''])]],
    [
      'x notin (abc,,def),bar,z in (),w',
      [req('bar', Operator.Exists), req('w', Operator.Exists), req('x', Operator.NotIn, ['', 'abc', 'def']), req('z', Operator.In, [''])],
    ],
    ['x,y in (a)', [req('x', Operator.Exists), req('y', Operator.In, ['a'])]],
    ['x=a', [req('x', Operator.Equals, ['a'])]],
    ['x>1', [req('x', Operator.GreaterThan, ['1'])]],
    ['x<7', [req('x', Operator.LessThan, ['7'])]],
    ['x=a,y!=b', [req('x', Operator.Equals, ['a']), req('y', Operator.NotEquals, ['b'])]],
    ['x=a,y!=b,z in (h,i,j)', [req('x', Operator.Equals, ['a']), req('y', Operator.NotEquals, ['b']), req('z', Operator.In, ['h', 'i', 'j'])]],
    ['x=a||y=b', null],
    ['x,y', [req('x', Operator.Exists), req('y', Operator.Exists)]],
    [',x,y', null],
    ['x nott in (y)', null],
    ['x notin ( )', [req('x', Operator.NotIn, [''])]],
    ['x notin (, a)', [req('x', Operator.NotIn, ['', 'a'])]],
    ['a in (xyz),', null],
    ['a in (xyz)b notin ()', null],
    ['a ', [req('a', Operator.Exists)]],
    ['a in (x,y,notin, z,in)', [req('a', Operator.In, ['in', 'notin', 'x', 'y', 'z'])]],
    ['a in (xyz abc)', null],
    ['a notin(', null],
    ['a (', null],
    ['(', null],
  ];
  void it('parses set-based selectors (TestSetSelectorParser)', () => {
    for (const [input, want] of setCases) {
      const got = tryParse(input);
      if (want === null) {
        assert.ok(got instanceof SelectorParseError, `${JSON.stringify(input)} should fail`);
        continue;
      }
      assert.ok(got instanceof LabelSelector, `${JSON.stringify(input)}: ${String(got)}`);
      assert.deepEqual(got.requirements, want, JSON.stringify(input));
    }
  });

  void it('reports errors worded as Kubernetes', () => {
    const table: [string, string][] = [
      ['x==a==b', "found '==', expected: ',' or 'end of string'"],
      ['!x=a', "found '=', expected: ',' or 'end of string'"],
      ['x<a', `unable to parse requirement: values[0]: Invalid value: "a": for 'Gt', 'Lt' operators, the value must be an integer`],
      ['x=a||y=b', `unable to parse requirement: values[0][x]: Invalid value: "a||y": ${LABEL_VALUE_REGEX}`],
      ['a b', "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"],
      ['x nott in (y)', "unable to parse requirement: found 'nott', expected: in, notin, =, ==, !=, gt, lt"],
      [',x,y', "found ',', expected: !, identifier, or 'end of string'"],
      ['(', "found '(', expected: !, identifier, or 'end of string'"],
      ['a in (xyz),', "found '', expected: identifier after ','"],
      ['a in (xyz)b notin ()', "found 'b', expected: ',' or 'end of string'"],
      ['a in (xyz abc)', "unable to parse requirement: found 'abc', expected: ',' or ')'"],
      ['a notin(', "unable to parse requirement: found '', expected: ',', ')' or identifier"],
      ['a in x', "unable to parse requirement: found 'x' expected: '('"],
      ['a in (=)', "unable to parse requirement: found '=', expected: ',', ')' or identifier"],
      ['a in (b,=)', "unable to parse requirement: found '=', expected: ',', or identifier"],
      ['x=(a)', "unable to parse requirement: found '(', expected: identifier"],
      ['!=a', "found '!=', expected: !, identifier, or 'end of string'"],
      ['!!a', "unable to parse requirement: found '!', expected: identifier"],
      ['-ltier=postgres', `unable to parse requirement: <nil>: Invalid value: "-ltier": ${NAME_PART_REGEX}`],
      [
        'x=' + 'a'.repeat(64),
        `unable to parse requirement: values[0][x]: Invalid value: "${'a'.repeat(64)}": must be no more than 63 characters`,
      ],
      ['/a', 'unable to parse requirement: <nil>: Invalid value: "/a": prefix part must be non-empty'],
    ];
    for (const [input, message] of table) assert.equal(parseError(input), message, JSON.stringify(input));
  });

  void it('prefixes validation errors with the given path', () => {
    assert.equal(
      parseError('x>a'),
      `unable to parse requirement: values[0]: Invalid value: "a": for 'Gt', 'Lt' operators, the value must be an integer`,
    );
    const r = tryParse('x>a', root('spec', 'selector'));
    assert.ok(r instanceof SelectorParseError);
    assert.equal(r.message, `unable to parse requirement: spec.selector.values[0]: Invalid value: "a": for 'Gt', 'Lt' operators, the value must be an integer`);
    assert.equal(r.fieldErrors.length, 1);
  });
});

void describe('label selector matching (Kubernetes TestSelectorMatches)', () => {
  const expectMatch = (selector: string, ls: Labels): void => assert.ok(matches(selector, ls), `${selector} should match ${JSON.stringify(ls)}`);
  const expectNoMatch = (selector: string, ls: Labels): void =>
    assert.ok(!matches(selector, ls), `${selector} should not match ${JSON.stringify(ls)}`);

  void it('matches and does not match', () => {
    expectMatch('', { x: 'y' });
    expectMatch('x=y', { x: 'y' });
    expectMatch('x=y,z=w', { x: 'y', z: 'w' });
    expectMatch('x!=y,z!=w', { x: 'z', z: 'a' });
    expectMatch('notin=in', { notin: 'in' });
    expectMatch('x', { x: 'z' });
    expectMatch('!x', { y: 'z' });
    expectMatch('x>1', { x: '2' });
    expectMatch('x<1', { x: '0' });
    expectNoMatch('x=z', {});
    expectNoMatch('x=y', { x: 'z' });
    expectNoMatch('x=y,z=w', { x: 'w', z: 'w' });
    expectNoMatch('x!=y,z!=w', { x: 'z', z: 'w' });
    expectNoMatch('x', { y: 'z' });
    expectNoMatch('!x', { x: 'z' });
    expectNoMatch('x>1', { x: '0' });
    expectNoMatch('x<1', { x: '2' });
    const labelset = { foo: 'bar', baz: 'blah' };
    expectMatch('foo=bar', labelset);
    expectMatch('baz=blah', labelset);
    expectMatch('foo=bar,baz=blah', labelset);
    expectNoMatch('foo=blah', labelset);
    expectNoMatch('baz=bar', labelset);
    expectNoMatch('foo=bar,foobar=bar,baz=blah', labelset);
  });

  void it('matches set-based requirements (TestRequirementSelectorMatching)', () => {
    const table: [Labels, Requirement[], boolean][] = [
      [{ x: 'foo', y: 'baz' }, [req('x', Operator.In, ['foo']), req('y', Operator.NotIn, ['alpha'])], true],
      [{ x: 'foo', y: 'baz' }, [req('x', Operator.In, ['foo']), req('y', Operator.In, ['alpha'])], false],
      [{ y: '' }, [req('x', Operator.NotIn, ['']), req('y', Operator.Exists)], true],
      [{ y: '' }, [req('x', Operator.DoesNotExist), req('y', Operator.Exists)], true],
      [{ y: '' }, [req('x', Operator.NotIn, ['']), req('y', Operator.DoesNotExist)], false],
      [{ y: 'baz' }, [req('x', Operator.In, [''])], false],
      [{ z: '2' }, [req('z', Operator.GreaterThan, ['1'])], true],
      [{ z: 'v2' }, [req('z', Operator.GreaterThan, ['1'])], false],
    ];
    for (const [set, reqs, want] of table) assert.equal(new LabelSelector(reqs).matches(set), want, JSON.stringify(set));
  });

  void it('treats the empty selector as everything and Nothing as nothing', () => {
    assert.ok(everything().matches({ x: 'y' }));
    assert.ok(everything().empty());
    assert.ok(!nothing().matches({}));
    assert.ok(!nothing().empty());
    assert.ok(selectorFromSet(null).empty());
    assert.ok(selectorFromSet({}).empty());
    assert.ok(matches('', null));
  });

  void it('matches a selector built from a set (TestSetMatches)', () => {
    const labelset = { foo: 'bar', baz: 'blah' };
    for (const s of [{}, { foo: 'bar' }, { baz: 'blah' }, { foo: 'bar', baz: 'blah' }] as Labels[]) assert.ok(selectorFromSet(s).matches(labelset));
    assert.ok(!selectorFromSet({ foo: 'blah' }).matches(labelset));
    assert.equal(selectorFromSet({ b: '2', a: '1' }).toString(), 'a=1,b=2');
  });

  void it('reports exact-match requirements', () => {
    const s = parse('a=b,c in (d),e in (f,g),h!=i');
    assert.equal(s.requiresExactMatch('a'), 'b');
    assert.equal(s.requiresExactMatch('c'), 'd');
    assert.equal(s.requiresExactMatch('e'), undefined);
    assert.equal(s.requiresExactMatch('h'), undefined);
    assert.equal(s.requiresExactMatch('z'), undefined);
  });
});

void describe('requirements', () => {
  void it('validates like NewRequirement (TestRequirementConstructor)', () => {
    const table: [string, string, string[], boolean][] = [
      ['x', Operator.In, [], false],
      ['x', Operator.NotIn, [], false],
      ['x', Operator.In, ['foo'], true],
      ['x', Operator.NotIn, ['foo'], true],
      ['x', Operator.Exists, [], true],
      ['x', Operator.DoesNotExist, [], true],
      ['1foo', Operator.In, ['bar'], true],
      ['1234', Operator.In, ['bar'], true],
      ['y', Operator.GreaterThan, ['1'], true],
      ['z', Operator.LessThan, ['6'], true],
      ['foo', Operator.GreaterThan, ['bar'], false],
      ['barz', Operator.LessThan, ['blah'], false],
      ['a'.repeat(254), Operator.Exists, [], false],
      ['x', 'like', ['a'], false],
    ];
    for (const [key, op, values, ok] of table) {
      const { errors } = newRequirement(key, op, values);
      assert.equal(errors.length === 0, ok, `${key} ${op} ${values.join(',')}: ${errors.join('; ')}`);
    }
  });

  void it('words requirement errors as Kubernetes', () => {
    const msgs = (key: string, op: string, values: string[]): string[] => newRequirement(key, op, values).errors.map((e) => e.toString());
    assert.deepEqual(msgs('x', Operator.In, []), [`values: Invalid value: []string{}: for 'in', 'notin' operators, values set can't be empty`]);
    assert.deepEqual(msgs('x', Operator.Equals, ['a', 'b']), [
      `values: Invalid value: []string{"a", "b"}: exact-match compatibility requires one single value`,
    ]);
    assert.deepEqual(msgs('x', Operator.Exists, ['a']), [`values: Invalid value: []string{"a"}: values set must be empty for exists and does not exist`]);
    assert.deepEqual(msgs('x', 'like', []), [`operator: Unsupported value: "like": supported values: "in", "notin", "=", "==", "!=", "gt", "lt", "exists", "!"`]);
    assert.deepEqual(msgs('-x', Operator.Exists, []), [`key: Invalid value: "-x": ${NAME_PART_REGEX}`]);
    assert.deepEqual(msgs('x', Operator.In, ['a', '-b']), [`values[1][x]: Invalid value: "-b": ${LABEL_VALUE_REGEX}`]);
  });

  void it('prints requirements and selectors (TestToString)', () => {
    const table: [Requirement[], string][] = [
      [[req('x', Operator.In, ['abc', 'def']), req('y', Operator.NotIn, ['jkl']), req('z', Operator.Exists)], 'x in (abc,def),y notin (jkl),z'],
      [[req('x', Operator.NotIn, ['abc', 'def']), req('y', Operator.NotEquals, ['jkl']), req('z', Operator.DoesNotExist)], 'x notin (abc,def),y!=jkl,!z'],
      [[req('x', Operator.NotIn, ['abc']), req('y', Operator.In, ['jkl', 'mno']), req('z', Operator.NotIn, [''])], 'x notin (abc),y in (jkl,mno),z notin ()'],
      [[req('x', Operator.Equals, ['abc']), req('y', Operator.DoubleEquals, ['jkl']), req('z', Operator.NotEquals, ['a']), req('z', Operator.Exists)], 'x=abc,y==jkl,z!=a,z'],
      [[req('x', Operator.GreaterThan, ['2']), req('y', Operator.LessThan, ['8']), req('z', Operator.Exists)], 'x>2,y<8,z'],
    ];
    for (const [reqs, want] of table) assert.equal(new LabelSelector(reqs).toString(), want);
    // values print sorted without changing the requirement
    const r = req('x', Operator.In, ['b', 'a']);
    assert.equal(r.toString(), 'x in (a,b)');
    assert.deepEqual(r.values, ['b', 'a']);
  });

  void it('adds requirements keeping keys sorted (TestAdd)', () => {
    const s = new LabelSelector([req('key', Operator.In, ['value'])]).add(req('key2', Operator.Equals, ['value2']));
    assert.equal(s.toString(), 'key in (value),key2=value2');
    assert.equal(everything().add(req('b', Operator.Exists), req('a', Operator.Exists)).toString(), 'a,b');
  });
});

void describe('metav1.LabelSelector conversion', () => {
  void it('converts matchLabels and matchExpressions', () => {
    const s = labelSelectorAsSelector({
      matchLabels: { app: 'web' },
      matchExpressions: [
        { key: 'tier', operator: 'In', values: ['fe', 'be'] },
        { key: 'canary', operator: 'DoesNotExist' },
      ],
    });
    assert.equal(s.toString(), 'app=web,!canary,tier in (be,fe)');
    assert.ok(s.matches({ app: 'web', tier: 'fe' }));
    assert.ok(!s.matches({ app: 'web', tier: 'fe', canary: 'x' }));
    assert.ok(labelSelectorAsSelector({}).empty());
    assert.ok(labelSelectorAsSelector(null).isNothing());
    assert.throws(
      () => labelSelectorAsSelector({ matchExpressions: [{ key: 'a', operator: 'Gt', values: ['1'] }] }),
      (e: unknown) => e instanceof SelectorParseError && e.message === '"Gt" is not a valid pod selector operator',
    );
    assert.throws(
      () => validatedSelectorFromSet({ 'a b': 'c' }),
      (e: unknown) => e instanceof SelectorParseError && e.message.startsWith('key: Invalid value: "a b": name part must consist'),
    );
  });
});
