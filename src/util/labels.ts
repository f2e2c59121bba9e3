// Label selectors as Kubernetes' k8s.io/apimachinery/pkg/labels (1.23 era): the lexer,
// the parser and its error messages, requirement validation and matching.
//
// Grammar:
//   <selector>    ::= <requirement> | <requirement> "," <selector>
//   <requirement> ::= [!] KEY [ ("in" | "notin") "(" VALUES ")" | ("=" | "==" | "!=" | ">" | "<") VALUE ]
// Whitespace (space, tab, CR, LF) separates tokens.

import {
  aggregateMessage,
  childOf,
  compareBytes,
  FieldError,
  FieldPath,
  goQuote,
  invalid,
  isQualifiedName,
  isValidLabelValue,
  notSupported,
  type MaybePath,
} from './validation.js';

export { isQualifiedName, isValidLabelValue } from './validation.js';

/** selection.Operator values */
export const Operator = {
  DoesNotExist: '!',
  Equals: '=',
  DoubleEquals: '==',
  In: 'in',
  NotEquals: '!=',
  NotIn: 'notin',
  Exists: 'exists',
  GreaterThan: 'gt',
  LessThan: 'lt',
} as const;
export type Operator = (typeof Operator)[keyof typeof Operator];

const UNARY_OPERATORS: readonly string[] = [Operator.Exists, Operator.DoesNotExist];
const BINARY_OPERATORS: readonly string[] = [
  Operator.In,
  Operator.NotIn,
  Operator.Equals,
  Operator.DoubleEquals,
  Operator.NotEquals,
  Operator.GreaterThan,
  Operator.LessThan,
];
const VALID_OPERATORS: readonly string[] = [...BINARY_OPERATORS, ...UNARY_OPERATORS];

/** A set of labels. */
export type Labels = Readonly<Record<string, string>>;

/** The error thrown when a selector string cannot be parsed; the message is Kubernetes'. */
export class SelectorParseError extends Error {
  constructor(
    message: string,
    /** the field errors behind the message, when it came from requirement validation */
    readonly fieldErrors: readonly FieldError[] = [],
  ) {
    super(message);
    this.name = 'SelectorParseError';
  }
}

const INT64_MAX = (1n << 63n) - 1n;
const INT64_MIN = -(1n << 63n);

/** Go strconv.ParseInt(s, 10, 64), or null */
function parseInt64(s: string): bigint | null {
  if (!/^[+-]?[0-9]+$/.test(s)) return null;
  const v = BigInt(s);
  return v > INT64_MAX || v < INT64_MIN ? null : v;
}

/** A single key/operator/values requirement. */
export class Requirement {
  constructor(
    readonly key: string,
    readonly operator: Operator,
    /** the values; for parsed selectors these are sorted and de-duplicated */
    readonly values: readonly string[],
  ) {}

  private hasValue(v: string): boolean {
    return this.values.includes(v);
  }

  matches(labels: Labels): boolean {
    const has = Object.hasOwn(labels, this.key);
    switch (this.operator) {
      case Operator.In:
      case Operator.Equals:
      case Operator.DoubleEquals:
        return has && this.hasValue(labels[this.key]!);
      case Operator.NotIn:
      case Operator.NotEquals:
        return !has || !this.hasValue(labels[this.key]!);
      case Operator.Exists:
        return has;
      case Operator.DoesNotExist:
        return !has;
      case Operator.GreaterThan:
      case Operator.LessThan: {
        if (!has) return false;
        const lv = parseInt64(labels[this.key]!);
        if (lv === null || this.values.length !== 1) return false;
        const rv = parseInt64(this.values[0]!);
        if (rv === null) return false;
        return this.operator === Operator.GreaterThan ? lv > rv : lv < rv;
      }
      default:
        return false;
    }
  }

  toString(): string {
    let out = this.operator === Operator.DoesNotExist ? '!' + this.key : this.key;
    switch (this.operator) {
      case Operator.Equals:
        out += '=';
        break;
      case Operator.DoubleEquals:
        out += '==';
        break;
      case Operator.NotEquals:
        out += '!=';
        break;
      case Operator.In:
        out += ' in ';
        break;
      case Operator.NotIn:
        out += ' notin ';
        break;
      case Operator.GreaterThan:
        out += '>';
        break;
      case Operator.LessThan:
        out += '<';
        break;
      case Operator.Exists:
      case Operator.DoesNotExist:
        return out;
    }
    const inSet = this.operator === Operator.In || this.operator === Operator.NotIn;
    if (inSet) out += '(';
    out += this.values.length === 1 ? this.values[0] : [...this.values].sort(compareBytes).join(',');
    if (inSet) out += ')';
    return out;
  }
}

/** A label selector: the AND of its requirements. An empty selector matches everything. */
export class LabelSelector {
  /** @param nothing a selector that matches nothing (labels.Nothing()) */
  constructor(
    readonly requirements: readonly Requirement[] = [],
    private readonly nothing = false,
  ) {}

  matches(labels: Labels): boolean {
    if (this.nothing) return false;
    return this.requirements.every((r) => r.matches(labels));
  }

  /** True when the selector does not restrict anything. */
  empty(): boolean {
    return !this.nothing && this.requirements.length === 0;
  }

  /** True for labels.Nothing(). */
  isNothing(): boolean {
    return this.nothing;
  }

  /** If the selector requires one exact value for the label, that value. */
  requiresExactMatch(label: string): string | undefined {
    for (const r of this.requirements) {
      if (r.key !== label) continue;
      if ((r.operator === Operator.Equals || r.operator === Operator.DoubleEquals || r.operator === Operator.In) && r.values.length === 1) {
        return r.values[0];
      }
      return undefined;
    }
    return undefined;
  }

  /** A new selector with more requirements, re-sorted by key. */
  add(...reqs: Requirement[]): LabelSelector {
    return new LabelSelector(sortByKey([...this.requirements, ...reqs]));
  }

  toString(): string {
    return this.requirements.map((r) => r.toString()).join(',');
  }
}

function sortByKey(reqs: Requirement[]): Requirement[] {
  // stable, byte-wise by key
  return reqs.map((r, i) => ({ r, i })).sort((a, b) => compareBytes(a.r.key, b.r.key) || a.i - b.i).map((x) => x.r);
}

/** labels.Everything() */
export function everything(): LabelSelector {
  return new LabelSelector([]);
}

/** labels.Nothing() */
export function nothing(): LabelSelector {
  return new LabelSelector([], true);
}

function validateLabelKey(key: string, path: MaybePath): FieldError | null {
  const errs = isQualifiedName(key);
  return errs.length === 0 ? null : invalid(path, key, errs.join('; '));
}

function validateLabelValue(key: string, value: string, path: FieldPath): FieldError | null {
  const errs = isValidLabelValue(value);
  return errs.length === 0 ? null : invalid(path.key(key), value, errs.join('; '));
}

/**
 * NewRequirement: validates a requirement. Returns the requirement and the field errors
 * (Kubernetes returns both; callers treat any error as failure). `path` prefixes the
 * field names in the errors ("key", "values[0]", "operator").
 */
export function newRequirement(key: string, op: string, values: readonly string[], path?: MaybePath): { requirement: Requirement; errors: FieldError[] } {
  const errors: FieldError[] = [];
  const keyErr = validateLabelKey(key, childOf(path, 'key'));
  if (keyErr) errors.push(keyErr);
  const valuePath = childOf(path, 'values');
  switch (op) {
    case Operator.In:
    case Operator.NotIn:
      if (values.length === 0) errors.push(invalid(valuePath, [...values], "for 'in', 'notin' operators, values set can't be empty"));
      break;
    case Operator.Equals:
    case Operator.DoubleEquals:
    case Operator.NotEquals:
      if (values.length !== 1) errors.push(invalid(valuePath, [...values], 'exact-match compatibility requires one single value'));
      break;
    case Operator.Exists:
    case Operator.DoesNotExist:
      if (values.length !== 0) errors.push(invalid(valuePath, [...values], 'values set must be empty for exists and does not exist'));
      break;
    case Operator.GreaterThan:
    case Operator.LessThan:
      if (values.length !== 1) errors.push(invalid(valuePath, [...values], "for 'Gt', 'Lt' operators, exactly one value is required"));
      values.forEach((v, i) => {
        if (parseInt64(v) === null) errors.push(invalid(valuePath.index(i), v, "for 'Gt', 'Lt' operators, the value must be an integer"));
      });
      break;
    default:
      errors.push(notSupported(childOf(path, 'operator'), op, VALID_OPERATORS));
  }
  values.forEach((v, i) => {
    const e = validateLabelValue(key, v, valuePath.index(i));
    if (e) errors.push(e);
  });
  return { requirement: new Requirement(key, op as Operator, [...values]), errors };
}

// ---------------------------------------------------------------------------
// Lexer
// ---------------------------------------------------------------------------

const enum Token {
  Error,
  EndOfString,
  ClosedPar,
  Comma,
  DoesNotExist,
  DoubleEquals,
  Equals,
  GreaterThan,
  Identifier,
  In,
  LessThan,
  NotEquals,
  NotIn,
  OpenPar,
}

const STRING_TO_TOKEN = new Map<string, Token>([
  [')', Token.ClosedPar],
  [',', Token.Comma],
  ['!', Token.DoesNotExist],
  ['==', Token.DoubleEquals],
  ['=', Token.Equals],
  ['>', Token.GreaterThan],
  ['in', Token.In],
  ['<', Token.LessThan],
  ['!=', Token.NotEquals],
  ['notin', Token.NotIn],
  ['(', Token.OpenPar],
]);

interface Item {
  tok: Token;
  lit: string;
}

const NUL = '\0';

function isWhitespace(ch: string): boolean {
  return ch === ' ' || ch === '\t' || ch === '\r' || ch === '\n';
}

function isSpecialSymbol(ch: string): boolean {
  return ch === '=' || ch === '!' || ch === '(' || ch === ')' || ch === ',' || ch === '>' || ch === '<';
}

class Lexer {
  private pos = 0;
  constructor(private readonly s: string) {}

  /** The next character, or NUL at the end (a NUL character in the input reads the same). */
  private read(): string {
    if (this.pos < this.s.length) return this.s[this.pos++]!;
    return NUL;
  }

  private unread(): void {
    this.pos--;
  }

  private scanIDOrKeyword(): Item {
    let buf = '';
    for (;;) {
      const ch = this.read();
      if (ch === NUL) break;
      if (isSpecialSymbol(ch) || isWhitespace(ch)) {
        this.unread();
        break;
      }
      buf += ch;
    }
    const tok = STRING_TO_TOKEN.get(buf);
    return tok !== undefined ? { tok, lit: buf } : { tok: Token.Identifier, lit: buf };
  }

  private scanSpecialSymbol(): Item {
    let last: Item | null = null;
    let buf = '';
    for (;;) {
      const ch = this.read();
      if (ch === NUL) break;
      if (isSpecialSymbol(ch)) {
        buf += ch;
        const tok = STRING_TO_TOKEN.get(buf);
        if (tok !== undefined) {
          last = { tok, lit: buf };
        } else if (last !== null) {
          this.unread();
          break;
        }
      } else {
        this.unread();
        break;
      }
    }
    if (last === null) return { tok: Token.Error, lit: `error expected: keyword found '${buf}'` };
    return last;
  }

  lex(): Item {
    let ch = this.read();
    while (isWhitespace(ch)) ch = this.read();
    if (ch === NUL) return { tok: Token.EndOfString, lit: '' };
    this.unread();
    return isSpecialSymbol(ch) ? this.scanSpecialSymbol() : this.scanIDOrKeyword();
  }
}

// ---------------------------------------------------------------------------
// Parser
// ---------------------------------------------------------------------------

const enum Context {
  KeyAndOperator,
  Values,
}

class Parser {
  private items: Item[] = [];
  private position = 0;

  constructor(
    private readonly lexer: Lexer,
    private readonly path: MaybePath,
  ) {}

  private lookahead(ctx: Context): Item {
    return this.adjust(this.itemAt(this.position), ctx);
  }

  private consume(ctx: Context): Item {
    return this.adjust(this.itemAt(this.position++), ctx);
  }

  /** The grammar never reads past the EndOfString item that scan() always appends. */
  private itemAt(index: number): Item {
    const item = this.items[index];
    if (item === undefined) throw new Error(`selector parser read past the end of input (item ${index} of ${this.items.length})`);
    return item;
  }

  /** In a values context the keywords 'in' and 'notin' are ordinary identifiers. */
  private adjust(item: Item, ctx: Context): Item {
    if (ctx === Context.Values && (item.tok === Token.In || item.tok === Token.NotIn)) return { tok: Token.Identifier, lit: item.lit };
    return item;
  }

  private scan(): void {
    for (;;) {
      const item = this.lexer.lex();
      this.items.push(item);
      if (item.tok === Token.EndOfString) break;
    }
  }

  parse(): Requirement[] {
    this.scan();
    const reqs: Requirement[] = [];
    for (;;) {
      const { tok, lit } = this.lookahead(Context.Values);
      switch (tok) {
        case Token.Identifier:
        case Token.DoesNotExist: {
          let r: Requirement;
          try {
            r = this.parseRequirement();
          } catch (e) {
            if (e instanceof SelectorParseError) throw new SelectorParseError(`unable to parse requirement: ${e.message}`, e.fieldErrors);
            throw e;
          }
          reqs.push(r);
          const next = this.consume(Context.Values);
          switch (next.tok) {
            case Token.EndOfString:
              return reqs;
            case Token.Comma: {
              const after = this.lookahead(Context.Values);
              if (after.tok !== Token.Identifier && after.tok !== Token.DoesNotExist) {
                throw new SelectorParseError(`found '${after.lit}', expected: identifier after ','`);
              }
              break;
            }
            default:
              throw new SelectorParseError(`found '${next.lit}', expected: ',' or 'end of string'`);
          }
          break;
        }
        case Token.EndOfString:
          return reqs;
        default:
          throw new SelectorParseError(`found '${lit}', expected: !, identifier, or 'end of string'`);
      }
    }
  }

  private build(key: string, op: Operator, values: string[]): Requirement {
    const { requirement, errors } = newRequirement(key, op, values, this.path);
    if (errors.length > 0) throw new SelectorParseError(aggregateMessage(errors), errors);
    return requirement;
  }

  private parseRequirement(): Requirement {
    const { key, operator } = this.parseKeyAndInferOperator();
    if (operator === Operator.Exists || operator === Operator.DoesNotExist) return this.build(key, operator, []);
    const op = this.parseOperator();
    let values: Set<string>;
    if (op === Operator.In || op === Operator.NotIn) values = this.parseValues();
    else values = this.parseExactValue();
    return this.build(key, op, [...values].sort(compareBytes));
  }

  private parseKeyAndInferOperator(): { key: string; operator: Operator | null } {
    let operator: Operator | null = null;
    let item = this.consume(Context.Values);
    if (item.tok === Token.DoesNotExist) {
      operator = Operator.DoesNotExist;
      item = this.consume(Context.Values);
    }
    if (item.tok !== Token.Identifier) throw new SelectorParseError(`found '${item.lit}', expected: identifier`);
    const keyErr = validateLabelKey(item.lit, this.path);
    if (keyErr) throw new SelectorParseError(keyErr.toString(), [keyErr]);
    const t = this.lookahead(Context.Values).tok;
    if ((t === Token.EndOfString || t === Token.Comma) && operator !== Operator.DoesNotExist) operator = Operator.Exists;
    return { key: item.lit, operator };
  }

  private parseOperator(): Operator {
    const { tok, lit } = this.consume(Context.KeyAndOperator);
    switch (tok) {
      case Token.In:
        return Operator.In;
      case Token.Equals:
        return Operator.Equals;
      case Token.DoubleEquals:
        return Operator.DoubleEquals;
      case Token.GreaterThan:
        return Operator.GreaterThan;
      case Token.LessThan:
        return Operator.LessThan;
      case Token.NotIn:
        return Operator.NotIn;
      case Token.NotEquals:
        return Operator.NotEquals;
      default:
        throw new SelectorParseError(`found '${lit}', expected: ${BINARY_OPERATORS.join(', ')}`);
    }
  }

  private parseValues(): Set<string> {
    const open = this.consume(Context.Values);
    if (open.tok !== Token.OpenPar) throw new SelectorParseError(`found '${open.lit}' expected: '('`);
    const { tok, lit } = this.lookahead(Context.Values);
    switch (tok) {
      case Token.Identifier:
      case Token.Comma: {
        const s = this.parseIdentifiersList();
        if (this.consume(Context.Values).tok !== Token.ClosedPar) throw new SelectorParseError(`found '${lit}', expected: ')'`);
        return s;
      }
      case Token.ClosedPar:
        this.consume(Context.Values);
        return new Set(['']);
      default:
        throw new SelectorParseError(`found '${lit}', expected: ',', ')' or identifier`);
    }
  }

  private parseIdentifiersList(): Set<string> {
    const s = new Set<string>();
    for (;;) {
      const { tok, lit } = this.consume(Context.Values);
      switch (tok) {
        case Token.Identifier: {
          s.add(lit);
          const next = this.lookahead(Context.Values);
          if (next.tok === Token.Comma) continue;
          if (next.tok === Token.ClosedPar) return s;
          throw new SelectorParseError(`found '${next.lit}', expected: ',' or ')'`);
        }
        case Token.Comma: {
          if (s.size === 0) s.add(''); // "(,"
          const next = this.lookahead(Context.Values).tok;
          if (next === Token.ClosedPar) {
            s.add(''); // ",)"
            return s;
          }
          if (next === Token.Comma) {
            this.consume(Context.Values);
            s.add(''); // ",,"
          }
          break;
        }
        default:
          throw new SelectorParseError(`found '${lit}', expected: ',', or identifier`);
      }
    }
  }

  private parseExactValue(): Set<string> {
    const ahead = this.lookahead(Context.Values).tok;
    if (ahead === Token.EndOfString || ahead === Token.Comma) return new Set(['']);
    const { tok, lit } = this.consume(Context.Values);
    if (tok === Token.Identifier) return new Set([lit]);
    throw new SelectorParseError(`found '${lit}', expected: identifier`);
  }
}

/**
 * labels.Parse: parses a label selector string. Throws SelectorParseError with
 * Kubernetes' message. `path`, when given, prefixes field names in validation errors.
 */
export function parse(selector: string, path?: MaybePath): LabelSelector {
  const reqs = new Parser(new Lexer(selector), path).parse();
  return new LabelSelector(sortByKey(reqs));
}

/** Parses a selector, returning the error instead of throwing it. */
export function tryParse(selector: string, path?: MaybePath): LabelSelector | SelectorParseError {
  try {
    return parse(selector, path);
  } catch (e) {
    if (e instanceof SelectorParseError) return e;
    throw e;
  }
}

/** Whether the selector (a parsed selector or a selector string) matches the labels. */
export function matches(selector: LabelSelector | string, labels: Labels | null | undefined): boolean {
  const sel = typeof selector === 'string' ? parse(selector) : selector;
  return sel.matches(labels ?? {});
}

/** SelectorFromSet: requires every label in the set to have exactly its value. No validation. */
export function selectorFromSet(set: Labels | null | undefined): LabelSelector {
  if (!set) return everything();
  return new LabelSelector(sortByKey(Object.entries(set).map(([k, v]) => new Requirement(k, Operator.Equals, [v]))));
}

/** ValidatedSelectorFromSet: as selectorFromSet, but validates keys and values; throws SelectorParseError. */
export function validatedSelectorFromSet(set: Labels | null | undefined): LabelSelector {
  if (!set) return everything();
  const reqs: Requirement[] = [];
  for (const [k, v] of Object.entries(set)) {
    const { requirement, errors } = newRequirement(k, Operator.Equals, [v]);
    if (errors.length > 0) throw new SelectorParseError(aggregateMessage(errors), errors);
    reqs.push(requirement);
  }
  return new LabelSelector(sortByKey(reqs));
}

/** A metav1.LabelSelector as found in objects. */
export interface LabelSelectorSpec {
  matchLabels?: Record<string, string> | null;
  matchExpressions?: { key: string; operator: string; values?: string[] | null }[] | null;
}

/**
 * metav1.LabelSelectorAsSelector: a null/undefined selector matches nothing, an empty one
 * matches everything. Throws SelectorParseError on an invalid selector.
 */
export function labelSelectorAsSelector(ps: LabelSelectorSpec | null | undefined): LabelSelector {
  if (ps === null || ps === undefined) return nothing();
  const matchLabels = Object.entries(ps.matchLabels ?? {});
  const exprs = ps.matchExpressions ?? [];
  if (matchLabels.length + exprs.length === 0) return everything();
  const reqs: Requirement[] = [];
  const take = (key: string, op: Operator, values: string[]): void => {
    const { requirement, errors } = newRequirement(key, op, values);
    if (errors.length > 0) throw new SelectorParseError(aggregateMessage(errors), errors);
    reqs.push(requirement);
  };
  for (const [k, v] of matchLabels) take(k, Operator.Equals, [v]);
  for (const expr of exprs) {
    const op = ({ In: Operator.In, NotIn: Operator.NotIn, Exists: Operator.Exists, DoesNotExist: Operator.DoesNotExist } as Record<string, Operator>)[
      expr.operator
    ];
    if (op === undefined) throw new SelectorParseError(`${goQuote(expr.operator)} is not a valid pod selector operator`);
    take(expr.key, op, [...(expr.values ?? [])]);
  }
  return new LabelSelector(sortByKey(reqs));
}
