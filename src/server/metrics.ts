/**
 * The server's metrics: one prom-client Registry per server value (never the global default registry),
 * served at /metrics in Prometheus text format, with the apiserver metrics Kubernetes 1.23 dashboards read
 * and the process metrics.
 *
 * Kubernetes' metric framework (component-base/metrics) is followed where it shows: help texts start with
 * the stability level ('[STABLE] ', '[ALPHA] '); a metric deprecated in the current minor version says
 * '(Deprecated since 1.23.0)'; one deprecated in an earlier version is hidden unless
 * --show-hidden-metrics-for-version names the previous minor version; --disabled-metrics leaves metrics out;
 * --allow-metric-labels 'metric,label=v1,v2' turns any other value of that label into 'unexpected'.
 *
 * Request metrics are kept in plain maps keyed by one string per label combination and handed to the
 * registry when scraped, so that a request costs a string concatenation and a map lookup.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Counter as CounterT, Gauge as GaugeT, Histogram as HistogramT, Metric, Registry as RegistryT } from 'prom-client';
import type { RequestKind, RequestMetricsSink } from '../filters/metrics.js';
import type { RequestInfo } from '../filters/requestinfo.js';
import type { AdmissionMetricsSink, DurationSeries } from '../registry/admission/metrics.js';

export type StabilityLevel = 'ALPHA' | 'STABLE';

export interface MetricsConfig {
  /** --disabled-metrics: fully qualified names. */
  disabledMetrics?: readonly string[];
  /** --allow-metric-labels: 'metric,label' -> 'v1,v2'. */
  allowMetricLabels?: Readonly<Record<string, string>>;
  /** --show-hidden-metrics-for-version: '<major>.<minor>', the previous minor version. */
  showHiddenMetricsForVersion?: string;
  /** The server's version, for deprecation: '1.23'. */
  currentVersion: string;
}

export interface MetricOptions<L extends string> {
  name: string;
  help: string;
  labelNames?: readonly L[];
  stability?: StabilityLevel;
  /** '1.23.0': shown as deprecated in 1.23, hidden from 1.24 on. */
  deprecatedVersion?: string;
}

// prom-client's classes, loaded from their own modules: the package's index also loads its default
// metrics, the cluster aggregator, the push gateway and OpenTelemetry, some 50 ms of startup we do not use.
const requirePromClient = createRequire(import.meta.url);
const Registry = requirePromClient('prom-client/lib/registry') as typeof RegistryT;
const Counter = requirePromClient('prom-client/lib/counter') as typeof CounterT;
const Gauge = requirePromClient('prom-client/lib/gauge') as typeof GaugeT;
const Histogram = requirePromClient('prom-client/lib/histogram') as typeof HistogramT;
type Counter<L extends string> = CounterT<L>;
type Gauge<L extends string> = GaugeT<L>;
type Histogram<L extends string> = HistogramT<L>;

/** apiserver_request_duration_seconds buckets of Kubernetes 1.23 (kubernetes/kubernetes#106306). */
export const REQUEST_DURATION_BUCKETS: readonly number[] = [
  0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 45, 60,
];

/** The admission step, controller and webhook duration buckets of Kubernetes 1.23. */
export const ADMISSION_DURATION_BUCKETS: readonly number[] = [0.005, 0.025, 0.1, 0.5, 1.0, 2.5];

/** apiserver_response_sizes: ExponentialBuckets(1000, 10, 8). */
export const RESPONSE_SIZE_BUCKETS: readonly number[] = [1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10];
/** etcd_request_duration_seconds buckets of Kubernetes 1.23. */
export const STORAGE_DURATION_BUCKETS: readonly number[] = [
  0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 45, 60,
];

const COMPONENT = 'apiserver';

/** CleanScope of Kubernetes 1.23: resource (a name, or a create), namespace, cluster, or '' for non-resource paths. */
export function cleanScope(info: RequestInfo): string {
  if (info.name !== '' || info.verb === 'create') return 'resource';
  if (info.namespace !== '') return 'namespace';
  return info.isResourceRequest ? 'cluster' : '';
}

type Labels = Record<string, string>;

interface RequestSeries {
  labels: Labels;
  count: number;
}

/** One series of a histogram: observe() finds the bucket and adds. */
export class HistogramSeries {
  readonly buckets: Float64Array;
  sum = 0;
  count = 0;
  constructor(
    readonly labels: Labels,
    private readonly bounds: readonly number[],
  ) {
    this.buckets = new Float64Array(bounds.length);
  }

  observe(value: number): void {
    this.sum += value;
    this.count++;
    const bounds = this.bounds;
    for (let i = 0; i < bounds.length; i++) {
      if (value <= bounds[i]!) {
        this.buckets[i]!++;
        return;
      }
    }
  }
}

export interface FastHistogram {
  /** The series of these labels; `key` identifies it (default: the labels as JSON). */
  series(labels: Labels, key?: string): HistogramSeries;
}

interface GaugeSeries {
  labels: Labels;
  value: number;
}

/** A collector prom-client's registry can serialize: values computed at scrape time. */
interface Collector {
  name: string;
  help: string;
  type: 'counter' | 'gauge' | 'histogram';
  aggregator: 'sum';
  get(): Promise<{ name: string; help: string; type: string; aggregator: string; values: { value: number; labels: Labels; metricName?: string }[] }>;
  reset(): void;
}

function parseVersion(v: string): [number, number] {
  const [major = 0, minor = 0] = v.replace(/^v/, '').split('.').map(Number);
  return [major, minor];
}

/** Sorts label names as Go's client prints them. */
function sortedLabels(labels: Labels): Labels {
  const out: Labels = {};
  for (const k of Object.keys(labels).sort()) out[k] = labels[k]!;
  return out;
}

export class ServerMetrics implements RequestMetricsSink {
  /** The registry /metrics serves; others register their metrics here (through counter()/gauge()/histogram()). */
  readonly registry = new Registry();
  /**
   * The kind of a served resource (and subresource, when given), or undefined when the server has no route
   * for it: such requests stay out of the request metrics (unbounded label values otherwise).
   */
  resourceKind: (group: string, version: string, resource: string, subresource?: string) => string | undefined = () => undefined;
  /** Non-resource paths that are instrumented (Kubernetes instruments its health checks). */
  instrumentedPath: (path: string) => boolean = (path) => /^\/(healthz|livez|readyz)(\/|$)/.test(path);

  private readonly disabled: ReadonlySet<string>;
  private readonly allow = new Map<string, Map<string, ReadonlySet<string>>>();
  private readonly current: [number, number];
  private readonly showHidden: boolean;
  private readonly registeredCounts = new Map<string, number>();
  private hiddenCount = 0;
  private disabledCount = 0;

  private readonly requests = new Map<string, RequestSeries>();
  private readonly durations = new Map<string, HistogramSeries | null>();
  private duration: FastHistogram | undefined;
  private responseSizes: FastHistogram | undefined;
  private readonly sizes = new Map<string, HistogramSeries | null>();
  private readonly longRunningSeries = new Map<string, GaugeSeries>();
  private readonly terminations = new Map<string, RequestSeries>();
  private readonly droppedCounts: Record<RequestKind, number> = { readOnly: 0, mutating: 0 };
  private readonly watchers = new Map<string, GaugeSeries>();
  /**
   * In-flight watermarks as Kubernetes keeps them: the gauge shows the most requests in flight during the
   * last complete one-second period. Periods roll lazily, when requests start or end and when scraped.
   */
  private readonly inflightNow: Record<RequestKind, number> = { readOnly: 0, mutating: 0 };
  private readonly inflightMax: Record<RequestKind, number> = { readOnly: 0, mutating: 0 };
  private readonly inflightReported: Record<RequestKind, number> = { readOnly: 0, mutating: 0 };
  private inflightPeriodStart = performance.now();
  private admissionSink: AdmissionMetricsSink | undefined;

  constructor(cfg: MetricsConfig) {
    this.disabled = new Set(cfg.disabledMetrics ?? []);
    this.current = parseVersion(cfg.currentVersion);
    this.showHidden = (cfg.showHiddenMetricsForVersion ?? '') !== '';
    for (const [key, values] of Object.entries(cfg.allowMetricLabels ?? {})) {
      const [metric, label, ...rest] = key.split(',').map((s) => s.trim());
      if (!metric || !label || rest.length > 0) throw new Error(`--allow-metric-labels: "${key}" is not of the form <MetricName>,<LabelName>`);
      const byLabel = this.allow.get(metric) ?? new Map<string, ReadonlySet<string>>();
      byLabel.set(label, new Set(values.split(',').map((s) => s.trim()).filter((s) => s !== '')));
      this.allow.set(metric, byLabel);
    }
    this.registerBuiltins();
  }

  // ---- the framework ----------------------------------------------------------------------------

  /**
   * Whether a metric is exposed, counting it as component-base does; and its help text with the stability
   * prefix and deprecation notice. undefined: disabled or hidden.
   */
  private admit(opts: MetricOptions<string>): string | undefined {
    const stability = opts.stability ?? 'ALPHA';
    if (this.disabled.has(opts.name)) {
      this.disabledCount++;
      return undefined;
    }
    let help = opts.help;
    if (opts.deprecatedVersion) {
      const [major, minor] = parseVersion(opts.deprecatedVersion);
      const hidden = major < this.current[0] || (major === this.current[0] && minor < this.current[1]);
      if (hidden && !this.showHidden) {
        this.hiddenCount++;
        return undefined;
      }
      help = `(Deprecated since ${opts.deprecatedVersion}) ${help}`;
    }
    const key = `${stability}\0${opts.deprecatedVersion ?? ''}`;
    this.registeredCounts.set(key, (this.registeredCounts.get(key) ?? 0) + 1);
    return `[${stability}] ${help}`;
  }

  /** A label value after --allow-metric-labels: 'unexpected' when the metric's label has an allow-list without it. */
  allowedValue(metric: string, label: string, value: string): string {
    const allowed = this.allow.get(metric)?.get(label);
    return allowed && !allowed.has(value) ? 'unexpected' : value;
  }

  private allowLabels(metric: string, labels: Labels): Labels {
    const rules = this.allow.get(metric);
    if (!rules) return labels;
    const out: Labels = { ...labels };
    for (const [label, allowed] of rules) if (label in out && !allowed.has(out[label]!)) out[label] = 'unexpected';
    return out;
  }

  /** Wraps a prom-client metric's label-taking methods with the allow-list of its name. */
  private guard<T extends Counter<string> | Gauge<string> | Histogram<string>>(name: string, metric: T): T {
    if (!this.allow.has(name)) return metric;
    const m = metric as unknown as Record<string, (...args: unknown[]) => unknown>;
    for (const method of ['inc', 'dec', 'set', 'observe', 'labels', 'remove', 'startTimer']) {
      const original = m[method];
      if (typeof original !== 'function') continue;
      m[method] = (...args: unknown[]) => {
        if (args[0] !== null && typeof args[0] === 'object') args[0] = this.allowLabels(name, args[0] as Labels);
        return original.apply(metric, args);
      };
    }
    return metric;
  }

  /** A counter in this server's registry; disabled or hidden ones are returned unregistered (a no-op for scrapes). */
  counter<L extends string>(opts: MetricOptions<L>): Counter<L> {
    const help = this.admit(opts);
    const c = new Counter<L>({ name: opts.name, help: help ?? opts.help, labelNames: opts.labelNames ?? [], registers: help ? [this.registry] : [] });
    return this.guard(opts.name, c);
  }

  gauge<L extends string>(opts: MetricOptions<L> & { collect?: (this: Gauge<L>) => void | Promise<void> }): Gauge<L> {
    const help = this.admit(opts);
    const g = new Gauge<L>({
      name: opts.name,
      help: help ?? opts.help,
      labelNames: opts.labelNames ?? [],
      registers: help ? [this.registry] : [],
      ...(opts.collect ? { collect: opts.collect } : {}),
    });
    return this.guard(opts.name, g);
  }

  histogram<L extends string>(opts: MetricOptions<L> & { buckets: readonly number[] }): Histogram<L> {
    const help = this.admit(opts);
    const h = new Histogram<L>({
      name: opts.name,
      help: help ?? opts.help,
      labelNames: opts.labelNames ?? [],
      buckets: [...opts.buckets],
      registers: help ? [this.registry] : [],
    });
    return this.guard(opts.name, h);
  }

  /** Registers a collector computed at scrape time from `values` (label objects are allow-listed here). */
  private collector(opts: MetricOptions<string> & { type: 'counter' | 'gauge' }, values: () => Iterable<{ labels: Labels; value: number }>): void {
    const help = this.admit(opts);
    if (!help) return;
    const name = opts.name;
    const c: Collector = {
      name,
      help,
      type: opts.type,
      aggregator: 'sum',
      get: () => {
        const out: { value: number; labels: Labels }[] = [];
        for (const v of values()) out.push({ value: v.value, labels: this.allowLabels(name, v.labels) });
        return Promise.resolve({ name, help, type: opts.type, aggregator: 'sum', values: out });
      },
      reset: () => {},
    };
    this.registry.registerMetric(c as unknown as Metric);
  }

  /** A gauge per label value of a map (e.g. the storage's object counts), read at scrape time. */
  gaugeFromMap(opts: MetricOptions<string>, label: string, read: () => ReadonlyMap<string, number>, labelOf: (key: string) => string = (k) => k): void {
    this.collector({ ...opts, type: 'gauge' }, function* () {
      for (const [k, v] of read()) yield { labels: { [label]: labelOf(k) }, value: v };
    });
  }

  /**
   * The text of /metrics in Prometheus text format 0.0.4, as Go's client writes it: families sorted by name,
   * families without samples left out, no blank lines.
   */
  async render(): Promise<string> {
    const families = (this.registry.getMetricsAsArray() as unknown as { name: string; get(): Promise<unknown> }[]).sort((a, b) =>
      a.name < b.name ? -1 : a.name > b.name ? 1 : 0,
    );
    const parts: string[] = [];
    for (const m of families) {
      const data = (await m.get()) as { name: string; help: string; type: string; values: { value: number; labels: Labels; metricName?: string }[] };
      if (data.values.length === 0) continue;
      parts.push(`# HELP ${data.name} ${escapeHelp(data.help)}\n# TYPE ${data.name} ${data.type}\n`);
      for (const v of data.values) parts.push(`${v.metricName ?? data.name}${formatLabels(v.labels)} ${formatValue(v.value)}\n`);
    }
    return parts.join('');
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  // ---- request metrics (RequestMetricsSink) -------------------------------------------------------

  recorded(info: RequestInfo): boolean {
    if (!info.isResourceRequest) return this.instrumentedPath(info.path);
    return this.resourceKind(info.apiGroup, info.apiVersion, info.resource, info.subresource) !== undefined;
  }

  inflight(kind: RequestKind, delta: 1 | -1): void {
    this.rollInflight(performance.now());
    const n = (this.inflightNow[kind] += delta);
    if (n > this.inflightMax[kind]) this.inflightMax[kind] = n;
  }

  /** Ends the watermark period(s) that passed by `now`: the last one's maximum becomes the reported value. */
  private rollInflight(now: number): void {
    const elapsed = now - this.inflightPeriodStart;
    if (elapsed < 1000) return;
    for (const kind of ['mutating', 'readOnly'] as const) {
      // After a whole period without changes its maximum is simply the current count.
      this.inflightReported[kind] = elapsed < 2000 ? this.inflightMax[kind] : this.inflightNow[kind];
      this.inflightMax[kind] = this.inflightNow[kind];
    }
    this.inflightPeriodStart = now - (elapsed % 1000);
  }

  longRunning(verb: string, info: RequestInfo, delta: 1 | -1): void {
    const scope = cleanScope(info);
    const key = `${verb}\0${info.apiGroup}\0${info.apiVersion}\0${info.resource}\0${info.subresource}\0${scope}`;
    let s = this.longRunningSeries.get(key);
    if (!s) {
      const labels = { component: COMPONENT, group: info.apiGroup, resource: info.resource, scope, subresource: info.subresource, verb, version: info.apiVersion };
      s = { labels, value: 0 };
      this.longRunningSeries.set(key, s);
    }
    s.value += delta;
    if (verb === 'WATCH' && info.isResourceRequest) {
      const kind = this.resourceKind(info.apiGroup, info.apiVersion, info.resource) ?? '';
      const wkey = `${info.apiGroup}\0${info.apiVersion}\0${kind}`;
      let w = this.watchers.get(wkey);
      if (!w) {
        w = { labels: { group: info.apiGroup, kind, version: info.apiVersion }, value: 0 };
        this.watchers.set(wkey, w);
      }
      w.value += delta;
    }
  }

  observe(verb: string, dryRun: string, info: RequestInfo, code: number, seconds: number): void {
    // A health check path that does not exist (404) has no route in Kubernetes: not recorded.
    if (!info.isResourceRequest && code === 404) return;
    const scope = cleanScope(info);
    const resource = info.isResourceRequest ? info.resource : '';
    const subresource = info.isResourceRequest ? info.subresource : info.path;
    const base = `${verb}\0${dryRun}\0${info.apiGroup}\0${info.apiVersion}\0${resource}\0${subresource}\0${scope}`;
    const key = `${base}\0${code}`;
    let r = this.requests.get(key);
    if (!r) {
      r = { labels: sortedLabels({ ...this.baseLabels(verb, dryRun, info, resource, subresource, scope), code: String(code) }), count: 0 };
      this.requests.set(key, r);
    }
    r.count++;
    if (verb === 'WATCH' || verb === 'CONNECT') return; // Kubernetes leaves long-running requests out of the latency histogram.
    let d = this.durations.get(base);
    if (d === undefined) {
      d = this.duration?.series(this.baseLabels(verb, dryRun, info, resource, subresource, scope), base) ?? null;
      this.durations.set(base, d);
    }
    d?.observe(seconds);
  }

  terminated(verb: string, dryRun: string, info: RequestInfo, code: number, kind?: RequestKind): void {
    const scope = cleanScope(info);
    const resource = info.isResourceRequest ? info.resource : '';
    const subresource = info.isResourceRequest ? info.subresource : info.path;
    const key = `${verb}\0${info.apiGroup}\0${info.apiVersion}\0${resource}\0${subresource}\0${scope}\0${code}`;
    let t = this.terminations.get(key);
    if (!t) {
      const labels = { verb, group: info.apiGroup, version: info.apiVersion, resource, subresource, scope, component: COMPONENT, code: String(code) };
      t = { labels: sortedLabels(labels), count: 0 };
      this.terminations.set(key, t);
    }
    t.count++;
    if (kind === undefined) return;
    // A request dropped by the in-flight limits is also counted, with its 429, among all requests (RecordDroppedRequest).
    this.droppedCounts[kind]++;
    const rkey = `${verb}\0${dryRun}\0${info.apiGroup}\0${info.apiVersion}\0${resource}\0${subresource}\0${scope}\0${code}`;
    let r = this.requests.get(rkey);
    if (!r) {
      r = { labels: sortedLabels({ ...this.baseLabels(verb, dryRun, info, resource, subresource, scope), code: String(code) }), count: 0 };
      this.requests.set(rkey, r);
    }
    r.count++;
  }

  /** apiserver_response_sizes: the size of GET and LIST answers (Content-Length), as Kubernetes records it. */
  observeSize(verb: string, info: RequestInfo, bytes: number): void {
    if ((verb !== 'GET' && verb !== 'LIST') || !this.responseSizes) return;
    const scope = cleanScope(info);
    const key = `${verb}\0${info.apiGroup}\0${info.apiVersion}\0${info.resource}\0${info.subresource}\0${scope}`;
    let s = this.sizes.get(key);
    if (s === undefined) {
      const labels = { verb, group: info.apiGroup, version: info.apiVersion, resource: info.resource, subresource: info.subresource, scope, component: COMPONENT };
      s = this.responseSizes.series(labels, key);
      this.sizes.set(key, s);
    }
    s?.observe(bytes);
  }

  private baseLabels(verb: string, dryRun: string, info: RequestInfo, resource: string, subresource: string, scope: string): Labels {
    return { verb, dry_run: dryRun, group: info.apiGroup, version: info.apiVersion, resource, subresource, scope, component: COMPONENT };
  }

  // ---- admission metrics --------------------------------------------------------------------------

  /**
   * The admission metrics of Kubernetes 1.23 (apiserver/pkg/admission/metrics), made on first use: the
   * chain's steps and plugins and the webhooks' calls and rejections. Series are found once by their
   * labels and kept by the caller, so an observation costs a bucket search.
   */
  get admission(): AdmissionMetricsSink {
    return (this.admissionSink ??= this.makeAdmissionMetrics());
  }

  private makeAdmissionMetrics(): AdmissionMetricsSink {
    const histogram = (name: string, help: string) =>
      this.fastHistogram({ name: `apiserver_admission_${name}`, help, stability: 'STABLE', buckets: ADMISSION_DURATION_BUCKETS });
    const step = histogram(
      'step_admission_duration_seconds',
      'Admission sub-step latency histogram in seconds, broken out for each operation and API resource and step type (validate or admit).',
    );
    const controller = histogram(
      'controller_admission_duration_seconds',
      'Admission controller latency histogram in seconds, identified by name and broken out for each operation and API resource and type (validate or admit).',
    );
    const webhook = histogram(
      'webhook_admission_duration_seconds',
      'Admission webhook latency histogram in seconds, identified by name and broken out for each operation and API resource and type (validate or admit).',
    );
    const rejections = this.counter({
      name: 'apiserver_admission_webhook_rejection_count',
      help: 'Admission webhook rejection count, identified by name and broken out for each admission type (validating or admit) and operation. Additional labels specify an error type (calling_webhook_error or apiserver_internal_error if an error occurred; no_error otherwise) and optionally a non-zero rejection code if the webhook rejects the request with an HTTP status code (honored by the apiserver when the code is greater or equal to 400). Codes greater than 600 are truncated to 600, to keep the metrics cardinality bounded.',
      labelNames: ['name', 'type', 'operation', 'error_type', 'rejection_code'],
    });
    const requests = this.counter({
      name: 'apiserver_admission_webhook_request_total',
      help: 'Admission webhook request total, identified by name and broken out for each admission type (validating or mutating) and operation. Additional labels specify whether the request was rejected or not and an HTTP status code. Codes greater than 600 are truncated to 600, to keep the metrics cardinality bounded.',
      labelNames: ['name', 'type', 'operation', 'code', 'rejected'],
    });
    const stepSummary = this.summary({
      name: 'apiserver_admission_step_admission_duration_seconds_summary',
      help: 'Admission sub-step latency summary in seconds, broken out for each operation and API resource and step type (validate or admit).',
    });
    const none: DurationSeries = { observe: () => {} };
    const code = (c: number) => String(Math.min(c, 600));
    return {
      step: (type, operation, rejected) => {
        const labels = { type, operation, rejected: String(rejected) };
        const key = `${type}\0${operation}\0${rejected}`;
        const h = step?.series(labels, key);
        const sm = stepSummary?.series(labels, key);
        if (!h || !sm) return h ?? sm ?? none;
        return { observe: (v) => (h.observe(v), sm.observe(v)) };
      },
      controller: (name, type, operation, rejected) =>
        controller?.series({ name, type, operation, rejected: String(rejected) }, `${name}\0${type}\0${operation}\0${rejected}`) ?? none,
      webhook: (name, type, operation, rejected, status, seconds) => {
        requests.inc({ code: code(status), name, operation, rejected: String(rejected), type }); // label order as Go prints it
        webhook?.series({ name, type, operation, rejected: String(rejected) }, `${name}\0${type}\0${operation}\0${rejected}`).observe(seconds);
      },
      webhookRejection: (name, type, operation, errorType, status) => {
        rejections.inc({ error_type: errorType, name, operation, rejection_code: code(status), type });
      },
    };
  }

  // ---- the built-in metrics -----------------------------------------------------------------------

  private registerBuiltins(): void {
    const inflightReported = this.inflightReported;
    this.collector(
      {
        name: 'apiserver_request_total',
        help: 'Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.',
        stability: 'STABLE',
        type: 'counter',
      },
      () => [...this.requests.values()].map((r) => ({ labels: r.labels, value: r.count })),
    );
    this.duration = this.fastHistogram({
      name: 'apiserver_request_duration_seconds',
      help: 'Response latency distribution in seconds for each verb, dry run value, group, version, resource, subresource, scope and component.',
      stability: 'STABLE',
      buckets: REQUEST_DURATION_BUCKETS,
    });
    this.responseSizes = this.fastHistogram({
      name: 'apiserver_response_sizes',
      help: 'Response size distribution in bytes for each group, version, verb, resource, subresource, scope and component.',
      stability: 'STABLE',
      buckets: RESPONSE_SIZE_BUCKETS,
    });
    this.collector(
      {
        name: 'apiserver_current_inflight_requests',
        help: 'Maximal number of currently used inflight request limit of this apiserver per request kind in last second.',
        stability: 'STABLE',
        type: 'gauge',
      },
      () => {
        this.rollInflight(performance.now());
        return (['mutating', 'readOnly'] as const).map((kind) => ({ labels: { request_kind: kind }, value: inflightReported[kind] }));
      },
    );
    this.collector(
      {
        name: 'apiserver_request_terminations_total',
        help: 'Number of requests which apiserver terminated in self-defense.',
        type: 'counter',
      },
      () => [...this.terminations.values()].map((t) => ({ labels: t.labels, value: t.count })),
    );
    this.collector(
      { name: 'apiserver_dropped_requests_total', help: "Number of requests dropped with 'Try again later' response", type: 'counter' },
      () => (['mutating', 'readOnly'] as const).filter((k) => this.droppedCounts[k] > 0).map((k) => ({ labels: { request_kind: k }, value: this.droppedCounts[k] })),
    );
    const longRunningHelp = 'Gauge of all active long-running apiserver requests broken out by verb, group, version, resource, scope and component. Not all requests are tracked this way.';
    const longRunning = () => [...this.longRunningSeries.values()].map((s) => ({ labels: sortedLabels(s.labels), value: s.value }));
    this.collector({ name: 'apiserver_longrunning_gauge', help: longRunningHelp, deprecatedVersion: '1.23.0', type: 'gauge' }, longRunning);
    this.collector({ name: 'apiserver_longrunning_requests', help: longRunningHelp, type: 'gauge' }, longRunning);
    this.collector(
      { name: 'apiserver_registered_watchers', help: 'Number of currently registered watchers for a given resources', type: 'gauge' },
      () => [...this.watchers.values()].map((w) => ({ labels: w.labels, value: w.value })),
    );
    this.registerProcessMetrics();
    this.collector({ name: 'registered_metric_total', help: 'The count of registered metrics broken by stability level and deprecation version.', type: 'counter' }, () =>
      [...this.registeredCounts].map(([key, value]) => {
        const [stability_level = '', deprecated_version = ''] = key.split('\0');
        return { labels: { deprecated_version, stability_level }, value };
      }),
    );
    this.collector({ name: 'disabled_metric_total', help: 'The count of disabled metrics.', type: 'counter' }, () => [{ labels: {}, value: this.disabledCount }]);
    this.collector({ name: 'hidden_metric_total', help: 'The count of hidden metrics.', type: 'counter' }, () => [{ labels: {}, value: this.hiddenCount }]);
  }

  /**
   * A histogram whose series are plain objects the caller keeps (no label lookup per observation);
   * `series(labels)` creates or finds one. Returns undefined when the metric is disabled.
   */
  fastHistogram(opts: MetricOptions<string> & { buckets: readonly number[] }): FastHistogram | undefined {
    const help = this.admit(opts);
    if (!help) return undefined;
    const name = opts.name;
    const buckets = opts.buckets;
    const all = new Map<string, HistogramSeries>();
    const c: Collector = {
      name,
      help,
      type: 'histogram',
      aggregator: 'sum',
      get: () => {
        const values: { value: number; labels: Labels; metricName: string }[] = [];
        for (const d of all.values()) {
          const labels = this.allowLabels(name, d.labels);
          let cumulative = 0;
          for (let i = 0; i < buckets.length; i++) {
            cumulative += d.buckets[i]!;
            values.push({ metricName: `${name}_bucket`, labels: { ...labels, le: String(buckets[i]) }, value: cumulative });
          }
          values.push({ metricName: `${name}_bucket`, labels: { ...labels, le: '+Inf' }, value: d.count });
          values.push({ metricName: `${name}_sum`, labels, value: d.sum });
          values.push({ metricName: `${name}_count`, labels, value: d.count });
        }
        return Promise.resolve({ name, help, type: 'histogram', aggregator: 'sum', values });
      },
      reset: () => {},
    };
    this.registry.registerMetric(c as unknown as Metric);
    return {
      series(labels: Labels, key = JSON.stringify(labels)): HistogramSeries {
        let d = all.get(key);
        if (!d) {
          d = new HistogramSeries(sortedLabels(labels), buckets);
          all.set(key, d);
        }
        return d;
      },
    };
  }

  /**
   * A summary without quantiles (component-base's SummaryOpts without objectives): `_sum` and `_count` per
   * series, kept by the caller as `fastHistogram` series are. Returns undefined when the metric is disabled.
   */
  summary(opts: MetricOptions<string>): { series(labels: Labels, key: string): DurationSeries } | undefined {
    const help = this.admit(opts);
    if (!help) return undefined;
    const name = opts.name;
    const all = new Map<string, { labels: Labels; sum: number; count: number }>();
    const c = {
      name,
      help,
      type: 'summary',
      aggregator: 'sum',
      get: () => {
        const values: { value: number; labels: Labels; metricName: string }[] = [];
        for (const d of all.values()) {
          const labels = this.allowLabels(name, d.labels);
          values.push({ metricName: `${name}_sum`, labels, value: d.sum }, { metricName: `${name}_count`, labels, value: d.count });
        }
        return Promise.resolve({ name, help, type: 'summary', aggregator: 'sum', values });
      },
      reset: () => {},
    };
    this.registry.registerMetric(c as unknown as Metric);
    return {
      series(labels: Labels, key: string): DurationSeries {
        let d = all.get(key);
        if (!d) all.set(key, (d = { labels: sortedLabels(labels), sum: 0, count: 0 }));
        const entry = d;
        return {
          observe: (v) => {
            entry.sum += v;
            entry.count++;
          },
        };
      },
    };
  }

  /** The process metrics of Go's process collector, and Node.js's heap, read at scrape time. */
  private registerProcessMetrics(): void {
    const startSeconds = Math.round(performance.timeOrigin) / 1000;
    // Process metrics carry no stability level in Kubernetes (they come from the Prometheus client): no prefix.
    const plain = (name: string, help: string, type: 'counter' | 'gauge', read: () => number | undefined) => {
      if (this.disabled.has(name)) {
        this.disabledCount++;
        return;
      }
      const c: Collector = {
        name,
        help,
        type,
        aggregator: 'sum',
        get: () => {
          const v = read();
          return Promise.resolve({ name, help, type, aggregator: 'sum', values: v === undefined ? [] : [{ labels: {}, value: v }] });
        },
        reset: () => {},
      };
      this.registry.registerMetric(c as unknown as Metric);
    };
    plain('process_cpu_seconds_total', 'Total user and system CPU time spent in seconds.', 'counter', () => {
      const u = process.cpuUsage();
      return (u.user + u.system) / 1e6;
    });
    plain('process_resident_memory_bytes', 'Resident memory size in bytes.', 'gauge', () => process.memoryUsage.rss());
    plain('process_virtual_memory_bytes', 'Virtual memory size in bytes.', 'gauge', () => procStatus('VmSize'));
    plain('process_start_time_seconds', 'Start time of the process since unix epoch in seconds.', 'gauge', () => startSeconds);
    plain('process_open_fds', 'Number of open file descriptors.', 'gauge', () => openFds());
    plain('process_max_fds', 'Maximum number of open file descriptors.', 'gauge', () => maxFds());
    plain('nodejs_heap_size_total_bytes', 'Process heap size from Node.js in bytes.', 'gauge', () => process.memoryUsage().heapTotal);
    plain('nodejs_heap_size_used_bytes', 'Process heap size used from Node.js in bytes.', 'gauge', () => process.memoryUsage().heapUsed);
    plain('nodejs_external_memory_bytes', 'Node.js external memory size in bytes.', 'gauge', () => process.memoryUsage().external);
    this.collector({ name: 'nodejs_version_info', help: 'Node.js version info.', type: 'gauge' }, () => [
      { labels: { version: process.version }, value: 1 },
    ]);
  }
}

function escapeHelp(text: string): string {
  return text.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
}

function formatLabels(labels: Labels | undefined): string {
  if (!labels) return '';
  const keys = Object.keys(labels);
  if (keys.length === 0) return '';
  return `{${keys.map((k) => `${k}="${String(labels[k]).replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"')}"`).join(',')}}`;
}

function formatValue(v: number): string {
  if (Number.isNaN(v)) return 'NaN';
  if (v === Infinity) return '+Inf';
  if (v === -Infinity) return '-Inf';
  return String(v);
}

/** A field of /proc/self/status in bytes (Linux), or undefined elsewhere. */
function procStatus(field: string): number | undefined {
  try {
    const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync('/proc/self/status', 'utf8'));
    return m ? Number(m[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}

function openFds(): number | undefined {
  try {
    return readdirSync('/proc/self/fd').length;
  } catch {
    return undefined;
  }
}

function maxFds(): number | undefined {
  try {
    const m = /^Max open files\s+(\d+)/m.exec(readFileSync('/proc/self/limits', 'utf8'));
    return m ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}
