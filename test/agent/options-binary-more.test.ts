/**
 * More node-agent options of document 3 on the real bin/orchlet (process runtime, API-server mode) against the
 * real bin/orch-apiserver, each effect checked from outside and never by timing (issue 10). Three agents share
 * one server start:
 *   - "slow": --kube-api-qps=1 --kube-api-burst=1 (the upstream spellings), --event-qps=1 --event-burst=1,
 *     --sync-frequency=1h, the dockershim-only options, JSON logs split by stream with a 1 MiB info buffer;
 *   - "fast": --orch-api-qps/--orch-api-burst and --event-qps/--event-burst far above need, --sync-frequency=1s,
 *     --volume-plugin-dir with a FlexVolume driver the test writes, --experimental-mounter-path with a mounter
 *     the test writes, JSON logs split by stream without a buffer, -v=4 and --experimental-log-sanitization;
 *   - "text": -v=4, --experimental-log-sanitization and klog's --log-file.
 * The rate limits are read from the agents' /metrics (client-go's rest_client_rate_limiter_duration_seconds):
 * a limited client's requests waited, an unlimited one's never did. The events' spam filter is seen in the
 * Events stored for a pod with many containers; the resync in a ConfigMap volume file changed behind the
 * agents' backs, which a pod sync puts back.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startBinCluster, type BinCluster } from '../helpers/binserver.js';
import { eventually } from '../helpers/eventually.js';
import { freePort } from '../helpers/ports.js';
import { spawnOrchlet, type OrchletProcess } from '../helpers/orchlet-process.js';
import { EventRecorder } from '../../src/agent/events.js';
import type { ApiClient } from '../../src/agent/client/client.js';

type Json = Record<string, any>;

interface Agent extends OrchletProcess {
  node: string;
  root: string;
  readOnlyPort: number;
  stdout(): string;
  stop(): Promise<void>;
}

/** One sample of a Prometheus text exposition. */
interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

function parseMetrics(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!;
    out.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return out;
}

const DOCKERSHIM = 'will be removed along with dockershim.';

/** A FlexVolume driver that records its calls and "mounts" by writing a file into the directory. */
const driverScript = (log: string): string => `#!/bin/sh
echo "$1 $2" >> ${log}
case "$1" in
  init) echo '{"status":"Success","capabilities":{"attach":false}}' ;;
  mount) mkdir -p "$2"; chmod 755 "$2"; echo "flex says hi" > "$2/hello"; chmod 644 "$2/hello"; echo '{"status":"Success"}' ;;
  unmount) rm -f "$2/hello"; echo '{"status":"Success"}' ;;
  *) echo '{"status":"Not supported"}' ;;
esac
`;

void describe('orchlet options on the binary (rate limits, events, resync, logs, volumes, dockershim options)', () => {
  let c: BinCluster;
  let dir = '';
  let slow: Agent;
  let fast: Agent;
  let text: Agent;
  let prober: Server;
  const probeHeaders: string[] = [];
  const TOKEN = `s3cr3t-${process.pid}`;
  const tag = String(process.pid);
  const SLOW_PODS = 5;
  const MANY = 14;

  const getJSON = async (args: string[]): Promise<Json | undefined> => {
    const r = await c.kubectl([...args, '-o', 'json']);
    return r.code === 0 ? (JSON.parse(r.stdout) as Json) : undefined;
  };
  const create = async (obj: Json): Promise<void> => {
    const r = await c.kubectl(['create', '-f', '-'], { input: JSON.stringify(obj) });
    assert.equal(r.code, 0, r.stderr);
  };
  const metricsOf = async (a: Agent): Promise<Sample[]> => {
    const res = await fetch(`http://127.0.0.1:${a.readOnlyPort}/metrics`);
    assert.equal(res.status, 200);
    return parseMetrics(await res.text());
  };

  async function startAgent(name: string, args: string[]): Promise<Agent> {
    const node = `optmore-${name}-${tag}`;
    const root = join(dir, node);
    const readOnlyPort = await freePort();
    const p = spawnOrchlet(
      [
        `--orchconfig=${c.kubeconfig}`,
        `--root-dir=${root}`,
        `--cert-dir=${join(dir, `${node}-pki`)}`,
        `--hostname-override=${node}`,
        '--node-ip=127.0.0.1',
        '--address=127.0.0.1',
        `--port=${await freePort()}`,
        `--read-only-port=${readOnlyPort}`,
        '--healthz-port=0',
        ...args,
      ],
      { stdout: 'pipe' },
    );
    let out = '';
    p.child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    return {
      ...p,
      node,
      root,
      readOnlyPort,
      stdout: () => out,
      async stop() {
        if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGTERM');
        await p.exited;
      },
    };
  }

  const registered = (a: Agent) =>
    eventually(`node ${a.node} to register`, async () => getJSON(['get', 'node', a.node]), { timeoutMs: 30_000 }).catch((err: unknown) => {
      throw new Error(`${String(err)}\norchlet stderr:\n${a.stderr()}`);
    });

  const pod = (name: string, node: string, spec: Json): Json => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default' },
    spec: { nodeName: node, automountServiceAccountToken: false, ...spec },
  });
  const cmPod = (name: string, node: string): Json =>
    pod(name, node, {
      volumes: [{ name: 'cfg', configMap: { name: 'greeting' } }],
      containers: [{ name: 'c', image: 'busybox', command: ['sleep', `3621.${tag}`], volumeMounts: [{ name: 'cfg', mountPath: '/cfg' }] }],
    });
  const running = (names: string[]) =>
    eventually(
      `pods ${names.join(', ')} running`,
      async () => {
        const list = await getJSON(['get', 'pods']);
        const phases = new Map<string, string>(((list?.items ?? []) as Json[]).map((p) => [p.metadata.name as string, p.status?.phase as string]));
        return names.every((n) => phases.get(n) === 'Running') ? list : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 300 },
    );

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'orch-agent-optmore-'));
    await chmod(dir, 0o755);
    // the FlexVolume driver example.com/hello and the mounter
    const driverDir = join(dir, 'plugins', 'example.com~hello');
    await mkdir(driverDir, { recursive: true });
    await writeFile(join(driverDir, 'hello'), driverScript(join(dir, 'flex.log')), { mode: 0o755 });
    await writeFile(join(dir, 'mounter'), `#!/bin/sh\necho "$@" >> ${join(dir, 'mounter.log')}\nexec mount "$@"\n`, { mode: 0o755 });
    // what the HTTP probes of the agents ask
    prober = createServer((req, res) => {
      probeHeaders.push(String(req.headers.authorization));
      res.end('ok');
    });
    await new Promise<void>((resolve) => prober.listen(0, '127.0.0.1', resolve));
    c = await startBinCluster();
    [slow, fast, text] = await Promise.all([
      startAgent('slow', [
        '--kube-api-qps=1',
        '--kube-api-burst=1',
        '--event-qps=1',
        '--event-burst=1',
        '--sync-frequency=1h',
        `--cni-cache-dir=${join(dir, 'cni-cache')}`,
        `--cni-conf-dir=${join(dir, 'cni-conf')}`,
        `--cni-bin-dir=${join(dir, 'cni-bin')}`,
        `--docker-endpoint=unix://${join(dir, 'docker.sock')}`,
        '--image-pull-progress-deadline=2m',
        '--network-plugin-mtu=1400',
        '--logging-format=json',
        '--log-json-split-stream',
        '--log-json-info-buffer-size=1Mi',
        '--log-flush-frequency=1h',
      ]),
      startAgent('fast', [
        '--orch-api-qps=1000',
        '--orch-api-burst=1000',
        '--event-qps=1000',
        '--event-burst=1000',
        '--sync-frequency=1s',
        `--volume-plugin-dir=${join(dir, 'plugins')}`,
        `--experimental-mounter-path=${join(dir, 'mounter')}`,
        '--logging-format=json',
        '--log-json-split-stream',
        '-v=4',
        '--experimental-log-sanitization',
      ]),
      startAgent('text', ['-v=4', '--experimental-log-sanitization', '--logtostderr=false', `--log-file=${join(dir, 'text.log')}`]),
    ]);
    await Promise.all([registered(slow), registered(fast), registered(text)]);
    await create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'greeting', namespace: 'default' }, data: { greeting: 'hello' } });
    const slowPods = Array.from({ length: SLOW_PODS }, (_, i) => cmPod(`slow-${i}`, slow.node));
    const many = pod('many', fast.node, {
      restartPolicy: 'Never',
      containers: Array.from({ length: MANY }, (_, i) => ({ name: `c${i}`, image: 'busybox', command: ['sleep', `3622.${tag}`] })),
    });
    const probed = (name: string, node: string): Json =>
      pod(name, node, {
        containers: [
          {
            name: 'c',
            image: 'busybox',
            command: ['sleep', `3623.${tag}`],
            readinessProbe: {
              httpGet: { host: '127.0.0.1', port: (prober.address() as AddressInfo).port, path: '/ready', httpHeaders: [{ name: 'Authorization', value: `Bearer ${TOKEN}` }] },
              periodSeconds: 1,
            },
          },
        ],
      });
    await create({ apiVersion: 'v1', kind: 'List', items: [...slowPods, cmPod('fast-cm', fast.node), many, probed('probed-text', text.node), probed('probed-fast', fast.node)] });
    await running([...slowPods.map((p) => p.metadata.name as string), 'fast-cm', 'many', 'probed-text', 'probed-fast']);
  });

  after(async () => {
    await Promise.all([slow, fast, text].filter((a) => a !== undefined).map((a) => a.stop()));
    prober?.close();
    await c?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  void it('--kube-api-qps/--kube-api-burst and --event-qps/--event-burst at 1: requests wait for the limiter; --orch-api-* and --event-* at 1000: none waits', async () => {
    const waits = (samples: Sample[], match: (url: string, verb: string) => boolean) => {
      const mine = samples.filter((s) => s.name.startsWith('rest_client_rate_limiter_duration_seconds') && match(s.labels.url ?? '', s.labels.verb ?? ''));
      const sum = (suffix: string, le?: string) =>
        mine.filter((s) => s.name === `rest_client_rate_limiter_duration_seconds${suffix}` && (le === undefined || s.labels.le === le)).reduce((n, s) => n + s.value, 0);
      return { count: sum('_count'), within1ms: sum('_bucket', '0.001'), within512ms: sum('_bucket', '0.512') };
    };
    const isStatus = (url: string, verb: string) => verb === 'PATCH' && url.endsWith('/api/v1/namespaces/%7Bnamespace%7D/pods/%7Bname%7D/status');
    const isEvent = (url: string, verb: string) => verb === 'POST' && url.endsWith('/api/v1/namespaces/%7Bnamespace%7D/events');
    const any = () => true;
    // the slow agent: its status posts queued behind one token a second, some for longer than the last bucket
    // (0.512 s) — the 5 pods' first posts came together, so at least the third waited a whole second
    const s = await eventually('the slow agent\'s status posts and events to be counted', async () => {
      const m = await metricsOf(slow);
      const st = waits(m, isStatus);
      const ev = waits(m, isEvent);
      return st.count >= SLOW_PODS && ev.count >= 3 ? { st, ev, m } : undefined;
    }, { timeoutMs: 30_000, intervalMs: 500 });
    assert.ok(s.st.count - s.st.within512ms >= 1, `status posts that waited over 0.512 s: ${JSON.stringify(s.st)}`);
    // the event client has its own limiter at --event-qps=1: node and pod events came by the dozen at start
    assert.ok(s.ev.count - s.ev.within512ms >= 1, `event creations that waited over 0.512 s: ${JSON.stringify(s.ev)}`);
    // client-go's metric families as kubelet 1.23 shows them
    const text = await (await fetch(`http://127.0.0.1:${slow.readOnlyPort}/metrics`)).text();
    assert.match(text, /^# HELP rest_client_rate_limiter_duration_seconds \[ALPHA\] Client side rate limiter latency in seconds\. Broken down by verb and URL\.$/m);
    assert.match(text, /^# TYPE rest_client_request_duration_seconds histogram$/m);
    assert.match(text, /^rest_client_request_duration_seconds_bucket\{url="https:\/\/127\.0\.0\.1:\d+\/api\/v1\/namespaces\/%7Bnamespace%7D\/pods\/%7Bname%7D\/status",verb="PATCH",le="0\.512"\} \d+$/m);
    assert.ok(
      s.m.some((x) => x.name === 'rest_client_requests_total' && x.labels.code === '201' && x.labels.method === 'POST' && /^127\.0\.0\.1:\d+$/.test(x.labels.host ?? '') && x.value >= 3),
      'rest_client_requests_total counts the creations by code, method and host',
    );
    // the fast agent: every limited request of the main and event clients went through at once (the first
    // bucket, 1 ms, holds them all), status posts and event creations included
    const f = await metricsOf(fast);
    const all = waits(f, any);
    assert.ok(waits(f, isStatus).count >= 2 && waits(f, isEvent).count >= 3, JSON.stringify(all));
    assert.equal(all.within1ms, all.count, `requests of the fast agent that waited: ${JSON.stringify(all)}`);
  });

  void it('events: the spam filter lets 25 events about one object through (kubelet 1.23 correlator), however many happen', async () => {
    // 14 containers started: 42 events about the pod (Pulled, Created, Started each); the budget of a source
    // and object is 25 (refilled at one per 5 minutes): what was sent adds up to 25 (each creation counts 1,
    // each repeat raises a count by 1), the rest was dropped
    const p = (await getJSON(['get', 'pod', 'many']))!;
    assert.equal((p.status.containerStatuses as Json[]).filter((s) => s.state?.running).length, MANY, 'every container started');
    const eventsOf = async () =>
      (((await getJSON(['get', 'events', '--field-selector', `involvedObject.uid=${p.metadata.uid as string}`]))?.items ?? []) as Json[]).filter(
        (e) => e.source?.component === 'kubelet',
      );
    const sent = (events: Json[]) => events.reduce((n, e) => n + Number(e.count ?? 1), 0);
    const events = await eventually('25 events about pod many', async () => {
      const ev = await eventsOf();
      return sent(ev) >= 25 ? ev : undefined;
    }, { timeoutMs: 30_000, intervalMs: 500 });
    assert.equal(sent(events), 25, events.map((e) => `${e.count as number} ${e.reason as string} ${e.message as string}`).join('\n'));
    // the first containers' events made it, the last ones' did not
    const started = new Set(events.filter((e) => e.reason === 'Started').map((e) => e.involvedObject.fieldPath as string));
    assert.ok(started.has('spec.containers{c0}'), [...started].join(' '));
    assert.ok(!started.has(`spec.containers{c${MANY - 1}}`), [...started].join(' '));
  });

  void it('--sync-frequency: a ConfigMap volume file changed behind the agent\'s back is put back by the next resync (1s), not before it (1h)', async () => {
    const fileOf = async (a: Agent, name: string) => {
      const uid = (await getJSON(['get', 'pod', name]))!.metadata.uid as string;
      return join(a.root, 'pods', uid, 'volumes', 'kubernetes.io~configmap', 'cfg', 'greeting');
    };
    const fastFile = await fileOf(fast, 'fast-cm');
    const slowFile = await fileOf(slow, 'slow-0');
    assert.equal(await readFile(fastFile, 'utf8'), 'hello');
    assert.equal(await readFile(slowFile, 'utf8'), 'hello');
    // (writing through the ..data link changes the projected file itself; its mode stays)
    await writeFile(slowFile, 'tampered');
    await writeFile(fastFile, 'tampered');
    await eventually('the fast agent\'s resync to restore its file', async () => (await readFile(fastFile, 'utf8')) === 'hello', { timeoutMs: 20_000, intervalMs: 200 });
    // the fast agent resynced since; the slow one's next resync is an hour away
    assert.equal(await readFile(slowFile, 'utf8'), 'tampered');
  });

  void it('--volume-plugin-dir: a flexVolume mounted by the test\'s driver; --experimental-mounter-path: the test\'s mounter mounts a memory emptyDir', async (t) => {
    await create(
      pod('flex', fast.node, {
        restartPolicy: 'Never',
        volumes: [
          { name: 'data', flexVolume: { driver: 'example.com/hello', options: { size: '1Gi' } } },
          { name: 'mem', emptyDir: { medium: 'Memory' } },
        ],
        containers: [{ name: 'c', image: 'busybox', command: ['sh', '-c', 'cat $ORCH_ROOTFS/data/hello'], volumeMounts: [{ name: 'data', mountPath: '/data' }, { name: 'mem', mountPath: '/mem' }] }],
      }),
    );
    const p = await eventually('flex to finish', async () => {
      const x = await getJSON(['get', 'pod', 'flex']);
      return x?.status?.phase === 'Succeeded' || x?.status?.phase === 'Failed' ? x : undefined;
    }, { timeoutMs: 30_000, intervalMs: 300 });
    assert.equal(p.status.phase, 'Succeeded', `${JSON.stringify(p.status)}\n${fast.stderr()}`);
    assert.equal((await c.kubectl(['logs', 'flex'])).stdout, 'flex says hi\n');
    const flexDir = join(fast.root, 'pods', p.metadata.uid as string, 'volumes', 'example.com~hello', 'data');
    assert.deepEqual((await readFile(join(dir, 'flex.log'), 'utf8')).trim().split('\n').slice(0, 2), ['init ', `mount ${flexDir}`]);
    const memDir = join(fast.root, 'pods', p.metadata.uid as string, 'volumes', 'kubernetes.io~empty-dir', 'mem');
    if (process.getuid?.() !== 0) return t.skip('mounting a tmpfs needs root');
    const calls = await readFile(join(dir, 'mounter.log'), 'utf8');
    assert.ok(calls.split('\n').some((l) => l.startsWith('-t tmpfs') && l.endsWith(` ${memDir}`)), calls);
    // the pod gone, its volumes are torn down: the driver unmounts, the tmpfs goes
    assert.equal((await c.kubectl(['delete', 'pod', 'flex', '--grace-period=0', '--force'])).code, 0);
    await eventually('the driver\'s unmount', async () => (await readFile(join(dir, 'flex.log'), 'utf8')).includes(`unmount ${flexDir}`), { timeoutMs: 20_000, intervalMs: 200 });
    await eventually('the tmpfs unmounted', async () => !(await readFile('/proc/self/mounts', 'utf8')).includes(memDir), { timeoutMs: 20_000, intervalMs: 200 });
  });

  void it('the dockershim-only options: pflag\'s deprecation warning each, then ignored; --network-plugin naming a plugin is refused', async () => {
    const err = slow.stderr();
    for (const f of ['cni-cache-dir', 'cni-conf-dir', 'cni-bin-dir', 'docker-endpoint', 'image-pull-progress-deadline', 'network-plugin-mtu']) {
      assert.match(err, new RegExp(`^Flag --${f} has been deprecated, ${DOCKERSHIM.replace(/\./g, '\\.')}$`, 'm'));
    }
    // ignored: the agent ran its pods, and made none of the directories nor the socket
    for (const p of ['cni-cache', 'cni-conf', 'cni-bin', 'docker.sock']) assert.equal(existsSync(join(dir, p)), false, p);
    assert.doesNotMatch(fast.stderr(), /dockershim/);
    const refused = spawnOrchlet(['--network-plugin=cni', `--root-dir=${join(dir, 'refused')}`]);
    assert.equal(await refused.exited, 1);
    assert.match(refused.stderr(), /^Flag --network-plugin has been deprecated, will be removed along with dockershim\.$/m);
    assert.match(refused.stderr(), /--network-plugin=cni: the built-in runtime runs pods on the host's network and has no network plugins/);
  });

  void it('--experimental-log-sanitization: the HTTP probe\'s -v=4 headers line (a Go http.Header, password and token data) becomes component-base 1.23\'s redaction message, in JSON on standard output and in text in the log file; the host line is kept', async () => {
    assert.ok(probeHeaders.includes(`Bearer ${TOKEN}`), 'the probes ran with their header');
    // JSON: the whole message replaced, the key and the types given instead
    const fastLines = await eventually('the fast agent\'s redacted HTTP-Probe Headers line', () => {
      const lines = fast
        .stdout()
        .split('\n')
        .filter((l) => l.startsWith('{') && l.endsWith('}'))
        .map((l) => JSON.parse(l) as Json);
      return lines.some((e) => e.msg === 'Log message has been redacted.') && lines.some((e) => e.msg === 'HTTP-Probe Host') ? lines : undefined;
    });
    const redacted = fastLines.find((e) => e.msg === 'Log message has been redacted.')!;
    assert.deepEqual(Object.keys(redacted), ['ts', 'caller', 'msg', 'v', 'key', 'types']);
    assert.match(redacted.caller as string, /^probes\.[jt]s:\d+$/);
    assert.deepEqual({ ...redacted, ts: 0, caller: '' }, { ts: 0, caller: '', msg: 'Log message has been redacted.', v: 4, key: 'headers', types: ['password', 'token'] });
    const host = fastLines.find((e) => e.msg === 'HTTP-Probe Host' && e.path === '/ready')!;
    assert.deepEqual([host.scheme, host.host, host.v], ['http', '127.0.0.1', 4]);
    assert.ok(!fastLines.some((e) => e.msg === 'HTTP-Probe Headers'));
    assert.ok(!fast.stdout().includes(TOKEN), 'the token is nowhere on the fast agent\'s standard output');
    // text, in the --log-file (written every --log-flush-frequency, 5 s)
    const lines = await eventually('the text agent\'s HTTP-Probe Host and redacted lines in its --log-file', async () => {
      const l = (await readFile(join(dir, 'text.log'), 'utf8').catch(() => '')).split('\n').filter((x) => x.includes('"HTTP-Probe') || x.includes('redacted'));
      return l.some((x) => x.includes('redacted')) && l.some((x) => x.includes('"HTTP-Probe Host"')) ? l : undefined;
    }, { timeoutMs: 20_000, intervalMs: 500 });
    assert.match(lines.find((l) => l.includes('redacted'))!, /^I\d{4} [\d:.]+ +\d+ probes\.[jt]s:\d+\] "Log message has been redacted\." key="headers" types=\[password token\]$/);
    assert.match(lines.find((l) => l.includes('"HTTP-Probe Host"'))!, /"HTTP-Probe Host" scheme="http" host="127\.0\.0\.1" port=\d+ path="\/ready"$/);
    assert.ok(!lines.some((l) => l.includes('"HTTP-Probe Headers"')));
    assert.ok(!(await readFile(join(dir, 'text.log'), 'utf8')).includes(TOKEN), 'the token is nowhere in the log file');
  });

  void it('--log-json-info-buffer-size: JSON info lines on standard output held in the buffer until exit (client-go\'s throttling message of --kube-api-qps=1 among them); without it, written at once', async () => {
    // the fast agent (no buffer) has written its start line; the slow one (1 MiB buffer, flushed every hour)
    // has written none, though it logged the same line before registering
    const started = /"msg":"running registering with the server of [^"]* as node /;
    await eventually('the fast agent\'s info lines on standard output', () => started.test(fast.stdout()));
    for (const line of fast.stdout().trim().split('\n')) assert.doesNotThrow(() => JSON.parse(line), line);
    assert.equal(slow.stdout(), '');
    await slow.stop();
    assert.match(slow.stdout(), started, 'flushed at exit');
    // client-go's throttling message for a request that waited over a second (at most one every 10 s)
    assert.match(slow.stdout(), /"msg":"Waited for \d+(\.\d+)?s due to client-side throttling, not priority and fairness, request: (GET|POST|PATCH|PUT|DELETE):https:\/\/127\.0\.0\.1:\d+\/api/);
    assert.doesNotMatch(fast.stdout(), /client-side throttling/);
    for (const line of slow.stdout().trim().split('\n')) assert.equal(typeof (JSON.parse(line) as Json).msg, 'string', line);
  });
});

void describe('the event correlator (in-process; the spam filter is checked on the binary above)', () => {
  void it('deduplicates repeats and aggregates the 10th similar event (same object, type and reason) on, as client-go 1.23', async () => {
    const calls: string[] = [];
    const client = {
      create: (_path: string, body: Json) => {
        calls.push(`create ${body.metadata.name.split('.')[0] as string} ${body.count as number} ${body.message as string}`);
        return Promise.resolve(body);
      },
      patch: (path: string, body: Json) => {
        calls.push(`patch ${path.split('/').pop()!.split('.')[0]!} ${body.count as number} ${body.message as string}`);
        return Promise.resolve(body);
      },
    } as unknown as ApiClient;
    const r = new EventRecorder(client, 'node-1');
    const ref = { kind: 'Pod', name: 'p', namespace: 'default', uid: 'u1', apiVersion: 'v1' };
    r.event(ref, 'Warning', 'Failed', 'same');
    r.event(ref, 'Warning', 'Failed', 'same');
    for (let i = 1; i <= 10; i++) r.event(ref, 'Warning', 'Failed', `m${i}`);
    r.event({ ...ref, name: 'q', uid: 'u2' }, 'Warning', 'Failed', 'm1');
    await r.flush();
    assert.deepEqual(calls, [
      'create p 1 same',
      'patch p 2 same',
      ...Array.from({ length: 8 }, (_, i) => `create p 1 m${i + 1}`),
      'create p 1 (combined from similar events): m9',
      'patch p 2 (combined from similar events): m10',
      'create q 1 m1',
    ]);
  });
});
