/**
 * The egress dialer metrics of kube-apiserver 1.23 (egressselector/metrics): the latency of dials through a
 * proxy by protocol (http_connect, grpc) and transport (tcp, uds), and failures by the stage they failed at
 * (connect: reaching the proxy; proxy: the proxy's answer to the dial). Direct dials are not measured.
 */
import type { Counter, Histogram } from 'prom-client';
import type { Dialer } from '../../util/dial.js';
import type { ServerMetrics } from '../metrics.js';

export type DialStage = 'connect' | 'proxy';

/** A failed dial through a proxy, with the stage it failed at. */
export class DialError extends Error {
  constructor(
    message: string,
    readonly stage: DialStage,
  ) {
    super(message);
  }
}

const LATENCY_BUCKETS = [0.005, 0.025, 0.1, 0.5, 2.5, 12.5];

/**
 * Bound to the server's registry once the server exists. Dials before that (the etcd client's, made when the
 * storage opens) are kept and counted at bind, as kube-apiserver's global registry counts them.
 */
export class EgressMetrics {
  private latencies: Histogram<'protocol' | 'transport'> | undefined;
  private failures: Counter<'protocol' | 'transport' | 'stage'> | undefined;
  private early: (() => void)[] = [];

  bind(metrics: ServerMetrics): void {
    this.latencies = metrics.histogram({
      name: 'apiserver_egress_dialer_dial_duration_seconds',
      help: 'Dial latency histogram in seconds, labeled by the protocol (http-connect or grpc), transport (tcp or uds)',
      labelNames: ['protocol', 'transport'],
      buckets: LATENCY_BUCKETS,
    });
    this.failures = metrics.counter({
      name: 'apiserver_egress_dialer_dial_failure_count',
      help: 'Dial failure count, labeled by the protocol (http-connect or grpc), transport (tcp or uds), and stage (connect or proxy). The stage indicates at which stage the dial failed',
      labelNames: ['protocol', 'transport', 'stage'],
    });
    for (const record of this.early) record();
    this.early = [];
  }

  /** Records now, or at bind when not bound yet. */
  private record(what: () => void): void {
    if (this.latencies) what();
    else this.early.push(what);
  }

  /** The dialer, measured under these labels. */
  measure(dial: Dialer, protocol: 'http_connect' | 'grpc', transport: 'tcp' | 'uds'): Dialer {
    return async (host, port) => {
      const start = performance.now();
      try {
        const conn = await dial(host, port);
        const seconds = (performance.now() - start) / 1000;
        this.record(() => this.latencies?.observe({ protocol, transport }, seconds));
        return conn;
      } catch (err) {
        const stage = err instanceof DialError ? err.stage : 'connect';
        this.record(() => this.failures?.inc({ protocol, transport, stage }));
        throw err;
      }
    };
  }
}
