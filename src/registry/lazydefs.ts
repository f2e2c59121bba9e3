/**
 * Schemas built on first use, for idle memory (issue 5): a kind whose definitions are large and only read by
 * requests (the pod's are 171 KB of source) keeps them in a CommonJS module (`definitions-data.cts`) that the
 * first read of any of them loads synchronously. The names are known up front, so listing which definitions
 * exist (keys, `in`) loads nothing; every read, spread or Object.assign sees the schemas as plain values.
 */
import type { Definitions, Schema } from './schema.js';

/** Turns `name` on `obj` into a plain data property holding `value`. */
function settle(obj: Definitions, name: string, value: Schema | undefined): void {
  Object.defineProperty(obj, name, { value, enumerable: true, configurable: true, writable: true });
}

/** Definitions named `names` whose schemas `load` returns, called once, on the first read of one of them. */
export function lazyDefinitions(names: readonly string[], load: () => Definitions): Definitions {
  let loaded: Definitions | undefined;
  const defs: Definitions = {};
  for (const name of names) {
    Object.defineProperty(defs, name, {
      enumerable: true,
      configurable: true,
      get(this: Definitions): Schema | undefined {
        loaded ??= load();
        const value = loaded[name];
        // The object read through (this set, or a merged set holding the same accessor) keeps the value.
        settle(this, name, value);
        return value;
      },
      set(this: Definitions, value: Schema) {
        settle(this, name, value);
      },
    });
  }
  return defs;
}

/**
 * The union of definition sets, later sets winning, as Object.assign makes it but without reading lazy
 * definitions: their accessors are copied and load on the first read from the merged set.
 */
export function mergeDefinitions(...sets: readonly Definitions[]): Definitions {
  const out: Definitions = {};
  for (const set of sets) Object.defineProperties(out, Object.getOwnPropertyDescriptors(set));
  return out;
}
