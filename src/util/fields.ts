// Field selectors as Kubernetes' k8s.io/apimachinery/pkg/fields (1.23 era).
//
// A selector is a comma-separated list of terms `field=value`, `field==value` or
// `field!=value`. In values, `\`, `,` and `=` must be escaped with a backslash; the field
// part is not unescaped and is split at the first operator. Terms are sorted.

import { compareBytes } from './validation.js';

/** A set of fields, e.g. { 'metadata.name': 'foo', 'status.phase': 'Running' }. */
export type Fields = Readonly<Record<string, string>>;

export type FieldOperator = '=' | '==' | '!=';

export class FieldSelectorParseError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'FieldSelectorParseError';
  }
}

/** One term of a field selector. `operator` is '=' for both '=' and '=='. */
export interface FieldRequirement {
  field: string;
  operator: '=' | '!=';
  value: string;
}

/** Escapes a literal value for use in a field selector (EscapeValue). */
export function escapeValue(s: string): string {
  return s.replace(/[\\,=]/g, (c) => '\\' + c);
}

/**
 * Unescapes a field selector value (UnescapeValue); throws FieldSelectorParseError on an
 * unknown escape sequence or an unescaped ',' or '='.
 */
export function unescapeValue(s: string): string {
  if (!/[\\,=]/.test(s)) return s;
  let out = '';
  let inSlash = false;
  for (const c of s) {
    if (inSlash) {
      if (c === '\\' || c === ',' || c === '=') {
        out += c;
      } else {
        throw new FieldSelectorParseError(`invalid field selector: invalid escape sequence: \\${c}`);
      }
      inSlash = false;
      continue;
    }
    if (c === '\\') {
      inSlash = true;
    } else if (c === ',' || c === '=') {
      // Kubernetes prints the rune with %v, i.e. as its code point number
      throw new FieldSelectorParseError(`invalid field selector: unescaped character in value: ${c.codePointAt(0)}`);
    } else {
      out += c;
    }
  }
  if (inSlash) throw new FieldSelectorParseError('invalid field selector: invalid escape sequence: \\');
  return out;
}

/** Splits at commas that are not escaped; escapes are kept in the terms. */
function splitTerms(selector: string): string[] {
  if (selector.length === 0) return [];
  const terms: string[] = [];
  let start = 0;
  let inSlash = false;
  for (let i = 0; i < selector.length; i++) {
    const c = selector[i];
    if (inSlash) inSlash = false;
    else if (c === '\\') inSlash = true;
    else if (c === ',') {
      terms.push(selector.slice(start, i));
      start = i + 1;
    }
  }
  terms.push(selector.slice(start));
  return terms;
}

const TERM_OPERATORS = ['!=', '==', '='] as const;

function splitTerm(term: string): { lhs: string; op: (typeof TERM_OPERATORS)[number]; rhs: string } | null {
  for (let i = 0; i < term.length; i++) {
    for (const op of TERM_OPERATORS) {
      if (term.startsWith(op, i)) return { lhs: term.slice(0, i), op, rhs: term.slice(i + op.length) };
    }
  }
  return null;
}

/** A field of `fields`, '' when it has none. */
function fieldValue(fields: Fields, field: string): string {
  return Object.hasOwn(fields, field) ? fields[field]! : '';
}

export class FieldSelector {
  constructor(readonly requirements: readonly FieldRequirement[] = []) {}

  matches(fields: Fields): boolean {
    return this.matchesBy(fields, fieldValue);
  }

  /**
   * Whether the fields `get` reads from `source` ('' for one it does not have) match: for a caller that reads
   * only the fields the selector names instead of building them all.
   */
  matchesBy<T>(source: T, get: (source: T, field: string) => string): boolean {
    for (const r of this.requirements) {
      const v = get(source, r.field);
      if (r.operator === '=' ? v !== r.value : v === r.value) return false;
    }
    return true;
  }

  /** True when the selector does not restrict anything. */
  empty(): boolean {
    return this.requirements.length === 0;
  }

  /** If the selector requires `field` to have one exact value, that value. */
  requiresExactMatch(field: string): string | undefined {
    return this.requirements.find((r) => r.field === field && r.operator === '=')?.value;
  }

  /**
   * Applies a transformation to every term (ParseAndTransformSelector's TransformFunc),
   * e.g. to convert legacy field names. Terms whose field and value both become empty
   * are dropped. The function may throw to reject a term.
   */
  transform(fn: (field: string, value: string) => [string, string]): FieldSelector {
    const out: FieldRequirement[] = [];
    for (const r of this.requirements) {
      const [field, value] = fn(r.field, r.value);
      if (field.length === 0 && value.length === 0) continue;
      out.push({ field, operator: r.operator, value });
    }
    return new FieldSelector(out);
  }

  toString(): string {
    return this.requirements.map((r) => `${r.field}${r.operator}${escapeValue(r.value)}`).join(',');
  }
}

/** fields.Everything() */
export function everything(): FieldSelector {
  return new FieldSelector([]);
}

/**
 * fields.ParseSelector: parses a field selector string; throws FieldSelectorParseError with
 * Kubernetes' message, e.g. for an unsupported operator:
 * "invalid selector: 'a>b'; can't understand 'a>b'".
 */
export function parseSelector(selector: string): FieldSelector {
  const parts = splitTerms(selector).sort(compareBytes);
  const reqs: FieldRequirement[] = [];
  for (const part of parts) {
    if (part === '') continue;
    const t = splitTerm(part);
    if (t === null) throw new FieldSelectorParseError(`invalid selector: '${selector}'; can't understand '${part}'`);
    const value = unescapeValue(t.rhs);
    reqs.push({ field: t.lhs, operator: t.op === '!=' ? '!=' : '=', value });
  }
  // a term with an empty field and value (e.g. "=") selects everything
  return new FieldSelector(reqs.filter((r) => !(r.field.length === 0 && r.value.length === 0)));
}

/** Parses a field selector, returning the error instead of throwing it. */
export function tryParseSelector(selector: string): FieldSelector | FieldSelectorParseError {
  try {
    return parseSelector(selector);
  } catch (e) {
    if (e instanceof FieldSelectorParseError) return e;
    throw e;
  }
}

/** Whether the selector (parsed, or a selector string) matches the fields. */
export function matches(selector: FieldSelector | string, fields: Fields): boolean {
  const sel = typeof selector === 'string' ? parseSelector(selector) : selector;
  return sel.matches(fields);
}

/** SelectorFromSet: every field must have exactly its value. */
export function selectorFromSet(set: Fields | null | undefined): FieldSelector {
  if (!set) return everything();
  return new FieldSelector(Object.entries(set).map(([field, value]) => ({ field, operator: '=' as const, value })));
}

/** OneTermEqualSelector */
export function oneTermEqualSelector(field: string, value: string): FieldSelector {
  return new FieldSelector([{ field, operator: '=', value }]);
}
