/**
 * --profiling: the /debug/pprof/ endpoints of kube-apiserver (and of orchlet's debugging handlers), serving
 * the Node.js process's profiles, and /debug/flags/v, which changes the log verbosity at runtime as
 * Kubernetes' does. Shared by the server (src/server/profiling.ts) and the agent (src/agent/server).
 *
 * The profiles are V8's formats, not Go's pprof protocol buffers:
 *   - /debug/pprof/profile?seconds=N: a CPU profile of N seconds (default 30) in V8's .cpuprofile JSON (the
 *     Profiler.Profile of the DevTools protocol); open it in Chrome DevTools, VS Code or speedscope;
 *   - /debug/pprof/heap: a V8 heap snapshot (.heapsnapshot JSON), for Chrome DevTools' Memory panel;
 *   - /debug/pprof/cmdline: the command line, arguments separated by NUL bytes (as Go's);
 *   - /debug/pprof/block, with --contention-profiling: Node.js has no locks to contend for; what stalls it is
 *     a busy event loop, so this is the event-loop delay since start (perf_hooks' monitorEventLoopDelay, 10 ms
 *     resolution) as a text histogram: how long ready callbacks waited for the loop. Without the option
 *     it is not served (Go serves an empty block profile then).
 * `go tool pprof` cannot read them.
 */
import type { Session } from 'node:inspector';
import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Http2ServerRequest, Http2ServerResponse } from 'node:http2';
import type { Logger } from './log.js';

type ApiRequest = IncomingMessage | Http2ServerRequest;
type ApiResponse = ServerResponse | Http2ServerResponse;
type Handler = (req: ApiRequest, res: ApiResponse) => void | Promise<void>;

export interface Mux {
  handle(path: string, handler: Handler): void;
  handlePrefix(prefix: string, handler: Handler): void;
}

const BLOCK_PROFILE = {
  name: 'block',
  href: 'block?debug=1',
  description: 'Event-loop delay since start (--contention-profiling): how long ready callbacks waited for the loop, a text histogram in nanoseconds.',
};

const PROFILES: { name: string; href: string; description: string }[] = [
  { name: 'cmdline', href: 'cmdline', description: 'The command line invocation of the current program.' },
  { name: 'heap', href: 'heap', description: 'A V8 heap snapshot of the live objects (.heapsnapshot JSON, for Chrome DevTools).' },
  {
    name: 'profile',
    href: 'profile',
    description: 'CPU profile, V8 .cpuprofile JSON (not pprof). Specify the duration in the seconds GET parameter (default 30).',
  },
];

function writePlain(res: ApiResponse, code: number, text: string, extra: Record<string, string> = {}): void {
  res.statusCode = code;
  res.setHeader('Content-Type', 'text/plain; charset=utf-8');
  res.setHeader('X-Content-Type-Options', 'nosniff');
  for (const [k, v] of Object.entries(extra)) res.setHeader(k, v);
  res.end(text);
}

function query(req: ApiRequest): URLSearchParams {
  const url = req.url ?? '';
  const q = url.indexOf('?');
  return new URLSearchParams(q < 0 ? '' : url.slice(q + 1));
}

function indexPage(profiles: typeof PROFILES): string {
  const rows = profiles.map((p) => `<tr><td>${p.name === 'profile' ? 0 : 1}</td><td><a href='${p.href}'>${p.name}</a></td></tr>`).join('\n');
  const descriptions = profiles.map((p) => `<li><div class=profile-name>${p.name}: </div> ${p.description}</li>`).join('\n');
  return `<html>
<head>
<title>/debug/pprof/</title>
</head>
<body>
/debug/pprof/<br>
<br>
Types of profiles available:
<table>
<thead><td>Count</td><td>Profile</td></thead>
${rows}
</table>
<br>
<p>
Profile Descriptions:
<ul>
${descriptions}
</ul>
</p>
</body>
</html>
`;
}

/** Waits `ms`, ending early when `signal` aborts. */
function wait(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}

function post<T>(session: Session, method: string, params?: object): Promise<T> {
  return new Promise((resolve, reject) => {
    session.post(method, params ?? {}, (err, result) => (err ? reject(err) : resolve(result as T)));
  });
}

/** CPU profile of `seconds`, or until the client goes away or the server stops. */
function cpuProfileHandler(serverSignal: AbortSignal): Handler {
  let running = false;
  return async (req, res) => {
    const raw = query(req).get('seconds') ?? '';
    let seconds = /^\d+$/.test(raw) ? Number(raw) : 0;
    if (seconds <= 0) seconds = 30;
    if (running) {
      return writePlain(res, 500, 'Could not enable CPU profiling: cpu profiling already in use\n', { 'X-Go-Pprof': '1' });
    }
    running = true;
    const stop = new AbortController();
    const onClose = () => stop.abort();
    req.once('close', onClose);
    serverSignal.addEventListener('abort', onClose, { once: true });
    // node:inspector and node:v8 load with the first profile, not with every server
    const { Session: InspectorSession } = await import('node:inspector');
    const session = new InspectorSession();
    try {
      session.connect();
      await post(session, 'Profiler.enable');
      await post(session, 'Profiler.start');
      await wait(seconds * 1000, stop.signal);
      const { profile } = await post<{ profile: object }>(session, 'Profiler.stop');
      const body = JSON.stringify(profile);
      res.statusCode = 200;
      res.setHeader('Content-Type', 'application/json');
      res.setHeader('X-Content-Type-Options', 'nosniff');
      res.setHeader('Content-Disposition', 'attachment; filename="profile.cpuprofile"');
      res.setHeader('Content-Length', Buffer.byteLength(body));
      res.end(body);
    } finally {
      session.disconnect();
      running = false;
      req.off('close', onClose);
      serverSignal.removeEventListener('abort', onClose);
    }
  };
}

const heapHandler: Handler = async (_req, res) => {
  const { getHeapSnapshot } = await import('node:v8');
  return new Promise<void>((resolve) => {
    const snapshot = getHeapSnapshot();
    res.statusCode = 200;
    res.setHeader('Content-Type', 'application/json');
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.setHeader('Content-Disposition', 'attachment; filename="heap.heapsnapshot"');
    snapshot.on('error', () => {
      res.destroy();
      resolve();
    });
    res.once('close', resolve);
    snapshot.pipe(res);
  });
};

/** The event-loop delay histogram as text, in nanoseconds (Node.js's counterpart of Go's block profile). */
function blockProfile(h: IntervalHistogram): string {
  const lines = [
    '--- event loop delay (monitorEventLoopDelay, resolution 10 ms), nanoseconds',
    `samples ${h.count}`,
    `min ${h.count > 0 ? h.min : 0}`,
    `max ${h.max}`,
    `mean ${Number.isNaN(h.mean) ? 0 : Math.round(h.mean)}`,
    `stddev ${Number.isNaN(h.stddev) ? 0 : Math.round(h.stddev)}`,
  ];
  for (const p of [50, 90, 99, 99.9]) lines.push(`p${p} ${h.count > 0 ? h.percentile(p) : 0}`);
  lines.push('# cumulative: samples at or below each value (ns)');
  for (const [percentile, value] of h.percentiles) if (percentile > 0) lines.push(`<=${value} ${Math.round((percentile / 100) * h.count)}`);
  return `${lines.join('\n')}\n`;
}

/** Installs /debug/pprof and its profiles; with `contention`, /debug/pprof/block (see above). */
export function installProfiling(mux: Mux, deps: { signal: AbortSignal; contention?: boolean }): void {
  let delay: IntervalHistogram | undefined;
  if (deps.contention && !deps.signal.aborted) {
    const h = monitorEventLoopDelay({ resolution: 10 });
    h.enable();
    deps.signal.addEventListener('abort', () => h.disable(), { once: true });
    delay = h;
  }
  const profiles = delay ? [...PROFILES, BLOCK_PROFILE].sort((a, b) => (a.name < b.name ? -1 : 1)) : PROFILES;
  mux.handle('/debug/pprof', (_req, res) => {
    res.statusCode = 301;
    res.setHeader('Location', '/debug/pprof/');
    res.setHeader('Content-Type', 'text/html; charset=utf-8');
    res.end('<a href="/debug/pprof/">Moved Permanently</a>.\n\n');
  });
  const profile = cpuProfileHandler(deps.signal);
  const index: Handler = (req, res) => {
    const path = (req.url ?? '/').split('?')[0]!;
    const name = path.slice('/debug/pprof/'.length);
    if (name === '') {
      const body = indexPage(profiles);
      res.statusCode = 200;
      res.setHeader('Content-Type', 'text/html; charset=utf-8');
      res.setHeader('X-Content-Type-Options', 'nosniff');
      res.end(body);
      return;
    }
    if (name === 'profile') return profile(req, res);
    if (name === 'heap') return heapHandler(req, res);
    if (name === 'cmdline') return writePlain(res, 200, process.argv.join('\0'));
    if (name === 'block' && delay) return writePlain(res, 200, blockProfile(delay));
    writePlain(res, 404, 'Unknown profile\n', { 'X-Go-Pprof': '1' });
  };
  mux.handlePrefix('/debug/pprof/', index);
}

const FLAGS_INDEX = `<html>
<head>
<title>/debug/flags/</title>
</head>
<body>
/debug/flags/<br>
<br>
flags:<br>
<table>

<tr>v<br>

</table>
<br>
full flags configurable<br>
</body>
</html>
`;

function readText(req: ApiRequest): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.once('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.once('error', reject);
  });
}

/** /debug/flags (an index) and /debug/flags/v: PUT a level to change the log verbosity, as Kubernetes' GlogSetter. */
export function installDebugFlags(mux: Mux, deps: { logger: Logger }): void {
  const index: Handler = (_req, res) => {
    res.statusCode = 200;
    res.setHeader('Content-Type', 'text/html; charset=utf-8');
    res.end(FLAGS_INDEX);
  };
  mux.handle('/debug/flags', index);
  mux.handlePrefix('/debug/flags/', index);
  mux.handle('/debug/flags/v', async (req, res) => {
    if (req.method !== 'PUT') return writePlain(res, 406, 'unsupported http method\n', { 'Content-Type': 'text/plain' });
    const value = await readText(req);
    if (!/^\d+$/.test(value) || Number(value) > 0xffffffff) {
      const reason = /^\d+$/.test(value) ? 'value out of range' : 'invalid syntax';
      return writePlain(res, 400, `failed set klog.logging.verbosity ${value}: strconv.ParseUint: parsing ${JSON.stringify(value)}: ${reason}\n`, {
        'Content-Type': 'text/plain',
      });
    }
    deps.logger.verbosity = Number(value);
    writePlain(res, 200, `successfully set klog.logging.verbosity to ${value}\n`, { 'Content-Type': 'text/plain' });
  });
}
