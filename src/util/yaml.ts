/**
 * The `yaml` package, loaded on first use: about 70 modules that a server answering JSON never needs, so
 * that startup does not pay for them (it is a CommonJS package, so it loads synchronously when asked for).
 */
import { createRequire } from 'node:module';
import type * as Yaml from 'yaml';

const requireCjs = createRequire(import.meta.url);
let loaded: typeof Yaml | undefined;

export function yaml(): typeof Yaml {
  loaded ??= requireCjs('yaml') as typeof Yaml;
  return loaded;
}
