// The URL pod source (kubelet's pkg/kubelet/config/http.go): --manifest-url is fetched at start and
// every --http-check-frequency with the --manifest-url-header headers; the body is a Pod or a
// PodList / List (YAML or JSON). A successful fetch emits the complete result as a SET snapshot; an
// empty body emits an empty SET (and is reported); a failed fetch or a body that does not decode
// changes nothing (the pods of the last good fetch keep running) and is reported through onError.
import type { PodSet } from './merge.js';
import { podsFromManifestText } from './manifest.js';

export interface UrlSourceOptions {
  url: string;
  /** Header name -> values, added in order. */
  headers: Record<string, string[]>;
  nodeName: string;
  periodMs: number;
  onSnapshot: (snapshot: PodSet) => void;
  onError?: (err: Error) => void;
  /** Per-fetch timeout (kubelet's http client: 10 s). */
  timeoutMs?: number;
}

export class UrlSource {
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(private readonly o: UrlSourceOptions) {}

  /** Fetches once (the first snapshot, if any, is emitted before this resolves), then periodically. */
  async start(): Promise<void> {
    await this.fetchOnce();
    if (this.stopped || this.o.periodMs <= 0) return;
    this.timer = setInterval(() => void this.fetchOnce(), this.o.periodMs);
    this.timer.unref();
  }

  stop(): void {
    this.stopped = true;
    clearInterval(this.timer);
  }

  async fetchOnce(): Promise<void> {
    try {
      const headers = new Headers();
      for (const [name, values] of Object.entries(this.o.headers)) for (const v of values) headers.append(name, v);
      const res = await fetch(this.o.url, { headers, signal: AbortSignal.timeout(this.o.timeoutMs ?? 10_000) });
      const body = await res.text();
      if (res.status !== 200) throw new Error(`${this.o.url}: ${res.status} ${res.statusText}, body: ${JSON.stringify(body.slice(0, 200))}`);
      if (this.stopped) return;
      if (body.trim() === '') {
        this.o.onSnapshot({ op: 'SET', source: 'http', pods: [] });
        throw new Error(`zero-length data received from ${this.o.url}`);
      }
      const pods = podsFromManifestText(body, 'http', this.o.nodeName, this.o.url);
      this.o.onSnapshot({ op: 'SET', source: 'http', pods });
    } catch (err) {
      if (!this.stopped) this.o.onError?.(err instanceof Error ? err : new Error(String(err)));
    }
  }
}
