/**
 * Logging (-v, --vmodule, --logging-format, --log-flush-frequency, --experimental-logging-sanitization),
 * --profiling (/debug/pprof/, /debug/flags/v), --min-request-timeout and --max-connection-bytes-per-sec,
 * checked on the real bin/orch-apiserver from outside: its standard error and an HTTPS client.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { freePort } from '../helpers/ports.js';
import { createLogger, datapolicyValue } from '../../src/util/log.js';
import { eventually } from '../helpers/eventually.js';

const BIN = fileURLToPath(new URL('../../../bin/orch-apiserver', import.meta.url));
const TOKEN = 'log-test-token';

interface Running {
  url: string;
  ca: string;
  stderr(): string;
  stop(): Promise<void>;
}

const running: Running[] = [];

async function start(args: string[]): Promise<Running> {
  const dir = await mkdtemp(join(tmpdir(), 'orch-logging-'));
  await writeFile(join(dir, 'tokens.csv'), `${TOKEN},admin,admin,"system:masters"\n`);
  const port = await freePort();
  const child: ChildProcess = spawn(
    process.execPath,
    [BIN, '--bind-address=127.0.0.1', `--secure-port=${port}`, '--data-dir=:memory:', `--cert-dir=${join(dir, 'certs')}`, `--token-auth-file=${join(dir, 'tokens.csv')}`, ...args],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let err = '';
  child.stderr!.setEncoding('utf8');
  child.stderr!.on('data', (d: string) => (err += d));
  const exited = new Promise<void>((resolve) => child.once('close', () => resolve()));
  for (let i = 0; !/serving on https:/.test(err); i++) {
    if (child.exitCode !== null || i > 200) throw new Error(`orch-apiserver did not start: ${err}`);
    await sleep(50);
  }
  const r: Running = {
    url: `https://127.0.0.1:${port}`,
    ca: await readFile(join(dir, 'certs', 'apiserver.crt'), 'utf8'),
    stderr: () => err,
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
      await rm(dir, { recursive: true, force: true });
    },
  };
  running.push(r);
  return r;
}

function call(s: Running, method: string, path: string, body?: string): Promise<{ status: number; headers: Record<string, unknown>; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(`${s.url}${path}`, { method, ca: s.ca, agent: false, headers: { authorization: `Bearer ${TOKEN}`, 'user-agent': 'logging-test/1.0' } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (d: Buffer) => chunks.push(d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end(body);
  });
}


const KLOG_LINE = /^([IWEF])(\d{4}) (\d\d:\d\d:\d\d\.\d{6}) +(\d+) ([^ :]+):(\d+)\] (.*)$/;

describe('orch-apiserver logging, profiling and long-running limits', () => {
  after(async () => {
    for (const r of running) await r.stop();
  });

  it('text format: klog lines; -v 3 logs every request; /debug/flags/v changes the level at runtime', async () => {
    const s = await start(['--log-flush-frequency=100ms']);
    await eventually('the serving line', () => /Serving securely on 127\.0\.0\.1:/.test(s.stderr()));
    const line = s.stderr().split('\n').find((l) => l.includes('Serving securely'))!;
    const m = KLOG_LINE.exec(line);
    assert.ok(m, line);
    assert.equal(m[1], 'I');
    assert.match(m[4]!, /^\d+$/);
    assert.equal(m[7], `Serving securely on 127.0.0.1:${new URL(s.url).port}`);

    await call(s, 'GET', '/api/v1/namespaces');
    await sleep(300);
    assert.doesNotMatch(s.stderr(), /"HTTP"/);

    const set = await call(s, 'PUT', '/debug/flags/v', '3');
    assert.equal(set.status, 200);
    assert.equal(set.body.toString(), 'successfully set klog.logging.verbosity to 3\n');
    await call(s, 'GET', '/api/v1/namespaces/default');
    await eventually('an HTTP log line', () => /"HTTP" verb="GET" URI="\/api\/v1\/namespaces\/default"/.test(s.stderr()));
    const http = s.stderr().split('\n').find((l) => l.includes('URI="/api/v1/namespaces/default"'))!;
    assert.match(http, /^I\d{4} [\d:.]+ +\d+ [^ ]+:\d+\] "HTTP" verb="GET" URI="\/api\/v1\/namespaces\/default" latency="[\d.]+(ms|µs|s)" userAgent="logging-test\/1.0" audit-ID="[^"]*" srcIP="127\.0\.0\.1:\d+" resp=200$/);

    const bad = await call(s, 'PUT', '/debug/flags/v', 'x');
    assert.equal(bad.status, 400);
    assert.match(bad.body.toString(), /^failed set klog.logging.verbosity x: strconv.ParseUint: parsing "x": invalid syntax/);
    assert.equal((await call(s, 'GET', '/debug/flags/v')).status, 406);
    assert.match((await call(s, 'GET', '/debug/flags/')).body.toString(), /<title>\/debug\/flags\/<\/title>/);
  });

  it('--vmodule raises the level of one file; --logging-format=json writes Kubernetes JSON lines', async () => {
    const s = await start(['--vmodule=httplog=3', '--logging-format=json', '--log-flush-frequency=100ms']);
    await call(s, 'GET', '/api/v1/namespaces/kube-system');
    // JSON ignores --vmodule (a klog flag), as Kubernetes: no HTTP line at -v 0.
    await eventually('the serving line', () => s.stderr().includes('Serving securely'));
    const entries = s
      .stderr()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const serving = entries.find((e) => String(e.msg).startsWith('Serving securely'))!;
    assert.equal(typeof serving.ts, 'number');
    // Milliseconds since the epoch, as a float (component-base's epochMillisTimeEncoder).
    assert.ok(Math.abs((serving.ts as number) - Date.now()) < 600_000, String(serving.ts));
    assert.equal(serving.v, 0);
    assert.match(String(serving.caller), /^[^ :]+:\d+$/);
    assert.deepEqual(Object.keys(serving).slice(0, 3), ['ts', 'caller', 'msg']);
    assert.ok(!entries.some((e) => e.msg === 'HTTP'));

    const t = await start(['--vmodule=httplog=3', '--log-flush-frequency=100ms']);
    await call(t, 'GET', '/api/v1/namespaces/kube-public');
    await eventually('an HTTP line from the vmodule rule', () => /"HTTP" verb="GET" URI="\/api\/v1\/namespaces\/kube-public"/.test(t.stderr()));

    const j = await start(['--logging-format=json', '-v', '3', '--log-flush-frequency=100ms']);
    await call(j, 'GET', '/api/v1/namespaces/kube-public');
    await eventually('a JSON HTTP line', () => j.stderr().includes('"msg":"HTTP"'));
    const http = j
      .stderr()
      .split('\n')
      .filter((l) => l.includes('"msg":"HTTP"'))
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((e) => e.URI === '/api/v1/namespaces/kube-public')!;
    // -v 1 and above: every flag at startup, as kube-apiserver's PrintFlags.
    const flags = j
      .stderr()
      .split('\n')
      .filter((l) => l.includes('"FLAG: --'))
      .map((l) => JSON.parse(l) as { msg: string; v: number });
    assert.ok(flags.some((f) => f.msg === 'FLAG: --v="3"' && f.v === 1));
    assert.ok(flags.some((f) => f.msg === 'FLAG: --logging-format="json"'));
    assert.ok(flags.some((f) => f.msg === 'FLAG: --request-timeout="1m0s"'));
    assert.ok(!/FLAG: --/.test(s.stderr()));
    assert.equal(http.v, 3);
    assert.equal(http.verb, 'GET');
    assert.equal(http.resp, 200);
    assert.equal(http.userAgent, 'logging-test/1.0');
  });

  it('--log-flush-frequency: lines are buffered up to the frequency and flushed when the server stops', async () => {
    const s = await start(['--log-flush-frequency=1h']);
    await call(s, 'GET', '/readyz');
    await sleep(500);
    assert.doesNotMatch(s.stderr(), /Serving securely/);
    await s.stop();
    assert.match(s.stderr(), /\] Serving securely on 127\.0\.0\.1:\d+\n/);
  });

  it('logging options are validated at startup', async () => {
    for (const [args, message] of [
      [['--logging-format=yaml'], /--logging-format/],
      [['--vmodule=foo'], /--vmodule/],
      [['--log-flush-frequency=0s'], /--log-flush-frequency/],
    ] as const) {
      const child = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
      let err = '';
      child.stderr.on('data', (d: Buffer) => (err += d.toString()));
      const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
      assert.equal(code, 1, err);
      assert.match(err, message);
    }
  });

  it('--experimental-logging-sanitization: a call with a value of a sensitive type becomes component-base 1.23\'s redaction message, in text and JSON; plain strings and key names never count', () => {
    const lines: string[] = [];
    const sink = (t: string) => lines.push(t);
    const header = () => datapolicyValue({ Authorization: ['Bearer abc'] }, ['password', 'token']);
    const text = createLogger({ sanitization: true, sink, pid: 42 });
    text.info('HTTP-Probe Headers', 'headers', header());
    text.info('login', 'user', 'alice', 'password', 'hunter2', 'config', { clientKey: 'k', token: 't' });
    text.info('nested', 'pod', 'p', 'probes', [{ name: 'a' }, { headers: header() }], 'more', 'x');
    text.info('keyed', header(), 'v1', 'k2', 'v2');
    text.info('empty', 'headers', datapolicyValue({}, ['password', 'token']));
    text.error('failed', 'err', new Error('boom'), 'cookie', datapolicyValue({ Name: 'session' }, ['token']));
    text.v(0).info('formatted password=hunter2 token=abc');
    const json = createLogger({ sanitization: true, sink, pid: 42, format: 'json' });
    json.v(0).info('HTTP-Probe Headers', 'headers', header());
    json.info('keyed', header(), 'v1');
    json.error('failed', 'err', new Error('boom'), 'cookie', datapolicyValue({ Name: 'session' }, ['token']));
    const off = createLogger({ sink, pid: 42 });
    off.info('HTTP-Probe Headers', 'headers', header());
    const bodies = lines.map((l) => (l.startsWith('{') ? l.replace(/^\{"ts":[\d.]+,"caller":"[^"]+",/, '{') : l.replace(/^[IWE]\d{4} [\d:.]+ +42 [^ ]+:\d+\] /, '')));
    assert.deepEqual(bodies, [
      '"Log message has been redacted." key="headers" types=[password token]\n',
      '"login" user="alice" password="hunter2" config={"clientKey":"k","token":"t"}\n',
      '"Log message has been redacted." key="probes" types=[password token]\n',
      '"Log message has been redacted." key_index=0 types=[password token]\n',
      '"empty" headers={}\n',
      '"Log message has been redacted." err="boom" key="cookie" types=[token]\n',
      'formatted password=hunter2 token=abc\n',
      '{"msg":"Log message has been redacted.","v":0,"key":"headers","types":["password","token"]}\n',
      '{"msg":"Log message has been redacted.","v":0,"key_index":0,"types":["password","token"]}\n',
      '{"msg":"Log message has been redacted.","err":"boom","key":"cookie","types":["token"]}\n',
      '"HTTP-Probe Headers" headers={"Authorization":["Bearer abc"]}\n',
    ]);
  });

  it('--experimental-logging-sanitization on the binary: its lines carry no sensitive type, so they are written as without it (the token in a URI, the flags)', async () => {
    const s = await start(['--experimental-logging-sanitization', '-v=3', '--log-flush-frequency=100ms']);
    await call(s, 'GET', '/api/v1/namespaces/default/secrets?fieldSelector=metadata.name%3Dtoken&password=hunter2');
    await eventually('the HTTP line', () => s.stderr().includes('"HTTP" verb="LIST" URI="/api/v1/namespaces/default/secrets?'));
    const http = s.stderr().split('\n').find((l) => l.includes('"HTTP" verb="LIST"'))!;
    assert.match(
      http,
      /^I\d{4} [\d:.]+ +\d+ [^ ]+:\d+\] "HTTP" verb="LIST" URI="\/api\/v1\/namespaces\/default\/secrets\?fieldSelector=metadata\.name%3Dtoken&password=hunter2" latency="[\d.]+(ms|µs|s)" userAgent="logging-test\/1\.0" audit-ID="[^"]*" srcIP="127\.0\.0\.1:\d+" resp=200$/,
    );
    assert.match(s.stderr(), /\] FLAG: --experimental-logging-sanitization="true"\n/);
    assert.match(s.stderr(), /\] FLAG: --token-auth-file="[^"]+tokens\.csv"\n/);
    assert.doesNotMatch(s.stderr(), /redacted/);
  });

  it('--profiling: /debug/pprof/ index, a CPU profile (V8 .cpuprofile) and a heap snapshot', async () => {
    const s = await start([]);
    const redirect = await call(s, 'GET', '/debug/pprof');
    assert.equal(redirect.status, 301);
    assert.equal(redirect.headers.location, '/debug/pprof/');
    const index = await call(s, 'GET', '/debug/pprof/');
    assert.equal(index.status, 200);
    assert.match(index.body.toString(), /<a href='profile'>profile<\/a>[\s\S]*<a href='heap'>heap<\/a>|<a href='heap'>heap<\/a>[\s\S]*<a href='profile'>profile<\/a>/);
    const profile = await call(s, 'GET', '/debug/pprof/profile?seconds=1');
    assert.equal(profile.status, 200);
    assert.equal(profile.headers['content-disposition'], 'attachment; filename="profile.cpuprofile"');
    const cpu = JSON.parse(profile.body.toString()) as { nodes: unknown[]; startTime: number; endTime: number; samples: number[] };
    assert.ok(cpu.nodes.length > 0);
    assert.ok(cpu.endTime - cpu.startTime >= 900_000, `profile lasted ${cpu.endTime - cpu.startTime} µs`);
    const heap = await call(s, 'GET', '/debug/pprof/heap');
    assert.equal(heap.status, 200);
    const snapshot = JSON.parse(heap.body.toString()) as { snapshot: { node_count: number } };
    assert.ok(snapshot.snapshot.node_count > 1000);
    assert.equal((await call(s, 'GET', '/debug/pprof/goroutine')).status, 404);
    assert.equal((await call(s, 'GET', '/debug/pprof/block')).status, 404);
    assert.doesNotMatch(index.body.toString(), /href='block/);

    // --contention-profiling: the event-loop delay since start.
    const contention = await start(['--contention-profiling']);
    assert.match((await call(contention, 'GET', '/debug/pprof/')).body.toString(), /<a href='block\?debug=1'>block<\/a>/);
    await call(contention, 'GET', '/debug/pprof/profile?seconds=1');
    const block = await call(contention, 'GET', '/debug/pprof/block?debug=1');
    assert.equal(block.status, 200);
    const text = block.body.toString();
    assert.match(text, /^--- event loop delay/);
    assert.ok(Number(/^samples (\d+)$/m.exec(text)?.[1]) > 0, text);
    assert.ok(Number(/^max (\d+)$/m.exec(text)?.[1]) >= 10_000_000, text);

    const off = await start(['--profiling=false']);
    assert.equal((await call(off, 'GET', '/debug/pprof/')).status, 404);
    assert.equal((await call(off, 'PUT', '/debug/flags/v', '2')).status, 404);
    // The priority-and-fairness dumps are installed with the filter, not with --profiling (1.23's installAPI).
    for (const dump of ['dump_priority_levels', 'dump_queues', 'dump_requests']) assert.equal((await call(off, 'GET', `/debug/api_priority_and_fairness/${dump}`)).status, 200, dump);
  });

  it('--min-request-timeout: a watch without timeoutSeconds ends between it and twice it', async () => {
    const s = await start(['--min-request-timeout=1']);
    const started = Date.now();
    const w = await call(s, 'GET', '/api/v1/namespaces?watch=true');
    const elapsed = Date.now() - started;
    assert.equal(w.status, 200);
    assert.equal(w.body.toString().trim().split('\n').length, 4);
    assert.ok(elapsed >= 950, `the watch ended after ${elapsed} ms`);
  });

  it('--max-connection-bytes-per-sec paces long-running responses', async () => {
    const s = await start(['--max-connection-bytes-per-sec=40000']);
    const data = 'y'.repeat(30_000);
    for (const name of ['a', 'b', 'c', 'd']) {
      const body = JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data: { data } });
      const r = await new Promise<number>((resolve, reject) => {
        const req = httpsRequest(`${s.url}/api/v1/namespaces/default/configmaps`, {
          method: 'POST',
          ca: s.ca,
          agent: false,
          headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
        }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        });
        req.on('error', reject);
        req.end(body);
      });
      assert.equal(r, 201);
    }
    // A list is not long-running: not paced.
    const list = await call(s, 'GET', '/api/v1/namespaces/default/configmaps');
    assert.ok(list.body.length > 120_000);
    // The watch's initial events (~120 KB) at 40 KB/s, after a burst of one second's worth: about 2 s at least.
    const started = Date.now();
    const allAt = await new Promise<number>((resolve, reject) => {
      const req = httpsRequest(`${s.url}/api/v1/namespaces/default/configmaps?watch=true`, { ca: s.ca, agent: false, headers: { authorization: `Bearer ${TOKEN}` } }, (res) => {
        let lines = 0;
        res.on('error', () => {});
        res.on('data', (d: Buffer) => {
          for (const b of d) if (b === 10) lines++;
          if (lines >= 4) {
            resolve(Date.now() - started);
            req.destroy();
          }
        });
      });
      req.on('error', (e) => (e.message.includes('socket hang up') ? undefined : reject(e)));
      req.end();
    });
    assert.ok(allAt >= 1800, `the four initial events arrived after ${allAt} ms`);
  });
});
