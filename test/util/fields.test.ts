import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  escapeValue,
  everything,
  FieldSelector,
  FieldSelectorParseError,
  matches,
  oneTermEqualSelector,
  parseSelector,
  selectorFromSet,
  tryParseSelector,
  unescapeValue,
  type Fields,
} from '../../src/util/fields.js';

void describe('fields.parseSelector (Kubernetes TestSelectorParse)', () => {
  void it('parses good selectors and re-strings them unchanged', () => {
    for (const s of ['x=a,y=b,z=c', '', 'x!=a,y=b', 'x=a||y\\=b', 'x=a\\=\\=b']) {
      assert.equal(parseSelector(s).toString(), s, s);
    }
  });

  void it('rejects bad selectors', () => {
    for (const s of ['x=a||y=b', 'x==a==b', 'x=a,b', 'x in (a)', 'x in (a,b,c)', 'x']) {
      assert.throws(() => parseSelector(s), FieldSelectorParseError, s);
    }
  });

  void it('words errors as Kubernetes', () => {
    const table: [string, string][] = [
      ['x', "invalid selector: 'x'; can't understand 'x'"],
      ['x=a,b', "invalid selector: 'x=a,b'; can't understand 'b'"],
      ['x in (a)', "invalid selector: 'x in (a)'; can't understand 'x in (a)'"],
      ['spec.replicas>1', "invalid selector: 'spec.replicas>1'; can't understand 'spec.replicas>1'"],
      ['status.phase notin (Running)', "invalid selector: 'status.phase notin (Running)'; can't understand 'status.phase notin (Running)'"],
      ['x=a||y=b', 'invalid field selector: unescaped character in value: 61'],
      ['x==a==b', 'invalid field selector: unescaped character in value: 61'],
      ['x=a\\,b,y=\\q', 'invalid field selector: invalid escape sequence: \\q'],
      ['x=\\', 'invalid field selector: invalid escape sequence: \\'],
    ];
    for (const [input, message] of table) {
      const r = tryParseSelector(input);
      assert.ok(r instanceof FieldSelectorParseError, input);
      assert.equal(r.message, message, input);
    }
  });

  void it('parses deterministically (TestDeterministicParse)', () => {
    assert.equal(parseSelector('x=a,a=x').toString(), parseSelector('a=x,x=a').toString());
    assert.equal(parseSelector('x=a,a=x').toString(), 'a=x,x=a');
  });

  void it('splits terms at unescaped commas and sorts them (TestSplitTermsAndSort)', () => {
    const table: [string, string[]][] = [
      ['a=avalue', ['a=avalue']],
      ['a=avalue,b=bvalue', ['a=avalue', 'b=bvalue']],
      ['a=avalue,b==bvalue,c!=cvalue', ['a=avalue', 'b=bvalue', 'c!=cvalue']],
      ['a=a,', ['a=a']],
      [',a=a', ['a=a']],
      ['k=\\,,k2=v2', ['k2=v2', 'k=\\,']],
      ['k=\\\\,k2=v2', ['k2=v2', 'k=\\\\']],
      ['k=\\\\\\,,k2=v2', ['k2=v2', 'k=\\\\\\,']],
      ['함=수,목=록', ['목=록', '함=수']],
    ];
    for (const [input, terms] of table) assert.equal(parseSelector(input).toString(), terms.join(','), input);
  });

  void it('splits a term at the first operator (TestSplitTerm)', () => {
    const table: [string, string, '=' | '!=', string][] = [
      ['a=value', 'a', '=', 'value'],
      ['b==value', 'b', '=', 'value'],
      ['c!=value', 'c', '!=', 'value'],
      ['k=\\,', 'k', '=', ','],
      ['k=\\=', 'k', '=', '='],
      ['함=수', '함', '=', '수'],
      ['a!b=c', 'a!b', '=', 'c'],
    ];
    for (const [term, field, operator, value] of table) {
      assert.deepEqual(parseSelector(term).requirements, [{ field, operator, value }], term);
    }
  });

  void it('drops terms with an empty field and value', () => {
    assert.ok(parseSelector('=').empty());
    assert.ok(parseSelector('!=').empty());
    assert.equal(parseSelector('=,a=b').toString(), 'a=b');
  });
});

void describe('escaping (Kubernetes TestEscapeValue)', () => {
  void it('escapes and unescapes values', () => {
    const table: [string, string][] = [
      ['', ''],
      ['a', 'a'],
      ['=', '\\='],
      [',', '\\,'],
      ['\\', '\\\\'],
      ['\\=\\,\\', '\\\\\\=\\\\\\,\\\\'],
    ];
    for (const [raw, escaped] of table) {
      assert.equal(escapeValue(raw), escaped);
      assert.equal(unescapeValue(escaped), raw);
    }
  });

  void it('rejects invalid escape sequences', () => {
    for (const bad of ['\\', '\\\\\\', '\\a']) {
      assert.throws(() => unescapeValue(bad), (e: unknown) => e instanceof FieldSelectorParseError && e.message.includes('invalid escape sequence'), bad);
    }
    assert.throws(() => unescapeValue('a,b'), /unescaped character in value: 44/);
  });
});

void describe('field selector matching (Kubernetes TestSelectorMatches)', () => {
  const expectMatch = (selector: string, fs: Fields): void => assert.ok(matches(selector, fs), `${selector} should match ${JSON.stringify(fs)}`);
  const expectNoMatch = (selector: string, fs: Fields): void => assert.ok(!matches(selector, fs), `${selector} should not match ${JSON.stringify(fs)}`);

  void it('matches and does not match', () => {
    expectMatch('', { x: 'y' });
    expectMatch('x=y', { x: 'y' });
    expectMatch('x=y,z=w', { x: 'y', z: 'w' });
    expectMatch('x!=y,z!=w', { x: 'z', z: 'a' });
    expectMatch('notin=in', { notin: 'in' });
    expectNoMatch('x=y', { x: 'z' });
    expectNoMatch('x=y,z=w', { x: 'w', z: 'w' });
    expectNoMatch('x!=y,z!=w', { x: 'z', z: 'w' });
    const fieldset = { foo: 'bar', baz: 'blah', complex: '=value\\,\\' };
    expectMatch('foo=bar', fieldset);
    expectMatch('baz=blah', fieldset);
    expectMatch('foo=bar,baz=blah', fieldset);
    expectMatch('foo=bar,baz=blah,complex=\\=value\\\\\\,\\\\', fieldset);
    expectNoMatch('foo=blah', fieldset);
    expectNoMatch('baz=bar', fieldset);
    expectNoMatch('foo=bar,foobar=bar,baz=blah', fieldset);
  });

  void it('treats a missing field as the empty string', () => {
    expectMatch('spec.nodeName=', { 'metadata.name': 'p' });
    expectMatch('spec.nodeName!=node1', {});
    expectNoMatch('spec.nodeName!=', {});
  });

  void it('supports everything, sets and one-term selectors', () => {
    assert.ok(everything().matches({ x: 'y' }));
    assert.ok(everything().empty());
    assert.ok(oneTermEqualSelector('x', 'y').matches({ x: 'y' }));
    assert.ok(!oneTermEqualSelector('x', 'y').matches({ x: 'z' }));
    const labelset = { foo: 'bar', baz: 'blah' };
    for (const s of [{}, { foo: 'bar' }, { baz: 'blah' }, { foo: 'bar', baz: 'blah' }] as Fields[]) assert.ok(selectorFromSet(s).matches(labelset));
    assert.ok(!selectorFromSet({ foo: '=blah' }).matches(labelset));
    assert.ok(!selectorFromSet({ foo: '=bar', foobar: 'bar', baz: 'blah' }).matches(labelset));
    assert.ok(selectorFromSet(null).empty());
  });

  void it('reports exact-match requirements (TestRequiresExactMatch)', () => {
    assert.equal(selectorFromSet({}).requiresExactMatch('test'), undefined);
    assert.equal(oneTermEqualSelector('a', 'b').requiresExactMatch('test'), undefined);
    assert.equal(oneTermEqualSelector('test', 'b').requiresExactMatch('test'), 'b');
    assert.equal(oneTermEqualSelector('test', '').requiresExactMatch('test'), '');
    assert.equal(parseSelector('test!=b').requiresExactMatch('test'), undefined);
    assert.equal(parseSelector('a=c,test=b').requiresExactMatch('test'), 'b');
  });

  void it('transforms terms (TestTransform)', () => {
    const id = (f: string, v: string): [string, string] => [f, v];
    assert.equal(parseSelector('').transform(id).toString(), '');
    assert.equal(parseSelector('a=b,c=d').transform(id).toString(), 'a=b,c=d');
    assert.equal(parseSelector('a=b,c=d').transform((f, v) => (f === 'a' ? ['e', 'f'] : [f, v])).toString(), 'e=f,c=d');
    const emptied = parseSelector('a=b').transform(() => ['', '']);
    assert.ok(emptied.empty());
    assert.equal(emptied.toString(), '');
    assert.equal(parseSelector('a=b,c=d,e=f').transform((f, v) => (f === 'c' ? ['', ''] : [f, v])).toString(), 'a=b,e=f');
    assert.ok(new FieldSelector().empty());
  });
});
