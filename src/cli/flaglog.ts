/**
 * At -v 1 and above kube-apiserver logs every flag with its value at startup (cliflag.PrintFlags:
 * `FLAG: --secure-port="6443"`, sorted by name); so does orch-apiserver.
 */
import { SERVER_FEATURE_GATES, SERVER_FLAGS, type ServerOptions } from '../server/options.js';
import { camelCase, formatDuration, type FlagSpec } from '../util/flags.js';
import type { Logger } from '../util/log.js';

/** A value as pflag's Value.String() prints it. */
function flagText(spec: FlagSpec, value: unknown, options: ServerOptions): string {
  if (spec.name === 'feature-gates') {
    return SERVER_FEATURE_GATES.filter((g) => options.featureGates[g.name] !== g.default)
      .map((g) => `${g.name}=${String(options.featureGates[g.name])}`)
      .sort()
      .join(',');
  }
  if (value === undefined || value === null) return '';
  if (spec.type === 'duration' && typeof value === 'number') return formatDuration(value);
  if (Array.isArray(value)) return `[${value.join(',')}]`;
  if (typeof value === 'object') {
    const v = value as Record<string, unknown>;
    if ('min' in v && 'max' in v) return `${String(v.min)}-${String(v.max)}`;
    const pairs = Object.entries(v)
      .map(([k, x]) => `${k}=${String(x)}`)
      .sort();
    return spec.type === 'stringToString' ? `[${pairs.join(',')}]` : pairs.join(',');
  }
  return typeof value === 'string' ? value : JSON.stringify(value);
}

export function logFlags(logger: Logger, options: ServerOptions): void {
  const v = logger.v(1);
  if (!v.enabled) return;
  const fields = options as unknown as Record<string, unknown>;
  const specs = [...SERVER_FLAGS].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const spec of specs) v.info(`FLAG: --${spec.name}=${JSON.stringify(flagText(spec, fields[camelCase(spec.name)], options))}`);
}
