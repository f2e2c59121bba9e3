// client-go's REST client metrics as kubelet 1.23 exposes them on /metrics (component-base's
// prometheus/restclient adapters of k8s.io/client-go/tools/metrics):
//   rest_client_request_duration_seconds{verb,url}       histogram, ExponentialBuckets(0.001, 2, 10)
//   rest_client_rate_limiter_duration_seconds{verb,url}  histogram, same buckets; the time a request waited
//                                                        for its client's token bucket (--orch-api-qps/-burst,
//                                                        --event-qps/-burst; heartbeats have no limiter)
//   rest_client_requests_total{code,method,host}         counter; code "<error>" when no answer came
// The url label is client-go's finalURLTemplate: names and namespaces replaced by {name} and {namespace},
// query values by {value}, as url.URL.String() writes it (braces escaped). One value per agent (no global
// registry): the clients of one agent share it.

/** ExponentialBuckets(0.001, 2, 10). */
export const REST_CLIENT_BUCKETS: readonly number[] = Array.from({ length: 10 }, (_, i) => 0.001 * 2 ** i);

interface Series {
  labels: string;
  counts: number[];
  sum: number;
  count: number;
}

class HistogramVec {
  private readonly series = new Map<string, Series>();
  constructor(
    readonly name: string,
    readonly help: string,
    private readonly buckets: readonly number[],
  ) {}

  observe(labels: string, seconds: number): void {
    let s = this.series.get(labels);
    if (!s) this.series.set(labels, (s = { labels, counts: this.buckets.map(() => 0), sum: 0, count: 0 }));
    for (let i = 0; i < this.buckets.length; i++) if (seconds <= this.buckets[i]!) s.counts[i]!++;
    s.sum += seconds;
    s.count++;
  }

  render(out: string[]): void {
    out.push(`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} histogram`);
    for (const s of [...this.series.values()].sort((a, b) => (a.labels < b.labels ? -1 : 1))) {
      this.buckets.forEach((b, i) => out.push(`${this.name}_bucket{${s.labels},le="${b}"} ${s.counts[i]!}`));
      out.push(`${this.name}_bucket{${s.labels},le="+Inf"} ${s.count}`, `${this.name}_sum{${s.labels}} ${s.sum}`, `${this.name}_count{${s.labels}} ${s.count}`);
    }
  }
}

/** Prometheus' label value escaping. */
const esc = (v: string): string => v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');

export class RestClientMetrics {
  private readonly requestLatency = new HistogramVec('rest_client_request_duration_seconds', '[ALPHA] Request latency in seconds. Broken down by verb and URL.', REST_CLIENT_BUCKETS);
  private readonly rateLimiterLatency = new HistogramVec(
    'rest_client_rate_limiter_duration_seconds',
    '[ALPHA] Client side rate limiter latency in seconds. Broken down by verb and URL.',
    REST_CLIENT_BUCKETS,
  );
  private readonly results = new Map<string, number>();

  /** A request waited `ms` for its rate limiter (observed for every limited request, as client-go's tryThrottle). */
  rateLimited(verb: string, url: string, ms: number): void {
    this.rateLimiterLatency.observe(`url="${esc(url)}",verb="${esc(verb)}"`, ms / 1000);
  }

  /** A request got its answer's head (code) or failed (undefined) after `ms`. */
  done(verb: string, url: string, host: string, code: number | undefined, ms: number): void {
    this.requestLatency.observe(`url="${esc(url)}",verb="${esc(verb)}"`, ms / 1000);
    const key = `code="${code === undefined ? '<error>' : String(code)}",host="${esc(host)}",method="${esc(verb)}"`;
    this.results.set(key, (this.results.get(key) ?? 0) + 1);
  }

  /** The Prometheus text exposition (version 0.0.4). */
  render(): string {
    const out: string[] = [];
    this.rateLimiterLatency.render(out);
    this.requestLatency.render(out);
    out.push('# HELP rest_client_requests_total [ALPHA] Number of HTTP requests, partitioned by status code, method, and host.', '# TYPE rest_client_requests_total counter');
    for (const [k, v] of [...this.results].sort(([a], [b]) => (a < b ? -1 : 1))) out.push(`rest_client_requests_total{${k}} ${v}`);
    return `${out.join('\n')}\n`;
  }
}

/** Go's url.PathEscape-like escaping of what url.URL.String() escapes in a path segment we produce ({ and }). */
const escapeBraces = (s: string): string => s.replace(/\{/g, '%7B').replace(/\}/g, '%7D');

/**
 * client-go 1.23's finalURLTemplate of a request to `base` (the server URL) for `path` with `query` keys:
 * /api/v1/namespaces/ns/pods/p/status -> /api/v1/namespaces/{namespace}/pods/{name}/status; a path outside
 * /api and /apis -> /{prefix}; every query value -> {value} (keys sorted, as url.Values.Encode).
 */
export function urlTemplate(base: URL, path: string, queryKeys: readonly string[]): string {
  const basePath = base.pathname.replace(/\/$/, '');
  const segments = path.split('/');
  const origin = `${base.protocol}//${base.host}`;
  const query = queryKeys.length > 0 ? `?${[...queryKeys].sort().map((k) => `${encodeURIComponent(k)}=%7Bvalue%7D`).join('&')}` : '';
  if (segments.length <= 2) return `${origin}${basePath}${path}${query}`;
  const group = segments[1];
  let index: number;
  if (group === 'api') index = 3;
  else if (group === 'apis') index = 4;
  else return `${origin}${basePath}/${escapeBraces('{prefix}')}`;
  const n = segments.length - index;
  if (n === 2) segments[index + 1] = '{name}';
  else if (n === 3) segments[index + 1] = segments[index + 2] === 'finalize' || segments[index + 2] === 'status' ? '{name}' : '{namespace}';
  else if (n >= 4) {
    segments[index + 1] = '{namespace}';
    if (segments[index + 3] !== 'finalize' && segments[index + 3] !== 'status') segments[index + 3] = '{name}';
  }
  return `${origin}${basePath}${escapeBraces(segments.join('/'))}${query}`;
}
