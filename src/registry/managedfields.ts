/**
 * Field ownership for server-side apply, as sigs.k8s.io/structured-merge-diff (v4, the version Kubernetes
 * 1.23 uses) and k8s.io/apiserver's fieldmanager define it:
 *
 *   - path elements and field sets (fieldpath: element.go, set.go, path.go) with their order and printing;
 *   - the FieldsV1 encoding of a set (fieldpath/serialize.go, serialize-pe.go);
 *   - the schema of a kind seen as structured-merge-diff types: atomic/set/map lists, atomic/granular maps
 *     and structs, untyped values (kube-openapi's schemaconv);
 *   - the set of fields an object sets (typed/tofieldset.go) and the comparison of two objects
 *     (typed.Compare: added, modified, removed);
 *   - managedFields entries: decoding, validation, encoding and their order (fieldmanager internal/
 *     managedfields.go), manager identifiers, and the Update path of the field manager (merge/update.go
 *     Update, managedfieldsupdater.go, stripmeta.go, capmanagers.go, skipnonapplied.go, fieldmanager.go).
 *
 * Objects are plain JSON. Everything here is pure.
 */
import { compareBytes as compareUtf8, goFloat, goQuote } from '../util/validation.js';
import { REF_PREFIX, resolveSchema, type Definitions, type Schema } from './schema.js';

// ---------------------------------------------------------------------------
// JSON values as structured-merge-diff sees them (value/value.go)
// ---------------------------------------------------------------------------

/**
 * Compares strings by their UTF-8 bytes, as Go does (-1, 0, 1), without encoding them: below the
 * surrogates, UTF-16 code unit order is code point order and so UTF-8 byte order; strings that first
 * differ at a surrogate or above take the encoding comparison.
 */
function compareBytes(a: string, b: string): number {
  if (a === b) return 0;
  const n = a.length < b.length ? a.length : b.length;
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x === y) continue;
    if (x < 0xd800 && y < 0xd800) return x < y ? -1 : 1;
    return compareUtf8(a, b);
  }
  return a.length < b.length ? -1 : a.length > b.length ? 1 : 0;
}

export type JsonObject = Record<string, unknown>;

export function isJsonObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function hasOwn(o: object, k: string): boolean {
  return Object.prototype.hasOwnProperty.call(o, k);
}

/** The rank of a value's type in value.Compare: numbers, strings, booleans, lists, maps, null. */
function typeRank(v: unknown): number {
  if (typeof v === 'number') return 0;
  if (typeof v === 'string') return 1;
  if (typeof v === 'boolean') return 2;
  if (Array.isArray(v)) return 3;
  if (isJsonObject(v)) return 4;
  return 5; // null
}

/** value.Compare: a total order over JSON values (-1, 0, 1). */
export function compareValues(a: unknown, b: unknown): number {
  const ra = typeRank(a);
  const rb = typeRank(b);
  if (ra !== rb) return ra < rb ? -1 : 1;
  switch (ra) {
    case 0: {
      const x = a as number;
      const y = b as number;
      return x < y ? -1 : x > y ? 1 : 0;
    }
    case 1:
      return Math.sign(compareBytes(a as string, b as string));
    case 2:
      return a === b ? 0 : a === false ? -1 : 1;
    case 3: {
      const x = a as unknown[];
      const y = b as unknown[];
      for (let i = 0; ; i++) {
        if (i >= x.length && i >= y.length) return 0;
        if (i >= x.length) return -1;
        if (i >= y.length) return 1;
        const c = compareValues(x[i], y[i]);
        if (c !== 0) return c;
      }
    }
    case 4: {
      // MapCompare: the union of keys in lexical order; a missing key sorts after a present one.
      const x = a as JsonObject;
      const y = b as JsonObject;
      const lx = Object.keys(x).length;
      const ly = Object.keys(y).length;
      if (lx === 0 && ly === 0) return 0;
      const keys = [...new Set([...Object.keys(x), ...Object.keys(y)])].sort(compareBytes);
      let i = 0;
      for (const k of keys) {
        let c: number;
        if (i === lx) c = -1;
        else if (i === ly) c = 1;
        else if (!hasOwn(x, k)) c = 1;
        else if (!hasOwn(y, k)) c = -1;
        else c = compareValues(x[k], y[k]);
        i++;
        if (c !== 0) return c;
      }
      return 0;
    }
    default:
      return 0;
  }
}

/** value.Equals. */
export function equalValues(a: unknown, b: unknown): boolean {
  if (typeof a === 'number' || typeof b === 'number') return a === b;
  if (typeof a === 'string' || typeof b === 'string') return a === b;
  if (typeof a === 'boolean' || typeof b === 'boolean') return a === b;
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    return a.every((x, i) => equalValues(x, b[i]));
  }
  if (isJsonObject(a) || isJsonObject(b)) {
    if (!isJsonObject(a) || !isJsonObject(b)) return false;
    const ka = Object.keys(a).filter((k) => a[k] !== undefined);
    const kb = Object.keys(b).filter((k) => b[k] !== undefined);
    if (ka.length !== kb.length) return false;
    return ka.every((k) => hasOwn(b, k) && b[k] !== undefined && equalValues(a[k], b[k]));
  }
  return (a ?? null) === (b ?? null);
}

const GO_JSON_ESCAPES: Record<string, string> = { '"': '\\"', '\\': '\\\\', '\n': '\\n', '\r': '\\r', '\t': '\\t' };

/** Characters goJsonString writes other than as themselves (most strings have none). */
// eslint-disable-next-line no-control-regex -- control characters are what Go escapes
const NEEDS_GO_ESCAPE = /["\\\u0000-\u001f<>&\u2028\u2029\ud800-\udfff]/;

/** A string as Go's encoding/json writes it (HTML characters and U+2028/2029 escaped). */
export function goJsonString(s: string): string {
  if (!NEEDS_GO_ESCAPE.test(s)) return '"' + s + '"';
  let out = '"';
  for (let i = 0; i < s.length; i++) {
    const ch = s[i] as string;
    const c = s.charCodeAt(i);
    const esc = GO_JSON_ESCAPES[ch];
    if (esc !== undefined) out += esc;
    else if (c < 0x20 || ch === '<' || ch === '>' || ch === '&' || c === 0x2028 || c === 0x2029) {
      out += '\\u' + c.toString(16).padStart(4, '0');
    } else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && s.charCodeAt(i + 1) >= 0xdc00 && s.charCodeAt(i + 1) <= 0xdfff) {
      out += ch + (s[i + 1] as string);
      i++;
    } else if (c >= 0xd800 && c <= 0xdfff) out += '\ufffd';
    else out += ch;
  }
  return out + '"';
}

/** A JSON value as Go's encoding/json writes an interface{} (map keys sorted). */
export function goJson(v: unknown): string {
  if (v === null || v === undefined) return 'null';
  if (typeof v === 'string') return goJsonString(v);
  if (typeof v === 'number') return Number.isFinite(v) ? String(v) : 'null';
  if (typeof v === 'boolean') return String(v);
  if (Array.isArray(v)) return '[' + v.map((e) => goJson(e)).join(',') + ']';
  if (isJsonObject(v)) {
    const keys = Object.keys(v)
      .filter((k) => v[k] !== undefined)
      .sort(compareBytes);
    return '{' + keys.map((k) => goJsonString(k) + ':' + goJson(v[k])).join(',') + '}';
  }
  return 'null';
}

/** value.ToString: how a key or set value prints in a path. */
function valueToString(v: unknown): string {
  if (v === null || v === undefined) return 'null';
  if (typeof v === 'number') return Number.isInteger(v) ? String(v) : goFloat(v);
  if (typeof v === 'string') return goQuote(v);
  if (typeof v === 'boolean') return String(v);
  if (Array.isArray(v)) return '[' + v.map((e) => valueToString(e)).join(',') + ']';
  if (isJsonObject(v)) {
    return Object.keys(v)
      .sort(compareBytes)
      .map((k) => `${k}=${valueToString(v[k])}`)
      .join('');
  }
  return '{{undefined}}';
}

// ---------------------------------------------------------------------------
// Path elements (fieldpath/element.go, path.go)
// ---------------------------------------------------------------------------

/** One field of an associative list key. */
export interface KeyField {
  name: string;
  value: unknown;
}

/**
 * Selects a child: a field of a map or struct, an item of a map list by its key fields (sorted by name),
 * an item of a set by its value, or an item of an atomic list by its index.
 */
export type PathElement = { field: string } | { key: KeyField[] } | { value: unknown } | { index: number };

export type Path = PathElement[];

export const pe = {
  field: (name: string): PathElement => ({ field: name }),
  key: (fields: Record<string, unknown>): PathElement => ({
    key: Object.keys(fields)
      .sort(compareBytes)
      .map((name) => ({ name, value: fields[name] })),
  }),
  value: (value: unknown): PathElement => ({ value }),
  index: (index: number): PathElement => ({ index }),
};

function peRank(e: PathElement): number {
  if ('field' in e) return 0;
  if ('key' in e) return 1;
  if ('value' in e) return 2;
  return 3;
}

function compareKeys(a: KeyField[], b: KeyField[]): number {
  for (let i = 0; ; i++) {
    if (i >= a.length && i >= b.length) return 0;
    if (i >= a.length) return -1;
    if (i >= b.length) return 1;
    const x = a[i] as KeyField;
    const y = b[i] as KeyField;
    const c = Math.sign(compareBytes(x.name, y.name));
    if (c !== 0) return c;
    const d = compareValues(x.value, y.value);
    if (d !== 0) return d;
  }
}

/** PathElement.Compare: fields, then keys, then values, then indexes. */
export function comparePathElements(a: PathElement, b: PathElement): number {
  const ra = peRank(a);
  const rb = peRank(b);
  if (ra !== rb) return ra < rb ? -1 : 1;
  if ('field' in a) return Math.sign(compareBytes(a.field, (b as { field: string }).field));
  if ('key' in a) return compareKeys(a.key, (b as { key: KeyField[] }).key);
  if ('value' in a) return compareValues(a.value, (b as { value: unknown }).value);
  const x = a.index;
  const y = (b as { index: number }).index;
  return x < y ? -1 : x > y ? 1 : 0;
}

export function pathElementEquals(a: PathElement, b: PathElement): boolean {
  if (peRank(a) !== peRank(b)) return false;
  if ('key' in a) {
    const bk = (b as { key: KeyField[] }).key;
    return a.key.length === bk.length && a.key.every((f, i) => f.name === bk[i]?.name && equalValues(f.value, bk[i]?.value));
  }
  if ('value' in a) return equalValues(a.value, (b as { value: unknown }).value);
  return comparePathElements(a, b) === 0;
}

/** PathElement.String(): `.name`, `[k=v,...]`, `[=v]`, `[i]`. */
export function pathElementString(e: PathElement): string {
  if ('field' in e) return '.' + e.field;
  if ('key' in e) return '[' + e.key.map((f) => `${f.name}=${valueToString(f.value)}`).join(',') + ']';
  if ('value' in e) return `[=${valueToString(e.value)}]`;
  return `[${e.index}]`;
}

/** Path.String(): the elements' strings joined, e.g. `.spec.containers[name="c"].image`. */
export function pathString(p: readonly PathElement[]): string {
  return p.map(pathElementString).join('');
}

/** SerializePathElement: `f:name`, `k:{"name":"c"}`, `v:"x"`, `i:0`. */
export function serializePathElement(e: PathElement): string {
  if ('field' in e) return 'f:' + e.field;
  if ('key' in e) return 'k:{' + e.key.map((f) => goJsonString(f.name) + ':' + goJson(f.value)).join(',') + '}';
  if ('value' in e) return 'v:' + goJson(e.value);
  return 'i:' + String(e.index);
}

/** The path element of an unknown type ('r:...'): readers drop them. */
class UnknownPathElementType extends Error {}

/** DeserializePathElement. */
export function deserializePathElement(s: string): PathElement {
  if (s.length < 2) throw new Error('key must be 2 characters long:');
  if (s[1] !== ':') throw new Error(`missing colon: ${s}`);
  const body = s.slice(2);
  switch (s[0]) {
    case 'f':
      return { field: body };
    case 'v': {
      let v: unknown;
      try {
        v = JSON.parse(body);
      } catch (e) {
        throw new Error(`parsing value: ${(e as Error).message}`, { cause: e });
      }
      return { value: v };
    }
    case 'k': {
      let v: unknown;
      try {
        v = JSON.parse(body);
      } catch (e) {
        throw new Error(`parsing key: ${(e as Error).message}`, { cause: e });
      }
      if (!isJsonObject(v)) throw new Error(`parsing key: expected an object, got ${body}`);
      return pe.key(v);
    }
    case 'i': {
      if (!/^[+-]?\d+$/.test(body)) throw new Error(`strconv.Atoi: parsing ${goQuote(body)}: invalid syntax`);
      return { index: Number(body) };
    }
    default:
      throw new UnknownPathElementType('unknown path element type');
  }
}

// ---------------------------------------------------------------------------
// Field sets (fieldpath/set.go)
// ---------------------------------------------------------------------------

interface SetNode {
  pe: PathElement;
  set: FieldSet;
}

function search<T>(arr: readonly T[], get: (t: T) => PathElement, e: PathElement): number {
  let lo = 0;
  let hi = arr.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (comparePathElements(get(arr[mid] as T), e) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

const idPE = (e: PathElement) => e;
const nodePE = (n: SetNode) => n.pe;

/**
 * A set of field paths, as a tree: `members` are the paths that end here, `children` the subtrees of
 * paths that continue. Both are kept sorted in path element order. The binary operations return new
 * sets and never change their operands.
 */
/**
 * A set of paths, as a sorted tree. The set operations (union, intersection, difference) share the
 * subtrees they do not change with their operands: only sets being built are mutated (insert, descend).
 */
export class FieldSet {
  members: PathElement[] = [];
  children: SetNode[] = [];

  static of(...paths: Path[]): FieldSet {
    const s = new FieldSet();
    for (const p of paths) s.insert(p);
    return s;
  }

  /** Adds a path (its parents are not added). The empty path is ignored: nobody owns the whole object. */
  insert(p: readonly PathElement[]): this {
    const n = p.length;
    if (n === 0) return this;
    // eslint-disable-next-line @typescript-eslint/no-this-alias -- the walk starts at this set
    let s: FieldSet = this;
    for (let i = 0; i < n - 1; i++) s = s.descend(p[i]!);
    s.insertMember(p[n - 1]!);
    return this;
  }

  private childPath(p: readonly PathElement[]): FieldSet | undefined {
    return p.reduce<FieldSet | undefined>((s, e) => s?.child(e), this);
  }

  private insertMember(e: PathElement): void {
    const i = search(this.members, idPE, e);
    if (i < this.members.length && comparePathElements(this.members[i] as PathElement, e) === 0) return;
    this.members.splice(i, 0, e);
  }

  /** The subset under `e`, created when missing. */
  descend(e: PathElement): FieldSet {
    const i = search(this.children, nodePE, e);
    const n = this.children[i];
    if (n !== undefined && comparePathElements(n.pe, e) === 0) return n.set;
    const set = new FieldSet();
    this.children.splice(i, 0, { pe: e, set });
    return set;
  }

  hasMember(e: PathElement): boolean {
    const i = search(this.members, idPE, e);
    const m = this.members[i];
    return m !== undefined && comparePathElements(m, e) === 0;
  }

  child(e: PathElement): FieldSet | undefined {
    const i = search(this.children, nodePE, e);
    const n = this.children[i];
    return n !== undefined && comparePathElements(n.pe, e) === 0 ? n.set : undefined;
  }

  has(p: readonly PathElement[]): boolean {
    if (p.length === 0) return false;
    const s = this.childPath(p.slice(0, -1));
    return s !== undefined && s.hasMember(p[p.length - 1] as PathElement);
  }

  /** The paths under `e`, without `e` (WithPrefix). */
  withPrefix(e: PathElement): FieldSet {
    return this.child(e) ?? new FieldSet();
  }

  empty(): boolean {
    return this.members.length === 0 && this.children.every((c) => c.set.empty());
  }

  size(): number {
    return this.members.length + this.children.reduce((n, c) => n + c.set.size(), 0);
  }

  clone(): FieldSet {
    const s = new FieldSet();
    s.members = [...this.members];
    s.children = this.children.map((c) => ({ pe: c.pe, set: c.set.clone() }));
    return s;
  }

  union(o: FieldSet): FieldSet {
    const s = new FieldSet();
    s.members = mergeSorted(this.members, o.members);
    let i = 0;
    let j = 0;
    const a = this.children;
    const b = o.children;
    while (i < a.length && j < b.length) {
      const x = a[i] as SetNode;
      const y = b[j] as SetNode;
      const c = comparePathElements(x.pe, y.pe);
      if (c < 0) {
        s.children.push({ pe: x.pe, set: x.set });
        i++;
      } else if (c > 0) {
        s.children.push({ pe: y.pe, set: y.set });
        j++;
      } else {
        s.children.push({ pe: x.pe, set: x.set.union(y.set) });
        i++;
        j++;
      }
    }
    for (; i < a.length; i++) s.children.push({ pe: (a[i] as SetNode).pe, set: (a[i] as SetNode).set });
    for (; j < b.length; j++) s.children.push({ pe: (b[j] as SetNode).pe, set: (b[j] as SetNode).set });
    return s;
  }

  intersection(o: FieldSet): FieldSet {
    const s = new FieldSet();
    s.members = this.members.filter((m) => o.hasMember(m));
    for (const n of this.children) {
      const other = o.child(n.pe);
      if (!other) continue;
      const r = n.set.intersection(other);
      if (!r.empty()) s.children.push({ pe: n.pe, set: r });
    }
    return s;
  }

  /** Set difference of members, recursively; a member of `o` does not remove the paths under it. */
  difference(o: FieldSet): FieldSet {
    const s = new FieldSet();
    s.members = this.members.filter((m) => !o.hasMember(m));
    for (const n of this.children) {
      const other = o.child(n.pe);
      if (!other) {
        s.children.push({ pe: n.pe, set: n.set });
        continue;
      }
      const d = n.set.difference(other);
      if (!d.empty()) s.children.push({ pe: n.pe, set: d });
    }
    return s;
  }

  /** Like difference, but a member of `o` also removes every path under it. */
  recursiveDifference(o: FieldSet): FieldSet {
    const s = new FieldSet();
    s.members = this.members.filter((m) => !o.hasMember(m));
    for (const n of this.children) {
      if (o.hasMember(n.pe)) continue;
      const other = o.child(n.pe);
      if (!other) {
        s.children.push({ pe: n.pe, set: n.set });
        continue;
      }
      const d = n.set.recursiveDifference(other);
      if (!d.empty()) s.children.push({ pe: n.pe, set: d });
    }
    return s;
  }

  /** The paths that have no paths under them. */
  leaves(): FieldSet {
    const s = new FieldSet();
    s.members = this.members.filter((m) => this.child(m) === undefined);
    s.children = this.children.map((c) => ({ pe: c.pe, set: c.set.leaves() }));
    return s;
  }

  equals(o: FieldSet): boolean {
    if (this.members.length !== o.members.length || this.children.length !== o.children.length) return false;
    if (!this.members.every((m, i) => comparePathElements(m, o.members[i] as PathElement) === 0)) return false;
    return this.children.every((c, i) => {
      const d = o.children[i] as SetNode;
      return comparePathElements(c.pe, d.pe) === 0 && c.set.equals(d.set);
    });
  }

  /** Every member path, in Kubernetes' order (members of a node before the paths below it). */
  paths(): Path[] {
    const out: Path[] = [];
    const walk = (s: FieldSet, prefix: Path) => {
      for (const m of s.members) out.push([...prefix, m]);
      for (const c of s.children) walk(c.set, [...prefix, c.pe]);
    };
    walk(this, []);
    return out;
  }

  /** Set.String(): one path per line. */
  toString(): string {
    return this.paths().map(pathString).join('\n');
  }
}

function mergeSorted(a: readonly PathElement[], b: readonly PathElement[]): PathElement[] {
  const out: PathElement[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    const c = comparePathElements(a[i] as PathElement, b[j] as PathElement);
    if (c < 0) out.push(a[i++] as PathElement);
    else if (c > 0) out.push(b[j++] as PathElement);
    else {
      out.push(a[i++] as PathElement);
      j++;
    }
  }
  while (i < a.length) out.push(a[i++] as PathElement);
  while (j < b.length) out.push(b[j++] as PathElement);
  return out;
}

export const union = (a: FieldSet, b: FieldSet): FieldSet => a.union(b);
export const difference = (a: FieldSet, b: FieldSet): FieldSet => a.difference(b);
export const intersection = (a: FieldSet, b: FieldSet): FieldSet => a.intersection(b);

// ---------------------------------------------------------------------------
// FieldsV1 (fieldpath/serialize.go)
// ---------------------------------------------------------------------------

/**
 * The FieldsV1 form of a set: one key per path element, members and children merged in path element
 * order; a child that is also a member carries a '.' key after its own children.
 */
export function encodeFieldsV1(set: FieldSet): JsonObject {
  return emitV1(set, false);
}

function emitV1(s: FieldSet, includeSelf: boolean): JsonObject {
  const out: JsonObject = {};
  let mi = 0;
  let ci = 0;
  const { members, children } = s;
  while (mi < members.length || ci < children.length) {
    const m = members[mi];
    const c = children[ci];
    const cmp = m === undefined ? 1 : c === undefined ? -1 : comparePathElements(m, c.pe);
    if (cmp < 0) {
      out[serializePathElement(m as PathElement)] = {};
      mi++;
    } else if (cmp > 0) {
      const n = c as SetNode;
      out[serializePathElement(n.pe)] = emitV1(n.set, false);
      ci++;
    } else {
      const n = c as SetNode;
      out[serializePathElement(n.pe)] = emitV1(n.set, true);
      mi++;
      ci++;
    }
  }
  if (includeSelf && Object.keys(out).length > 0) out['.'] = {};
  return out;
}

/** Set.FromJSON of a FieldsV1 object; unknown element types ('r:...') are dropped; throws when malformed. */
export function decodeFieldsV1(fields: unknown): FieldSet {
  if (fields === null || fields === undefined) return new FieldSet();
  if (!isJsonObject(fields)) throw new Error('ReadMapCB: expect { or n, but found something else');
  return readV1(fields).children ?? new FieldSet();
}

function readV1(obj: JsonObject): { children: FieldSet | null; isMember: boolean } {
  let children: FieldSet | null = null;
  let isMember = false;
  for (const [key, val] of Object.entries(obj)) {
    if (key === '.') {
      isMember = true;
      continue;
    }
    let e: PathElement;
    try {
      e = deserializePathElement(key);
    } catch (err) {
      if (err instanceof UnknownPathElementType) continue;
      throw new Error(`parsing key as path element: ${(err as Error).message}`, { cause: err });
    }
    if (!isJsonObject(val)) throw new Error(`ReadMapCB: expect { or n, but found something else (at ${key})`);
    const sub = readV1(val);
    if (sub.isMember) {
      children ??= new FieldSet();
      children.insert([e]);
    }
    if (sub.children) {
      children ??= new FieldSet();
      const target = children.descend(e);
      if (target.members.length === 0 && target.children.length === 0) {
        // The usual case (no other key of this object names the same element): the subset just read is taken
        // as it is, where a union with the empty set would copy it.
        target.members = sub.children.members;
        target.children = sub.children.children;
      } else {
        const merged = target.union(sub.children);
        target.members = merged.members;
        target.children = merged.children;
      }
    }
  }
  if (children === null) isMember = true;
  return { children, isMember };
}

// ---------------------------------------------------------------------------
// Schemas as structured-merge-diff types (kube-openapi schemaconv)
// ---------------------------------------------------------------------------

/**
 * The type of a value: a scalar, a list, a map (struct fields and/or element type), or several of these
 * (untyped values take the atom their value has).
 */
export interface Atom {
  scalar?: 'numeric' | 'string' | 'boolean' | 'untyped';
  /** atomic: one leaf; otherwise associative, keyed by `keys` (a set when empty). */
  list?: { elem: Schema; atomic: boolean; keys: string[] };
  /** fields: a struct's named fields; elem: the type of other keys (none: other keys are not allowed). */
  map?: { fields: Record<string, Schema> | undefined; elem: Schema | undefined; atomic: boolean };
}

/** An untyped value whose maps are granular (x-kubernetes-preserve-unknown-fields, arbitrary JSON). */
export const DEDUCED: Schema = Object.freeze({});
/** An untyped value that is a single leaf (fields not declared in a schema). */
export const UNTYPED_ATOMIC: Schema = Object.freeze({});

const DEDUCED_ATOM: Atom = {
  scalar: 'untyped',
  list: { elem: UNTYPED_ATOMIC, atomic: true, keys: [] },
  map: { fields: undefined, elem: DEDUCED, atomic: false },
};
const UNTYPED_ATOMIC_ATOM: Atom = {
  scalar: 'untyped',
  list: { elem: UNTYPED_ATOMIC, atomic: true, keys: [] },
  map: { fields: undefined, elem: UNTYPED_ATOMIC, atomic: true },
};

const QUANTITY = 'io.k8s.apimachinery.pkg.api.resource.Quantity';

/** The definition name a schema points to, following $ref chains. */
function refName(defs: Definitions, schema: Schema): string | undefined {
  let name: string | undefined;
  let s: Schema | undefined = schema;
  for (let i = 0; s?.$ref !== undefined && i < 32; i++) {
    name = s.$ref.slice(REF_PREFIX.length);
    s = defs[name];
  }
  return name;
}

/** The list relationship: list-type first, else a merge patch strategy (keyed by the merge key), else atomic. */
function listRelationship(field: Schema, resolved: Schema): { atomic: boolean; keys: string[] } {
  const ext = <K extends keyof Schema>(k: K): Schema[K] => field[k] ?? resolved[k];
  const listType = ext('x-kubernetes-list-type');
  const mapKeys = ext('x-kubernetes-list-map-keys');
  if (listType === 'atomic') return { atomic: true, keys: [] };
  if (listType === 'set') return { atomic: false, keys: [] };
  if (listType === 'map') return { atomic: false, keys: [...(mapKeys ?? [])] };
  const strategy = ext('x-kubernetes-patch-strategy');
  if (strategy !== undefined && strategy.split(',').includes('merge')) {
    // Kubernetes' OpenAPI declares compound keys (containerPort+protocol) with x-kubernetes-list-map-keys.
    if (mapKeys !== undefined && mapKeys.length > 0) return { atomic: false, keys: [...mapKeys] };
    const key = ext('x-kubernetes-patch-merge-key');
    return { atomic: false, keys: key ? [key] : [] };
  }
  return { atomic: true, keys: [] };
}

/** Resolved atoms per definitions and schema node: schemas are not changed once registered. */
const atomCache = new WeakMap<Definitions, WeakMap<Schema, Atom>>();

/** The structured-merge-diff atom of a field's schema (computed once per schema node and definitions). */
export function atomOf(field: Schema, defs: Definitions): Atom {
  if (field === DEDUCED) return DEDUCED_ATOM;
  if (field === UNTYPED_ATOMIC) return UNTYPED_ATOMIC_ATOM;
  let perDefs = atomCache.get(defs);
  if (perDefs === undefined) {
    perDefs = new WeakMap();
    atomCache.set(defs, perDefs);
  }
  let atom = perDefs.get(field);
  if (atom === undefined) {
    atom = computeAtom(field, defs);
    perDefs.set(field, atom);
  }
  return atom;
}

function computeAtom(field: Schema, defs: Definitions): Atom {
  const r = resolveSchema(defs, field);
  if (field['x-kubernetes-int-or-string'] || r['x-kubernetes-int-or-string']) return { scalar: 'untyped' };
  if (refName(defs, field) === QUANTITY) return { scalar: 'untyped' };
  const atomicMap = (field['x-kubernetes-map-type'] ?? r['x-kubernetes-map-type']) === 'atomic';
  const preserve = field['x-kubernetes-preserve-unknown-fields'] ?? r['x-kubernetes-preserve-unknown-fields'];
  switch (r.type) {
    case 'array':
      return { list: { elem: r.items ?? DEDUCED, ...listRelationship(field, r) } };
    case 'string':
      return { scalar: r.format === undefined || r.format === '' || r.format === 'byte' ? 'string' : 'untyped' };
    case 'integer':
    case 'number':
      return { scalar: 'numeric' };
    case 'boolean':
      return { scalar: 'boolean' };
    case 'object':
    case undefined:
      if (r.properties) {
        return { map: { fields: r.properties, elem: preserve ? DEDUCED : undefined, atomic: atomicMap } };
      }
      if (r.additionalProperties) return { map: { fields: undefined, elem: r.additionalProperties, atomic: atomicMap } };
      if (r.type === 'object') return { map: { fields: undefined, elem: DEDUCED, atomic: atomicMap } };
      return DEDUCED_ATOM;
    default:
      return DEDUCED_ATOM;
  }
}

/** deduceAtom: the part of an atom the value's kind selects (the whole atom when none does). */
export function deduceAtom(a: Atom, v: unknown): Atom {
  if (v === undefined || v === null) return a;
  if (typeof v === 'number' || typeof v === 'string' || typeof v === 'boolean') return a.scalar ? { scalar: a.scalar } : a;
  if (Array.isArray(v)) return a.list ? { list: a.list } : a;
  if (isJsonObject(v)) return a.map ? { map: a.map } : a;
  return a;
}

export function sameAtom(a: Atom, b: Atom): boolean {
  return a.scalar === b.scalar && a.list === b.list && a.map === b.map;
}

/** The type of a map's key: its named field, else the element type, else none (undeclared). */
export function mapFieldType(m: NonNullable<Atom['map']>, key: string): Schema | undefined {
  if (m.fields && hasOwn(m.fields, key)) return m.fields[key];
  return m.elem;
}

function isNamedField(m: NonNullable<Atom['map']>, key: string): boolean {
  return m.fields !== undefined && hasOwn(m.fields, key);
}

/** The default of a key field of a map list's items (Kubernetes defaults e.g. ports' protocol to TCP). */
function keyDefault(elem: Schema, key: string, defs: Definitions): unknown {
  if (elem === DEDUCED || elem === UNTYPED_ATOMIC) return undefined;
  const r = resolveSchema(defs, elem);
  const f = r.properties?.[key];
  if (!f) return undefined;
  return f.default ?? resolveSchema(defs, f).default;
}

/** listItemToPathElement: an item's key (map lists), value (sets) or index (atomic lists); throws when it has none. */
export function listItemToPathElement(list: NonNullable<Atom['list']>, index: number, item: unknown, defs: Definitions): PathElement {
  if (list.atomic) return { index };
  if (list.keys.length > 0) {
    if (item === null || item === undefined) throw new Error('associative list with keys may not have a null element');
    if (!isJsonObject(item)) throw new Error('associative list with keys may not have non-map elements');
    const fields: KeyField[] = [];
    for (const name of list.keys) {
      if (hasOwn(item, name) && item[name] !== undefined) fields.push({ name, value: item[name] });
      else {
        const def = keyDefault(list.elem, name, defs);
        if (def === undefined) {
          throw new Error(`associative list with keys has an element that omits key field ${goQuote(name)} (and doesn't have default value)`);
        }
        fields.push({ name, value: def });
      }
    }
    fields.sort((a, b) => compareBytes(a.name, b.name));
    return { key: fields };
  }
  if (isJsonObject(item)) throw new Error("associative list without keys has an element that's a map type");
  if (Array.isArray(item)) throw new Error('not supported: associative list with lists as elements');
  if (item === null || item === undefined) throw new Error("associative list without keys has an element that's an explicit null");
  return { value: item };
}

// ---------------------------------------------------------------------------
// ToFieldSet (typed/tofieldset.go)
// ---------------------------------------------------------------------------

/**
 * The fields an object sets: every scalar, atomic list and atomic map as a leaf; every item of a map list
 * or set, and every key of a map (not a struct's named fields), as a member too.
 */
export function fieldSetOf(obj: unknown, schema: Schema, defs: Definitions): FieldSet {
  const set = new FieldSet();
  toFieldSet(obj, schema, [], set, defs);
  return set;
}

function toFieldSet(v: unknown, type: Schema, path: Path, set: FieldSet, defs: Definitions): void {
  const a = deduceAtom(atomOf(type, defs), v);
  if (a.map) {
    if (a.map.atomic) {
      set.insert(path);
      return;
    }
    if (!isJsonObject(v)) return;
    for (const [key, val] of Object.entries(v)) {
      if (val === undefined) continue;
      const t = mapFieldType(a.map, key);
      const p = [...path, { field: key }];
      if (t === undefined) {
        set.insert(p); // field not declared in schema: a leaf
        continue;
      }
      toFieldSet(val, t, p, set, defs);
      if (!isNamedField(a.map, key)) set.insert(p);
    }
    return;
  }
  if (a.scalar) {
    set.insert(path);
    return;
  }
  if (a.list) {
    if (a.list.atomic) {
      set.insert(path);
      return;
    }
    if (!Array.isArray(v)) return;
    const list = a.list;
    v.forEach((item, i) => {
      let e: PathElement;
      try {
        e = listItemToPathElement(list, i, item, defs);
      } catch {
        return;
      }
      const p = [...path, e];
      toFieldSet(item, list.elem, p, set, defs);
      set.insert(p);
    });
  }
}

// ---------------------------------------------------------------------------
// The two-sided walk of typed.Merge and typed.Compare (typed/merge.go, compare.go)
// ---------------------------------------------------------------------------

/** One step of a walk over two values (`undefined`: absent on that side). */
export interface WalkStep {
  lhs: unknown;
  rhs: unknown;
  path: Path;
}

export interface WalkRules {
  /** Called on leaves (scalars, atomic lists and maps, empty containers); returns the merged value. */
  leaf(w: WalkStep): unknown;
  /** Called on containers that are not leaves, after their items. */
  post?(w: WalkStep): void;
  /** Scalar type errors, when both sides must be valid (merge) rather than one (compare). */
  strictScalars?: boolean;
  errors?: WalkError[];
  /**
   * A comparison, which does not use the merged value: none is built (walk2 gives undefined for
   * containers), and identical (===) objects on both sides, where it finds nothing, are not walked
   * (a status write keeps the live spec).
   */
  comparing?: boolean;
  defs: Definitions;
}

export interface WalkError {
  path: Path;
  message: string;
}

/** Go's %v of a value.Value holding a JSON value: `&{...}`. */
export function goValueV(v: unknown): string {
  return `&{${goV(v)}}`;
}

/** Go's %v of an interface{} decoded from JSON. */
export function goV(v: unknown): string {
  if (v === null || v === undefined) return '<nil>';
  if (typeof v === 'number') return Number.isInteger(v) ? String(v) : goFloat(v);
  if (typeof v === 'string' || typeof v === 'boolean') return String(v);
  if (Array.isArray(v)) return '[' + v.map(goV).join(' ') + ']';
  if (isJsonObject(v)) {
    return (
      'map[' +
      Object.keys(v)
        .sort(compareBytes)
        .map((k) => `${k}:${goV(v[k])}`)
        .join(' ') +
      ']'
    );
  }
  return '<nil>';
}

/** Go's %#v of an interface{} decoded from JSON. */
export function goSharpV(v: unknown): string {
  if (v === null || v === undefined) return 'interface {}(nil)';
  if (typeof v === 'number') return Number.isInteger(v) ? String(v) : goFloat(v);
  if (typeof v === 'string') return goQuote(v);
  if (typeof v === 'boolean') return String(v);
  if (Array.isArray(v)) return '[]interface {}{' + v.map(goSharpV).join(', ') + '}';
  if (isJsonObject(v)) {
    return (
      'map[string]interface {}{' +
      Object.keys(v)
        .sort(compareBytes)
        .map((k) => `${goQuote(k)}:${goSharpV(v[k])}`)
        .join(', ') +
      '}'
    );
  }
  return '<nil>';
}

/** Go's %T of an interface{} decoded from JSON (numbers are float64, as sigs.k8s.io/yaml decodes them). */
export function goTypeName(v: unknown): string {
  if (v === null || v === undefined) return '<nil>';
  if (typeof v === 'number') return 'float64';
  if (typeof v === 'string') return 'string';
  if (typeof v === 'boolean') return 'bool';
  if (Array.isArray(v)) return '[]interface {}';
  return 'map[string]interface {}';
}

/** validateScalar's message for a value of the wrong type, or null. */
export function scalarError(t: NonNullable<Atom['scalar']>, v: unknown): string | null {
  if (v === undefined || v === null) return null;
  switch (t) {
    case 'numeric':
      return typeof v === 'number' ? null : `expected numeric (int or float), got ${goTypeName(v)}`;
    case 'string':
      return typeof v === 'string' ? null : `expected string, got &value.valueUnstructured{Value:${goSharpV(v)}}`;
    case 'boolean':
      return typeof v === 'boolean' ? null : `expected boolean, got ${goValueV(v)}`;
    default:
      return typeof v === 'number' || typeof v === 'string' || typeof v === 'boolean' ? null : `expected any scalar, got ${goValueV(v)}`;
  }
}

/**
 * Walks two values of one type together (the merging walker): scalars and atomic or empty containers are
 * leaves given to `rules.leaf`; maps are walked key by key; associative lists item by item, in the order
 * structured-merge-diff merges them. Returns the merged value (undefined when there is none).
 */
export function walk2(lhs: unknown, rhs: unknown, type: Schema, path: Path, rules: WalkRules): unknown {
  if (rules.comparing && lhs === rhs && typeof lhs === 'object' && lhs !== null) return undefined;
  const atom = atomOf(type, rules.defs);
  const al = deduceAtom(atom, lhs);
  const ar = deduceAtom(atom, rhs);
  const w = { lhs, rhs, path, inLeaf: false, out: undefined as unknown };
  if (lhs === undefined) handleAtom(ar, w, rules);
  else if (rhs === undefined || sameAtom(al, ar)) handleAtom(rhs === undefined ? al : ar, w, rules);
  else {
    const w2 = { ...w };
    handleAtom(al, w2, rules);
    handleAtom(ar, w, rules);
  }
  if (!w.inLeaf && rules.post) rules.post(w);
  return w.out;
}

interface Walker extends WalkStep {
  inLeaf: boolean;
  out: unknown;
}

function doLeaf(w: Walker, rules: WalkRules): void {
  if (w.inLeaf) return;
  w.inLeaf = true;
  w.out = rules.leaf(w);
}

function handleAtom(a: Atom, w: Walker, rules: WalkRules): void {
  if (a.map) return walkMap(a.map, w, rules);
  if (a.scalar) {
    const le = scalarError(a.scalar, w.lhs);
    const re = scalarError(a.scalar, w.rhs);
    if (rules.strictScalars ? le !== null || re !== null : le !== null && re !== null) {
      if (le !== null) rules.errors?.push({ path: w.path, message: 'lhs: ' + le });
      if (re !== null) rules.errors?.push({ path: w.path, message: 'rhs: ' + re });
      return;
    }
    return doLeaf(w, rules);
  }
  if (a.list) return walkList(a.list, w, rules);
  rules.errors?.push({ path: w.path, message: 'schema error: invalid atom: inlined' });
}

function walkMap(m: NonNullable<Atom['map']>, w: Walker, rules: WalkRules): void {
  const lhs = isJsonObject(w.lhs) ? w.lhs : undefined;
  const rhs = isJsonObject(w.rhs) ? w.rhs : undefined;
  const emptyL = lhs === undefined || Object.keys(lhs).length === 0;
  const emptyR = rhs === undefined || Object.keys(rhs).length === 0;
  if (m.atomic || (emptyL && emptyR)) return doLeaf(w, rules);
  const out: JsonObject = {};
  const keys = [...Object.keys(lhs ?? {}), ...Object.keys(rhs ?? {}).filter((k) => !lhs || !hasOwn(lhs, k))];
  for (const key of keys) {
    const l = lhs?.[key];
    const r = rhs?.[key];
    if (l === undefined && r === undefined) continue;
    const t = mapFieldType(m, key) ?? UNTYPED_ATOMIC;
    const v = walk2(l, r, t, [...w.path, { field: key }], rules);
    if (v !== undefined && !rules.comparing) out[key] = v;
  }
  if (!rules.comparing && Object.keys(out).length > 0) w.out = out;
}

interface IndexedList {
  order: PathElement[];
  /** The peId of each element of `order`. */
  ids: string[];
  items: Map<string, { pe: PathElement; item: unknown }>;
}

/** A stable string for a path element, to index list items. */
function peId(e: PathElement): string {
  return serializePathElement(e);
}

function indexList(list: NonNullable<Atom['list']>, items: unknown[] | undefined, defs: Definitions): IndexedList {
  const out: IndexedList = { order: [], ids: [], items: new Map() };
  (items ?? []).forEach((item, i) => {
    let e: PathElement;
    try {
      e = listItemToPathElement(list, i, item, defs);
    } catch {
      return;
    }
    const id = peId(e);
    if (out.items.has(id)) return; // duplicates: the first one counts
    out.items.set(id, { pe: e, item });
    out.order.push(e);
    out.ids.push(id);
  });
  return out;
}

function walkList(list: NonNullable<Atom['list']>, w: Walker, rules: WalkRules): void {
  const lhs = Array.isArray(w.lhs) ? w.lhs : undefined;
  const rhs = Array.isArray(w.rhs) ? w.rhs : undefined;
  const emptyL = lhs === undefined || lhs.length === 0;
  const emptyR = rhs === undefined || rhs.length === 0;
  if (list.atomic || (emptyL && emptyR)) return doLeaf(w, rules);
  const L = indexList(list, lhs, rules.defs);
  const R = indexList(list, rhs, rules.defs);
  const out: unknown[] = [];
  const mergeItem = (e: PathElement, l: unknown, r: unknown) => {
    const v = walk2(l, r, list.elem, [...w.path, e], rules);
    if (v !== undefined && !rules.comparing) out.push(v);
  };
  // Items both sides have, in the order the right side has them.
  const shared = R.ids.filter((id) => L.items.has(id));
  let si = 0;
  let nextShared: string | undefined = shared[si++];
  const advanceShared = () => {
    nextShared = shared[si++];
  };
  let li = 0;
  let ri = 0;
  while (li < L.order.length || ri < R.order.length) {
    if (li < L.order.length && ri < R.order.length) {
      const id = L.ids[li] as string;
      if (id === R.ids[ri]) {
        mergeItem(L.order[li] as PathElement, L.items.get(id)?.item, R.items.get(id)?.item);
        li++;
        ri++;
        advanceShared();
        continue;
      }
      if (R.items.has(id) && nextShared !== undefined && nextShared !== id) {
        li++; // a shared item, but not the one due now
        continue;
      }
    }
    if (li < L.order.length) {
      const id = L.ids[li] as string;
      if (!R.items.has(id)) {
        mergeItem(L.order[li] as PathElement, L.items.get(id)?.item, undefined);
        li++;
        continue;
      }
    }
    if (ri < R.order.length) {
      const id = R.ids[ri] as string;
      mergeItem(R.order[ri] as PathElement, L.items.get(id)?.item, R.items.get(id)?.item);
      ri++;
      if (nextShared !== undefined && nextShared === id) advanceShared();
    } else {
      li++; // a shared item the right side already gave
    }
  }
  if (out.length > 0) w.out = out;
}

// ---------------------------------------------------------------------------
// Compare (typed.Compare)
// ---------------------------------------------------------------------------

/** What changed between two objects: fields added, modified (leaves only) and removed. */
export interface Comparison {
  added: FieldSet;
  modified: FieldSet;
  removed: FieldSet;
}

/**
 * typed.Compare: the fields whose values changed between `oldObj` and `newObj`. Leaves are added,
 * removed or modified; containers (structs, maps, list items) that appear or disappear as a whole are
 * added or removed too.
 */
export function diffOwnedChanged(oldObj: unknown, newObj: unknown, schema: Schema, defs: Definitions): Comparison {
  const c: Comparison = { added: new FieldSet(), modified: new FieldSet(), removed: new FieldSet() };
  compareWalk(oldObj ?? {}, newObj ?? {}, schema, [], c, defs);
  return c;
}

/** diffOwnedChanged through the generic walker walk2 (the reference compareWalk must agree with). */
export function diffOwnedChangedSlow(oldObj: unknown, newObj: unknown, schema: Schema, defs: Definitions): Comparison {
  const c: Comparison = { added: new FieldSet(), modified: new FieldSet(), removed: new FieldSet() };
  walk2(oldObj ?? {}, newObj ?? {}, schema, [], {
    defs,
    comparing: true,
    leaf: (w) => {
      if (w.lhs === undefined) c.added.insert(w.path);
      else if (w.rhs === undefined) c.removed.insert(w.path);
      else if (!equalValues(w.lhs, w.rhs)) c.modified.insert(w.path);
      return w.rhs ?? w.lhs;
    },
    post: (w) => {
      if (w.lhs === undefined) c.added.insert(w.path);
      else if (w.rhs === undefined) c.removed.insert(w.path);
    },
  });
  return c;
}

/*
 * compareWalk: walk2 with diffOwnedChanged's rules (comparing, no errors, lenient scalars), written out for that
 * one use. It runs on every update's managedFields (a pod's status patch walks the whole status), where the
 * generic walker's per-node walker objects, path copies, deduced atoms and closures, and its callbacks shared
 * with server-side apply's merge, kept it slow and late to optimise. The path is one stack, pushed and popped
 * (FieldSet.insert keeps its elements, not the array). Same visits, same order, same sets.
 */

/** deduceAtom(a, v) as a part of `a`: 0 the whole atom, 1 its map, 2 its scalar, 3 its list. */
function deducedPart(a: Atom, v: unknown): number {
  if (v === undefined || v === null) return 0;
  const t = typeof v;
  if (t === 'number' || t === 'string' || t === 'boolean') return a.scalar ? 2 : 0;
  if (Array.isArray(v)) return a.list ? 3 : 0;
  if (t === 'object') return a.map ? 1 : 0;
  return 0;
}

const partMap = (a: Atom, part: number) => (part === 0 || part === 1 ? a.map : undefined);
const partScalar = (a: Atom, part: number) => (part === 0 || part === 2 ? a.scalar : undefined);
const partList = (a: Atom, part: number) => (part === 0 || part === 3 ? a.list : undefined);

/** scalarError(t, v) === null, without building the message. */
function scalarFits(t: NonNullable<Atom['scalar']>, v: unknown): boolean {
  if (v === undefined || v === null) return true;
  const k = typeof v;
  switch (t) {
    case 'numeric':
      return k === 'number';
    case 'string':
      return k === 'string';
    case 'boolean':
      return k === 'boolean';
    default:
      return k === 'number' || k === 'string' || k === 'boolean';
  }
}

function compareLeaf(lhs: unknown, rhs: unknown, path: Path, c: Comparison): void {
  if (lhs === undefined) c.added.insert(path);
  else if (rhs === undefined) c.removed.insert(path);
  else if (!equalValues(lhs, rhs)) c.modified.insert(path);
}

function compareWalk(lhs: unknown, rhs: unknown, type: Schema, path: Path, c: Comparison, defs: Definitions): void {
  if (lhs === rhs && typeof lhs === 'object' && lhs !== null) return;
  const atom = atomOf(type, defs);
  const pl = deducedPart(atom, lhs);
  const pr = deducedPart(atom, rhs);
  let leafed: boolean;
  if (lhs === undefined) leafed = compareAtom(atom, pr, lhs, rhs, path, c, defs);
  else if (rhs === undefined) leafed = compareAtom(atom, pl, lhs, rhs, path, c, defs);
  else if (pl === pr || (partMap(atom, pl) === partMap(atom, pr) && partScalar(atom, pl) === partScalar(atom, pr) && partList(atom, pl) === partList(atom, pr))) {
    leafed = compareAtom(atom, pr, lhs, rhs, path, c, defs);
  } else {
    compareAtom(atom, pl, lhs, rhs, path, c, defs);
    leafed = compareAtom(atom, pr, lhs, rhs, path, c, defs);
  }
  if (!leafed) {
    if (lhs === undefined) c.added.insert(path);
    else if (rhs === undefined) c.removed.insert(path);
  }
}

/** handleAtom of the part: whether the value was a leaf. */
function compareAtom(a: Atom, part: number, lhs: unknown, rhs: unknown, path: Path, c: Comparison, defs: Definitions): boolean {
  const m = partMap(a, part);
  if (m) return compareMap(m, lhs, rhs, path, c, defs);
  const sc = partScalar(a, part);
  if (sc) {
    if (!scalarFits(sc, lhs) && !scalarFits(sc, rhs)) return false;
    compareLeaf(lhs, rhs, path, c);
    return true;
  }
  const l = partList(a, part);
  if (l) return compareList(l, lhs, rhs, path, c, defs);
  return false;
}

function compareMap(m: NonNullable<Atom['map']>, lv: unknown, rv: unknown, path: Path, c: Comparison, defs: Definitions): boolean {
  const lhs = isJsonObject(lv) ? lv : undefined;
  const rhs = isJsonObject(rv) ? rv : undefined;
  if (m.atomic || ((lhs === undefined || isEmptyObject(lhs)) && (rhs === undefined || isEmptyObject(rhs)))) {
    compareLeaf(lv, rv, path, c);
    return true;
  }
  if (lhs !== undefined) {
    const keys = Object.keys(lhs);
    for (let i = 0; i < keys.length; i++) compareKey(m, keys[i]!, lhs, rhs, path, c, defs);
  }
  if (rhs !== undefined) {
    const keys = Object.keys(rhs);
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i]!;
      if (lhs === undefined || !hasOwn(lhs, key)) compareKey(m, key, lhs, rhs, path, c, defs);
    }
  }
  return false;
}

function compareKey(m: NonNullable<Atom['map']>, key: string, lhs: JsonObject | undefined, rhs: JsonObject | undefined, path: Path, c: Comparison, defs: Definitions): void {
  const l = lhs?.[key];
  const r = rhs?.[key];
  if (l === undefined && r === undefined) return;
  path.push({ field: key });
  compareWalk(l, r, mapFieldType(m, key) ?? UNTYPED_ATOMIC, path, c, defs);
  path.pop();
}

function compareList(list: NonNullable<Atom['list']>, lv: unknown, rv: unknown, path: Path, c: Comparison, defs: Definitions): boolean {
  const lhs = Array.isArray(lv) ? lv : undefined;
  const rhs = Array.isArray(rv) ? rv : undefined;
  if (list.atomic || ((lhs === undefined || lhs.length === 0) && (rhs === undefined || rhs.length === 0))) {
    compareLeaf(lv, rv, path, c);
    return true;
  }
  const L = indexList(list, lhs, defs);
  const R = indexList(list, rhs, defs);
  const item = (e: PathElement, l: unknown, r: unknown) => {
    path.push(e);
    compareWalk(l, r, list.elem, path, c, defs);
    path.pop();
  };
  // walkList's order: items both sides have, in the right side's order.
  const shared: string[] = [];
  for (let i = 0; i < R.ids.length; i++) if (L.items.has(R.ids[i]!)) shared.push(R.ids[i]!);
  let si = 0;
  let nextShared: string | undefined = shared[si++];
  let li = 0;
  let ri = 0;
  const nl = L.order.length;
  const nr = R.order.length;
  while (li < nl || ri < nr) {
    if (li < nl && ri < nr) {
      const id = L.ids[li]!;
      if (id === R.ids[ri]) {
        item(L.order[li]!, L.items.get(id)?.item, R.items.get(id)?.item);
        li++;
        ri++;
        nextShared = shared[si++];
        continue;
      }
      if (R.items.has(id) && nextShared !== undefined && nextShared !== id) {
        li++;
        continue;
      }
    }
    if (li < nl) {
      const id = L.ids[li]!;
      if (!R.items.has(id)) {
        item(L.order[li]!, L.items.get(id)?.item, undefined);
        li++;
        continue;
      }
    }
    if (ri < nr) {
      const id = R.ids[ri]!;
      item(R.order[ri]!, L.items.get(id)?.item, R.items.get(id)?.item);
      ri++;
      if (nextShared !== undefined && nextShared === id) nextShared = shared[si++];
    } else {
      li++;
    }
  }
  return false;
}

/** Comparison.ExcludeFields: drops the ignored fields (and everything under them). */
export function excludeFields(c: Comparison, ignored: FieldSet | undefined): Comparison {
  if (!ignored || ignored.empty()) return c;
  return {
    added: c.added.recursiveDifference(ignored),
    modified: c.modified.recursiveDifference(ignored),
    removed: c.removed.recursiveDifference(ignored),
  };
}

/** EnsureNamedFieldsAreMembers: adds a struct's named fields that have paths below them as members. */
export function ensureNamedFieldsAreMembers(set: FieldSet, schema: Schema | undefined, defs: Definitions): FieldSet {
  const atom = schema === undefined ? {} : atomOf(schema, defs);
  const out = new FieldSet();
  out.members = [...set.members];
  for (const n of set.children) {
    let childType: Schema | undefined;
    if ('field' in n.pe && atom.map) {
      if (isNamedField(atom.map, n.pe.field)) out.insert([n.pe]);
      childType = mapFieldType(atom.map, n.pe.field);
    } else if ('key' in n.pe && atom.list) {
      childType = atom.list.elem;
    }
    const sub = ensureNamedFieldsAreMembers(n.set, childType, defs);
    out.descend(n.pe).members = sub.members;
    const target = out.child(n.pe) as FieldSet;
    target.children = sub.children;
  }
  return out;
}

// ---------------------------------------------------------------------------
// managedFields entries (fieldmanager internal/managedfields.go)
// ---------------------------------------------------------------------------

export type Operation = 'Apply' | 'Update';

/** A manager's fields, in the version it used; applied for Apply entries. */
export interface VersionedSet {
  set: FieldSet;
  apiVersion: string;
  applied: boolean;
}

/** Decoded managedFields: sets and times keyed by manager identifier (see managerIdentifier). */
export interface Managed {
  fields: Map<string, VersionedSet>;
  times: Map<string, string | undefined>;
}

export function emptyManaged(): Managed {
  return { fields: new Map(), times: new Map() };
}

function copyManaged(m: Managed): Managed {
  return { fields: new Map(m.fields), times: new Map(m.times) };
}

/** The identity of a manager (BuildManagerIdentifier): Apply managers by name and subresource, Update managers also by apiVersion. */
export interface ManagerInfo {
  manager: string;
  operation: string;
  apiVersion?: string;
  subresource?: string;
}

/**
 * BuildManagerIdentifier: the JSON of the entry without fieldsType, fieldsV1 and time (and without
 * apiVersion for appliers), in ManagedFieldsEntry's field order.
 */
export function managerIdentifier(info: ManagerInfo): string {
  const o: JsonObject = {};
  if (info.manager) o['manager'] = info.manager;
  if (info.operation) o['operation'] = info.operation;
  if (info.operation !== 'Apply' && info.apiVersion) o['apiVersion'] = info.apiVersion;
  if (info.subresource) o['subresource'] = info.subresource;
  return JSON.stringify(o);
}

export function parseManagerIdentifier(id: string): ManagerInfo | null {
  try {
    const o: unknown = JSON.parse(id);
    if (!isJsonObject(o)) return null;
    const str = (k: string): string => {
      const v = o[k];
      return typeof v === 'string' ? v : '';
    };
    return { manager: str('manager'), operation: str('operation'), apiVersion: str('apiVersion'), subresource: str('subresource') };
  } catch {
    return null;
  }
}

/** printManager: `"name"`, `"name" with subresource "status"`, then ` using v1` for Update managers. */
export function printManager(id: string): string {
  const info = parseManagerIdentifier(id);
  if (info === null) return goQuote(id);
  let s = goQuote(info.manager);
  if (info.subresource) s += ` with subresource ${goQuote(info.subresource)}`;
  if (info.operation === 'Update') return `${s} using ${info.apiVersion ?? ''}`;
  return s;
}

export type DecodeResult = { ok: true; managed: Managed } | { ok: false; error: string };

const str = (v: unknown): string => (typeof v === 'string' ? v : '');

/**
 * DecodeManagedFields: the managers of managedFields entries, or the error Kubernetes finds in them (an
 * operation other than Apply or Update, an empty apiVersion, a missing or unknown fieldsType, a fieldsV1
 * that does not decode). Later entries of the same manager replace earlier ones.
 */
export function decodeManagedFields(entries: unknown): DecodeResult {
  const managed = emptyManaged();
  if (entries === null || entries === undefined) return { ok: true, managed };
  if (!Array.isArray(entries)) return { ok: false, error: 'managedFields must be a list' };
  for (let i = 0; i < entries.length; i++) {
    const e: unknown = entries[i];
    if (!isJsonObject(e)) return { ok: false, error: `managed fields entry ${i} is not an object` };
    const operation = str(e['operation']);
    if (operation !== 'Apply' && operation !== 'Update') return { ok: false, error: 'operation must be `Apply` or `Update`' };
    const apiVersion = str(e['apiVersion']);
    if (apiVersion.length < 1) return { ok: false, error: 'apiVersion must not be empty' };
    const fieldsType = str(e['fieldsType']);
    if (fieldsType === '') return { ok: false, error: `missing fieldsType in managed fields entry ${i}` };
    if (fieldsType !== 'FieldsV1') return { ok: false, error: `invalid fieldsType ${goQuote(fieldsType)} in managed fields entry ${i}` };
    const id = managerIdentifier({ manager: str(e['manager']), operation, apiVersion, subresource: str(e['subresource']) });
    let set: FieldSet;
    try {
      set = decodeFieldsV1(e['fieldsV1'] ?? {});
    } catch (err) {
      return { ok: false, error: `error decoding versioned set from ${goJson(e)}: error decoding set: ${(err as Error).message}` };
    }
    managed.fields.set(id, { set, apiVersion, applied: operation === 'Apply' });
    managed.times.set(id, typeof e['time'] === 'string' ? e['time'] : undefined);
  }
  return { ok: true, managed };
}

function unixSeconds(t: string | undefined): number {
  if (t === undefined) return 0;
  const ms = Date.parse(t);
  return Number.isNaN(ms) ? 0 : Math.floor(ms / 1000);
}

/**
 * encodeManagedFields: one entry per manager (manager, operation, apiVersion, time, fieldsType, fieldsV1,
 * subresource, empty ones left out), sorted by operation, time, manager, apiVersion and subresource.
 * Undefined when there are no managers (Kubernetes then drops the field).
 */
export function encodeManagedFields(managed: Managed): JsonObject[] | undefined {
  if (managed.fields.size === 0) return undefined;
  const entries: JsonObject[] = [];
  for (const [id, vs] of managed.fields) {
    const info = parseManagerIdentifier(id) ?? { manager: id, operation: 'Update' };
    const operation = vs.applied ? 'Apply' : info.operation;
    const e: JsonObject = {};
    if (info.manager) e['manager'] = info.manager;
    if (operation) e['operation'] = operation;
    if (vs.apiVersion) e['apiVersion'] = vs.apiVersion;
    const time = managed.times.get(id);
    if (time !== undefined) e['time'] = time;
    e['fieldsType'] = 'FieldsV1';
    e['fieldsV1'] = encodeFieldsV1(vs.set);
    if (info.subresource) e['subresource'] = info.subresource;
    entries.push(e);
  }
  const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
  entries.sort(
    (p, q) =>
      cmp(str(p['operation']), str(q['operation'])) ||
      unixSeconds(p['time'] as string | undefined) - unixSeconds(q['time'] as string | undefined) ||
      cmp(str(p['manager']), str(q['manager'])) ||
      cmp(str(p['apiVersion']), str(q['apiVersion'])) ||
      cmp(str(p['subresource']), str(q['subresource'])),
  );
  return entries;
}

/** isResetManagedFields: `[]`, or a single entry with nothing in it, asks to clear managedFields. */
export function isResetManagedFields(managedFields: unknown): boolean {
  if (!Array.isArray(managedFields)) return false;
  if (managedFields.length === 0) return true;
  if (managedFields.length !== 1) return false;
  const e: unknown = managedFields[0];
  return isJsonObject(e) && Object.values(e).every((v) => v === undefined || v === null || v === '');
}

/**
 * decodeLiveOrNew: the managers an update starts from. A subresource write keeps the live object's; a
 * reset (`[]`) starts empty; valid non-empty managedFields in the request are taken as they are;
 * otherwise (absent, empty or invalid) the live object's are kept, and invalid live ones are dropped.
 */
export function managedForUpdate(liveManagedFields: unknown, newManagedFields: unknown, isSubresource: boolean): Managed {
  const live = () => {
    const r = decodeManagedFields(liveManagedFields);
    return r.ok ? r.managed : emptyManaged();
  };
  if (isSubresource) return live();
  if (isResetManagedFields(newManagedFields)) return emptyManaged();
  const r = decodeManagedFields(newManagedFields);
  if (!r.ok || r.managed.fields.size === 0) return live();
  return r.managed;
}

// ---------------------------------------------------------------------------
// The Update path of the field manager
// ---------------------------------------------------------------------------

/** The fields the field manager never records (stripmeta.go). */
export const STRIPPED_FIELDS: FieldSet = FieldSet.of(
  [pe.field('apiVersion')],
  [pe.field('kind')],
  [pe.field('metadata')],
  [pe.field('metadata'), pe.field('name')],
  [pe.field('metadata'), pe.field('namespace')],
  [pe.field('metadata'), pe.field('creationTimestamp')],
  [pe.field('metadata'), pe.field('selfLink')],
  [pe.field('metadata'), pe.field('uid')],
  [pe.field('metadata'), pe.field('clusterName')],
  [pe.field('metadata'), pe.field('generation')],
  [pe.field('metadata'), pe.field('managedFields')],
  [pe.field('metadata'), pe.field('resourceVersion')],
);

/** stripMetaManager.stripFields. */
export function stripMeta(managed: Managed, id: string): void {
  const vs = managed.fields.get(id);
  if (!vs) return;
  const set = vs.set.difference(STRIPPED_FIELDS);
  if (set.empty()) managed.fields.delete(id);
  else managed.fields.set(id, { ...vs, set });
}

/** At most this many Update managers; the oldest are merged into 'ancient-changes' (capmanagers.go). */
export const MAX_UPDATE_MANAGERS = 10;
export const ANCIENT_CHANGES = 'ancient-changes';

/** capUpdateManagers: merges the oldest Update managers, per apiVersion, until at most `max` remain. */
export function capUpdateManagers(managed: Managed, max = MAX_UPDATE_MANAGERS): void {
  const updaters = [...managed.fields].filter(([, vs]) => !vs.applied).map(([id]) => id);
  if (updaters.length <= max) return;
  updaters.sort((a, b) => {
    const d = unixSeconds(managed.times.get(a)) - unixSeconds(managed.times.get(b));
    if (d !== 0) return d;
    return a < b ? -1 : a > b ? 1 : 0;
  });
  const firstOfVersion = new Map<string, string>();
  let length = updaters.length;
  for (let i = 0; i < updaters.length && length > max; i++) {
    const id = updaters[i] as string;
    const vs = managed.fields.get(id) as VersionedSet;
    const time = managed.times.get(id);
    const bucket = managerIdentifier({ manager: ANCIENT_CHANGES, operation: 'Update', apiVersion: vs.apiVersion });
    const first = firstOfVersion.get(vs.apiVersion);
    if (first === undefined) {
      firstOfVersion.set(vs.apiVersion, id);
      continue;
    }
    if (!managed.fields.has(bucket)) {
      const s = managed.fields.get(first) as VersionedSet;
      managed.fields.delete(first);
      managed.fields.set(bucket, s);
    }
    const b = managed.fields.get(bucket) as VersionedSet;
    managed.fields.set(bucket, { set: vs.set.union(b.set), apiVersion: vs.apiVersion, applied: vs.applied });
    managed.fields.delete(id);
    length--;
    managed.times.set(bucket, time);
  }
}

/**
 * What the field manager needs to see a change from the version a manager used (merge.Converter): the
 * kind's schema at a version and an object converted between versions. Kubernetes converts the old and
 * new objects to each manager's version and compares them there, so a field owned through one version
 * conflicts with (and is taken by) a change of the same field made through another.
 */
export interface VersionConverter {
  /** The kind's schema at `apiVersion`; undefined when the kind is not served at that version. */
  schema(apiVersion: string): Schema | undefined;
  /** `obj` (of version `from`) as the kind at version `to`; undefined when either version is not served. */
  convert(obj: unknown, from: string, to: string): unknown;
}

/** Every version seen alike: one schema, no conversion (a kind served at one version, or no registry). */
export function sameVersions(schema: Schema): VersionConverter {
  return { schema: () => schema, convert: (obj) => obj };
}

/**
 * The comparison of `before` and `after` (of version `apiVersion`) as seen from each version: `comparison`
 * at the request's version, others computed on both objects converted (cached); null when the version is
 * not served (IsMissingVersionError: that manager is dropped).
 */
export type VersionedComparison = (apiVersion: string) => Comparison | null;

export function comparisonsByVersion(
  before: unknown,
  after: unknown,
  apiVersion: string,
  comparison: Comparison,
  converter: VersionConverter | undefined,
  defs: Definitions,
  ignored?: FieldSet,
): VersionedComparison {
  const cache = new Map<string, Comparison | null>([[apiVersion, comparison]]);
  return (version) => {
    const hit = cache.get(version);
    if (hit !== undefined || cache.has(version)) return hit ?? null;
    let c: Comparison | null = comparison;
    if (converter) {
      const schema = converter.schema(version);
      const o = schema === undefined ? undefined : converter.convert(before, apiVersion, version);
      const n = schema === undefined ? undefined : converter.convert(after, apiVersion, version);
      c = schema === undefined || o === undefined || n === undefined ? null : excludeFields(diffOwnedChanged(o, n, schema, defs), ignored);
    }
    cache.set(version, c);
    return c;
  };
}

/**
 * merge.Updater's update: every manager other than `workflow` loses the fields that changed (they are
 * conflicts for appliers unless forced) and the fields that were removed, each seen from the version the
 * manager used; managers left empty, or of a version no longer served, go. Returns the conflicting
 * fields per manager (in its version) when not forced and there are any (managers unchanged).
 */
export function takeOwnership(
  managed: Managed,
  workflow: string,
  comparison: Comparison | VersionedComparison,
  force: boolean,
): Map<string, FieldSet> | null {
  const at = (v: string): Comparison | null => (typeof comparison === 'function' ? comparison(v) : comparison);
  const conflicts = new Map<string, FieldSet>();
  const dropped: string[] = [];
  for (const [id, vs] of managed.fields) {
    if (id === workflow) continue;
    const cmp = at(vs.apiVersion);
    if (cmp === null) {
      dropped.push(id);
      continue;
    }
    const c = vs.set.intersection(cmp.modified.union(cmp.added));
    if (!c.empty()) conflicts.set(id, c);
  }
  if (!force && conflicts.size > 0) return conflicts;
  for (const id of dropped) managed.fields.delete(id);
  for (const [id, vs] of [...managed.fields]) {
    if (id === workflow) continue;
    const cmp = at(vs.apiVersion) as Comparison;
    let set = vs.set;
    const c = conflicts.get(id);
    if (c) set = set.difference(c);
    if (!cmp.removed.empty()) set = set.difference(cmp.removed);
    if (set.empty()) managed.fields.delete(id);
    else managed.fields.set(id, { ...vs, set });
  }
  return null;
}

/**
 * The managedFields after an Update operation (create, update or patch) by `manager` that made the
 * changes in `changed` (diffOwnedChanged of the object before and after, ignored fields excluded):
 * every other manager loses the changed and removed fields, the manager's Update entry for this
 * apiVersion and subresource gains the added and modified ones (metadata such as name or uid never
 * recorded) with `time`; the oldest Update entries beyond ten are merged into 'ancient-changes'.
 * Entries that do not decode are dropped, as Kubernetes does. Undefined when no manager is left.
 */
export function updateManagedFields(
  entries: unknown,
  manager: string,
  operation: Operation,
  subresource: string,
  apiVersion: string,
  time: string,
  changed: Comparison,
): JsonObject[] | undefined {
  const r = decodeManagedFields(entries);
  const managed = r.ok ? r.managed : emptyManaged();
  return encodeManagedFields(recordUpdate(managed, manager, operation, subresource, apiVersion, time, changed));
}

/** The Update chain on decoded managers: buildManagerInfo, managedFieldsUpdater, stripMeta, merge.Updater.Update, capManagers. */
export function recordUpdate(
  managedIn: Managed,
  manager: string,
  operation: Operation,
  subresource: string,
  apiVersion: string,
  time: string,
  changed: Comparison,
  ignored?: FieldSet,
  byVersion?: VersionedComparison,
): Managed {
  const managed = copyManaged(managedIn);
  const id = managerIdentifier({ manager: manager || 'unknown', operation, apiVersion, subresource });
  const self = 'current-operation';
  takeOwnership(managed, self, byVersion ?? changed, true);
  let set = changed.modified.union(changed.added).difference(changed.removed);
  if (ignored) set = set.recursiveDifference(ignored);
  if (!set.empty()) managed.fields.set(self, { set, apiVersion, applied: operation === 'Apply' });
  stripMeta(managed, self);
  const vs = managed.fields.get(self);
  if (vs) {
    managed.fields.delete(self);
    const previous = managed.fields.get(id);
    managed.fields.set(id, previous ? { set: vs.set.union(previous.set), apiVersion: vs.apiVersion, applied: vs.applied } : vs);
    managed.times.set(id, time);
  }
  capUpdateManagers(managed);
  return managed;
}

const refSchemas = new Map<string, Schema>();

/** `{ $ref: '#/definitions/<name>' }`, one object per name, so that resolved atoms are cached across calls. */
export function refSchema(definition: string): Schema {
  let s = refSchemas.get(definition);
  if (s === undefined) {
    s = Object.freeze({ $ref: REF_PREFIX + definition });
    refSchemas.set(definition, s);
  }
  return s;
}

/** Options of trackUpdate. */
export interface UpdateTracking {
  /** The field manager (query parameter fieldManager, or the user agent's first word). */
  manager: string;
  /** '' for the main resource, or 'status', 'scale', ... */
  subresource: string;
  /** The group/version of the request, e.g. 'v1' or 'apps/v1'. */
  apiVersion: string;
  /** The operation's time, RFC 3339 in seconds (metav1.Time). */
  time: string;
  schema: Schema;
  defs: Definitions;
  /**
   * The object a create is compared against: Kubernetes compares against the kind's Go zero value, so
   * a kind whose spec and status are struct values passes e.g. `{ spec: {}, status: {} }` (default `{}`).
   */
  emptyObject?: JsonObject;
  /** Fields the operation may not set (reset by the strategy); they are never recorded. */
  ignored?: FieldSet;
  /** The kind's other versions: managers of another version see the change converted to theirs. */
  converter?: VersionConverter;
}

function withoutManagedFields(obj: unknown): unknown {
  if (!isJsonObject(obj) || !isJsonObject(obj['metadata']) || !hasOwn(obj['metadata'], 'managedFields')) return obj;
  const meta = obj['metadata'];
  // Copied key by key rather than with `delete`, which leaves a slow dictionary-mode object.
  const metadata: JsonObject = {};
  for (const k of Object.keys(meta)) if (k !== 'managedFields') metadata[k] = meta[k];
  return { ...obj, metadata };
}

function uidOf(obj: unknown): string {
  return isJsonObject(obj) && isJsonObject(obj['metadata']) ? str(obj['metadata']['uid']) : '';
}

/**
 * FieldManager.UpdateNoErrors for a create (live null), update or patch: the managedFields to store on
 * `updated`. Starts from the request's managedFields (reset when `[]`, the live ones when absent or
 * invalid, always the live ones on a subresource); when there are no managers, an update of an existing
 * object records nothing (skipNonApplied) while a create is tracked. Undefined: no managedFields.
 */
export function trackUpdate(live: JsonObject | null, updated: JsonObject, opts: UpdateTracking): JsonObject[] | undefined {
  const liveMeta = live && isJsonObject(live['metadata']) ? live['metadata'] : {};
  const newMeta = isJsonObject(updated['metadata']) ? updated['metadata'] : {};
  // A create without managedFields in the request starts from no managers (what managedForUpdate gives for
  // two absent lists), without decoding either.
  const fresh = live === null && newMeta['managedFields'] === undefined;
  const managed = fresh ? emptyManaged() : managedForUpdate(liveMeta['managedFields'], newMeta['managedFields'], opts.subresource !== '');
  if (managed.fields.size === 0 && live !== null && uidOf(live) !== '') return undefined;
  if (live === null && managed.fields.size === 0) {
    const fieldsV1 = createdFieldsV1(updated, opts.schema, opts.defs, opts.ignored, opts.emptyObject);
    if (fieldsV1 !== null) {
      if (isEmptyObject(fieldsV1)) return undefined;
      // The one entry encodeManagedFields writes for this manager, without its identifier's JSON round trip.
      const e: JsonObject = { manager: opts.manager || 'unknown', operation: 'Update' };
      if (opts.apiVersion) e['apiVersion'] = opts.apiVersion;
      e['time'] = opts.time;
      e['fieldsType'] = 'FieldsV1';
      e['fieldsV1'] = fieldsV1;
      if (opts.subresource) e['subresource'] = opts.subresource;
      return [e];
    }
  }
  return trackUpdateGeneral(live, updated, managed, opts);
}

/** trackUpdate without the create fast path (the reference the fast path must agree with). */
export function trackUpdateSlow(live: JsonObject | null, updated: JsonObject, opts: UpdateTracking): JsonObject[] | undefined {
  const liveMeta = live && isJsonObject(live['metadata']) ? live['metadata'] : {};
  const newMeta = isJsonObject(updated['metadata']) ? updated['metadata'] : {};
  const managed = managedForUpdate(liveMeta['managedFields'], newMeta['managedFields'], opts.subresource !== '');
  if (managed.fields.size === 0 && live !== null && uidOf(live) !== '') return undefined;
  return trackUpdateGeneral(live, updated, managed, opts);
}

function isEmptyObject(o: JsonObject): boolean {
  for (const k in o) if (hasOwn(o, k)) return false;
  return true;
}

/**
 * The fields a create records, without a diff, as the FieldsV1 object encodeFieldsV1 would write for them:
 * compared with the kind's zero value (`zero`, default `{}`), every path of the new object that typed.Compare
 * visits is added (leaves, and containers as a whole) unless the zero value has it: then a leaf counts only
 * when its value differs, and a container is walked without becoming a member. Emitted bottom-up in path
 * element order (FieldsV1's order), leaving out metadata.managedFields, the ignored fields (recursively, as
 * Comparison.ExcludeFields) and the fields stripMeta drops (non-recursively), so the object equals the one the
 * Update chain encodes; no FieldSet is built. Null when the object's root is not a granular map or a value's
 * shape differs from the zero value's (the general path then handles it).
 */
function createdFieldsV1(obj: JsonObject, schema: Schema, defs: Definitions, ignored: FieldSet | undefined, zero?: JsonObject): JsonObject | null {
  const a = deduceAtom(atomOf(schema, defs), obj);
  if (!a.map || a.map.atomic) return null;
  if (Object.keys(obj).length === 0 && (zero === undefined || isEmptyObject(zero))) return {};
  try {
    return emitMapFields(obj, a.map, defs, ignored, STRIPPED_FIELDS, true, zero);
  } catch (e) {
    if (e === SHAPE_MISMATCH) return null;
    throw e;
  }
}

const SHAPE_MISMATCH = new Error('the object and the zero value differ in shape');

function isEmptyContainer(v: unknown): boolean {
  return Array.isArray(v) ? v.length === 0 : isJsonObject(v) ? isEmptyObject(v) : true;
}

/**
 * Whether `e` (value `v`, zero value `z`, present in the zero value) is a member: leaves (scalars, atomic
 * or both-empty containers) when their value changed; containers never. Sets `walk` when the children
 * must be visited.
 */
function zeroMember(v: unknown, z: unknown, type: Schema, defs: Definitions): { member: boolean; walk: boolean } {
  const a = deduceAtom(atomOf(type, defs), v);
  const container = a.map ? isJsonObject(v) : a.list ? Array.isArray(v) : false;
  if (!container) {
    if (a.map || a.list) throw SHAPE_MISMATCH;
    return { member: !equalValues(z, v), walk: false };
  }
  if (z !== null && (a.map ? !isJsonObject(z) : !Array.isArray(z))) throw SHAPE_MISMATCH;
  const atomic = a.map ? a.map.atomic : a.list!.atomic;
  if (atomic || (isEmptyContainer(v) && isEmptyContainer(z))) return { member: !equalValues(z, v), walk: false };
  return { member: false, walk: true };
}

/**
 * The FieldsV1 value of one path element: its children (undefined when it has none), plus the '.' key
 * (last, as emitV1 writes it) when the element is also a member.
 */
function emitted(member: boolean, sub: JsonObject | undefined): JsonObject | undefined {
  if (sub === undefined) return member ? {} : undefined;
  if (member) sub['.'] = {};
  return sub;
}

/** The FieldsV1 object of the paths below `v` with the ignored and stripped subsets below it; undefined when none. */
function emitChild(v: unknown, type: Schema, defs: Definitions, ig: FieldSet | undefined, st: FieldSet | undefined, z?: unknown): JsonObject | undefined {
  const a = deduceAtom(atomOf(type, defs), v);
  if (a.map) {
    if (a.map.atomic || !isJsonObject(v) || (isEmptyObject(v) && isEmptyContainer(z))) return undefined;
    const out = emitMapFields(v, a.map, defs, ig, st, false, isJsonObject(z) ? z : undefined);
    return isEmptyObject(out) ? undefined : out;
  }
  if (a.scalar) return undefined;
  if (a.list) {
    // Go zero values never hold list items: every item is new.
    if (a.list.atomic || !Array.isArray(v) || v.length === 0) return undefined;
    const list = a.list;
    const L = indexList(list, v, defs);
    const order = L.order.length < 2 ? L.order : L.order.slice().sort(comparePathElements);
    const out: JsonObject = {};
    let any = false;
    for (let i = 0; i < order.length; i++) {
      const e = order[i]!;
      if (ig?.hasMember(e)) continue;
      const item = L.items.get(peId(e))?.item;
      const member = !st?.hasMember(e);
      const value = emitted(member, emitChild(item, list.elem, defs, ig?.child(e), st?.child(e)));
      if (value === undefined) continue;
      out[serializePathElement(e)] = value;
      any = true;
    }
    return any ? out : undefined;
  }
  return undefined;
}

/**
 * Object.keys(v) in compareBytes order. Objects have few keys, often already in order: an insertion sort
 * in place allocates nothing, where Array.prototype.sort with a comparator allocates its work arrays.
 */
function sortedKeys(v: JsonObject): string[] {
  const keys = Object.keys(v);
  const n = keys.length;
  if (n > 32) return keys.sort(compareBytes);
  for (let i = 1; i < n; i++) {
    const k = keys[i] as string;
    let j = i - 1;
    if (compareBytes(keys[j] as string, k) <= 0) continue;
    do {
      keys[j + 1] = keys[j] as string;
      j--;
    } while (j >= 0 && compareBytes(keys[j] as string, k) > 0);
    keys[j + 1] = k;
  }
  return keys;
}

function emitMapFields(
  v: JsonObject,
  m: NonNullable<Atom['map']>,
  defs: Definitions,
  ig: FieldSet | undefined,
  st: FieldSet | undefined,
  root: boolean,
  zero?: JsonObject,
): JsonObject {
  const out: JsonObject = {};
  const keys = sortedKeys(v);
  // Indexed loops here and below: the walk is recursive and often runs unoptimized, where a for-of
  // allocates an iterator result per element.
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i]!;
    let val = v[key];
    if (val === undefined) continue;
    if (ig !== undefined && hasFieldMember(ig, key)) continue;
    if (root && key === 'metadata' && isJsonObject(val) && hasOwn(val, 'managedFields')) {
      val = { ...val };
      delete (val as JsonObject)['managedFields'];
    }
    const type = mapFieldType(m, key) ?? UNTYPED_ATOMIC;
    const z = zero?.[key];
    const igc = ig === undefined ? undefined : fieldChild(ig, key);
    const stc = st === undefined ? undefined : fieldChild(st, key);
    let member = true;
    let sub: JsonObject | undefined;
    if (z === undefined) sub = emitChild(val, type, defs, igc, stc);
    else {
      const zm = zeroMember(val, z, type, defs);
      member = zm.member;
      if (zm.walk) sub = emitChild(val, type, defs, igc, stc, z);
    }
    const value = emitted(member && !(st !== undefined && hasFieldMember(st, key)), sub);
    if (value !== undefined) out['f:' + key] = value;
  }
  return out;
}

/**
 * hasMember of the field element `key`, by a scan for an equal field name (a field element equals another
 * exactly when their names are equal); the sets it looks in (ignored, stripped) have a few members.
 */
function hasFieldMember(set: FieldSet, key: string): boolean {
  const members = set.members;
  for (let i = 0; i < members.length; i++) {
    const m = members[i]!;
    if ('field' in m && m.field === key) return true;
  }
  return false;
}

/** child() of the field element `key`, found the same way. */
function fieldChild(set: FieldSet, key: string): FieldSet | undefined {
  const children = set.children;
  for (let i = 0; i < children.length; i++) {
    const c = children[i]!;
    if ('field' in c.pe && c.pe.field === key) return c.set;
  }
  return undefined;
}

function trackUpdateGeneral(live: JsonObject | null, updated: JsonObject, managed: Managed, opts: UpdateTracking): JsonObject[] | undefined {
  const before = withoutManagedFields(live ?? opts.emptyObject ?? {});
  const after = withoutManagedFields(updated);
  const changed = excludeFields(diffOwnedChanged(before, after, opts.schema, opts.defs), opts.ignored);
  const byVersion = comparisonsByVersion(before, after, opts.apiVersion, changed, opts.converter, opts.defs, opts.ignored);
  const result = recordUpdate(managed, opts.manager, 'Update', opts.subresource, opts.apiVersion, opts.time, changed, opts.ignored, byVersion);
  return encodeManagedFields(result);
}
