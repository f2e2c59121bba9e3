// End to end: kubectl exec, attach and port-forward through the server's pods/exec, pods/attach and
// pods/portforward to an orchlet with the built-in process runtime, which serves the streaming protocols
// itself: the WebSocket channel protocols (v5.channel.k8s.io, kubectl 1.30 and later) and SPDY/3.1
// (kubectl before 1.30 for exec and attach; port-forward from every kubectl, which after 1.30 tries
// WebSocket tunnelling first and falls back to SPDY).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { request } from 'node:https';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Writable, type Duplex } from 'node:stream';
import { controlFrame, FLAG_FIN, FrameReader, FrameType, HeaderCodec, synStreamPayload, type Frame } from '../../src/agent/server/spdy/framing.js';
import { kubectlPath, startCluster, type TestCluster } from '../helpers/cluster.js';
import { startAgent, type TestAgent } from '../helpers/agent.js';
import { waitFor } from '../agent/runtime-contract.js';
import { freePort } from '../helpers/ports.js';
import { httpGet, withPortForward } from '../helpers/portforward.js';
import { KubeConfig, PortForward } from '@kubernetes/client-node';
import { createServer, type Socket } from 'node:net';
import { WebSocket } from 'ws';

type Json = Record<string, any>;

/** An SPDY/3.1 upgrade request through the server, as a client without kubectl makes it. */
function spdyUpgrade(c: TestCluster, path: string, protocols: string[]): Promise<{ status: number; headers: Json; body: string; socket?: Duplex; head?: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = request(`${c.url}${path}`, {
      method: 'POST',
      ca: c.cp.server.caCert,
      headers: { authorization: `Bearer ${c.token}`, connection: 'Upgrade', upgrade: 'SPDY/3.1', 'x-stream-protocol-version': protocols },
    });
    req.on('upgrade', (res, socket, head) => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: '', socket, head }));
    req.on('response', (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** Opens client streams with these headers (each ended at once) and collects what comes back per stream until the server ends the connection. */
async function spdyRun(socket: Duplex, head: Buffer, streams: Record<string, string>[]): Promise<{ data: Map<number, string>; frames: Frame[] }> {
  const codec = new HeaderCodec();
  const reader = new FrameReader();
  const frames: Frame[] = [...reader.push(head)];
  socket.on('data', (chunk: Buffer) => frames.push(...reader.push(chunk)));
  const ended = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  for (const [i, h] of streams.entries()) {
    const block = await codec.compress(Object.fromEntries(Object.entries(h).map(([k, v]) => [k, [v]])));
    socket.write(controlFrame(FrameType.SynStream, FLAG_FIN, synStreamPayload(1 + 2 * i, block)));
  }
  socket.resume();
  await ended;
  const data = new Map<number, string>();
  for (const f of frames) if (!f.control) data.set(f.streamId, (data.get(f.streamId) ?? '') + f.payload.toString());
  return { data, frames };
}

/** kubectl versions: 1.27 and 1.29 speak SPDY/3.1 only, 1.33 WebSocket (v5.channel.k8s.io) for exec and attach. */
const VERSIONS = ['1.27', '1.29', '1.33'].filter((v) => kubectlPath(v) !== null);

void describe('kubectl exec and attach on the process runtime', () => {
  let c: TestCluster;
  let a: TestAgent;
  let httpPort = 0;
  const pod = (name: string, command: string[], spec: Json = {}): Json => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default' },
    spec: { nodeName: a.nodeName, terminationGracePeriodSeconds: 1, automountServiceAccountToken: false, ...spec, containers: [{ name: 'main', image: 'busybox', command }] },
  });
  const create = async (obj: Json): Promise<void> => {
    const r = await c.kubectl(['create', '-f', '-'], { input: JSON.stringify(obj) });
    assert.equal(r.code, 0, r.stderr);
  };
  const waitRunning = (name: string) =>
    waitFor(`pod ${name} Running`, async () => {
      const r = await c.kubectl(['get', 'pod', name, '-o', 'json']);
      const p = r.code === 0 ? (JSON.parse(r.stdout) as Json) : undefined;
      return p?.status?.containerStatuses?.[0]?.state?.running ? p : undefined;
    }, 20_000);

  before(async () => {
    c = await startCluster();
    a = await startAgent(c);
    await create(pod('shell', ['sh', '-c', 'echo ready; exec sleep 600']));
    // An HTTP server in a pod (on the host's network, as every pod of the process runtime).
    httpPort = await freePort();
    const server = `require('http').createServer((q, s) => s.end(q.method + ' ' + q.url + (q.url.startsWith('/big/') ? ' ' + 'x'.repeat(Number(q.url.slice(5))) : ''))).listen(${httpPort}, '127.0.0.1')`;
    await create(pod('web', [process.execPath, '-e', server]));
    await waitRunning('shell');
    await waitRunning('web');
  });
  after(async () => {
    await a?.stop();
    await c?.stop();
  });

  for (const version of VERSIONS) {
    void it(`kubectl ${version} exec: output, error output and the exit code`, async () => {
      const r = await c.kubectl(['exec', 'shell', '--', 'sh', '-c', 'echo out; echo err >&2; exit 3'], { version });
      assert.equal(r.code, 3, r.stderr);
      assert.equal(r.stdout, 'out\n');
      assert.match(r.stderr, /^err$/m);
      const ok = await c.kubectl(['exec', 'shell', '--', 'sh', '-c', 'echo fine'], { version });
      assert.equal(ok.code, 0, ok.stderr);
      assert.equal(ok.stdout, 'fine\n');
    });

    void it(`kubectl ${version} exec -i: stdin reaches the command, and its end too`, async () => {
      const r = await c.kubectl(['exec', '-i', 'shell', '--', 'sh', '-c', 'while read l; do echo "got $l"; done; echo done'], { version, input: 'one\ntwo\n' });
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stdout, 'got one\ngot two\ndone\n');
    });
  }

  void it('refuses what Kubernetes refuses: no upgrade, an unknown container, a pod without a node', async () => {
    const plain = await c.request('POST', '/api/v1/namespaces/default/pods/shell/exec?command=true');
    assert.equal(plain.status, 400);
    assert.equal(plain.json?.message, 'Upgrade request required');
    const wrong = await c.kubectl(['exec', 'shell', '-c', 'nope', '--', 'true']);
    assert.notEqual(wrong.code, 0);
    assert.match(wrong.stderr, /container nope is not valid for pod shell/);
    await create({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'unbound' }, spec: { containers: [{ name: 'main', image: 'busybox', command: ['true'] }] } });
    const unbound = await c.request('POST', '/api/v1/namespaces/default/pods/unbound/exec?command=true', { headers: { connection: 'Upgrade', upgrade: 'SPDY/3.1' } });
    assert.equal(unbound.status, 400);
    assert.equal(unbound.json?.message, 'pod unbound does not have a host assigned');
  });

  for (const version of VERSIONS) {
    void it(`kubectl ${version} attach shows what the container prints while attached`, async () => {
      const name = `talker-${version.replace('.', '-')}`;
      await create(pod(name, ['sh', '-c', 'i=0; while [ $i -lt 40 ]; do echo "tick $i"; i=$((i+1)); sleep 0.1; done'], { restartPolicy: 'Never' }));
      await waitRunning(name);
      const r = await c.kubectl(['attach', name], { version });
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /tick 39\n$/);
    });
  }

  // A container with stdin (kubectl run -i sets stdin and stdinOnce) reads what attach -i sends; under
  // stdinOnce the end of that session's stdin closes the container's, so the second read sees EOF.
  for (const version of ['1.27', '1.33'].filter((v) => kubectlPath(v) !== null)) {
    void it(`kubectl ${version} attach -i feeds a stdin container, and stdinOnce closes its stdin after`, async () => {
      const name = `reader-${version.replace('.', '-')}`;
      const obj = pod(name, ['sh', '-c', 'read x; echo "got $x"; read y; echo "second [$y]"'], { restartPolicy: 'Never' });
      Object.assign(obj['spec'].containers[0], { stdin: true, stdinOnce: true });
      await create(obj);
      await waitRunning(name);
      const r = await c.kubectl(['attach', '-i', name], { version, input: 'abc\n' });
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /got abc\nsecond \[\]\n/);
      const logs = await c.kubectl(['logs', name]);
      assert.equal(logs.stdout, 'got abc\nsecond []\n');
    });
  }

  void it('kubectl 1.27 exec -i over SPDY: large input and output pass the flow-control windows', async (t) => {
    if (kubectlPath('1.27') === null) return t.skip('kubectl 1.27 is not installed');
    const input = 'y'.repeat(300_000) + '\n';
    const r = await c.kubectl(['exec', '-i', 'shell', '--', 'sh', '-c', 'wc -c; head -c 200000 /dev/zero | tr "\\0" z'], { version: '1.27', input });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, `${input.length}\n${'z'.repeat(200_000)}`);
  });

  // Every kubectl: SPDY through 1.30; from 1.31 WebSocket tunnelling is tried first, refused, and SPDY follows.
  for (const version of ['1.27', '1.28', '1.29', '1.30', '1.31', '1.32', '1.33']) {
    void it(`kubectl ${version} port-forward reaches an HTTP server in the pod`, async (t) => {
      if (kubectlPath(version) === null) return t.skip(`kubectl ${version} is not installed`);
      await withPortForward(c, version, 'pod/web', httpPort, async (local) => {
        const first = await httpGet(local, '/one');
        assert.equal(first.code, 200);
        assert.equal(first.body, 'GET /one');
        // Several connections, one after another and at once, each its own pair of streams.
        const many = await Promise.all([1, 2, 3].map((i) => httpGet(local, `/many/${i}`)));
        assert.deepEqual(
          many.map((m) => m.body),
          ['GET /many/1', 'GET /many/2', 'GET /many/3'],
        );
        const big = await httpGet(local, '/big/300000');
        assert.equal(big.body, `GET /big/300000 ${'x'.repeat(300_000)}`);
      });
    });
  }

  // @kubernetes/client-node's PortForward speaks WebSocket (v4.channel.k8s.io), as kubelet 1.23 serves it:
  // per port a data and an error channel, each starting with the port as two little-endian bytes.
  void it('@kubernetes/client-node port-forward over WebSocket reaches the HTTP server in the pod', async () => {
    const kc = new KubeConfig();
    kc.loadFromFile(c.kubeconfig);
    const pf = new PortForward(kc);
    const errors: string[] = [];
    const sockets: Socket[] = [];
    const local = createServer((sock) => {
      sockets.push(sock);
      const err = new Writable({
        write(chunk: Buffer, _enc, done) {
          errors.push(chunk.toString());
          done();
        },
      });
      pf.portForward('default', 'web', [httpPort], sock, err, sock).catch((e: unknown) => {
        errors.push(String(e));
        sock.destroy();
      });
    });
    await new Promise<void>((resolve) => local.listen(0, '127.0.0.1', resolve));
    const port = (local.address() as { port: number }).port;
    try {
      const one = await httpGet(port, '/ws-one');
      assert.equal(one.body, 'GET /ws-one');
      const big = await httpGet(port, '/big/200000');
      assert.equal(big.body, `GET /big/200000 ${'x'.repeat(200_000)}`);
      assert.equal(errors.join(''), '');
    } finally {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => local.close(() => resolve()));
    }
    // Without ports, WebSocket port-forward is refused as kubelet refuses it.
    const none = await c.request('GET', '/api/v1/namespaces/default/pods/web/portforward', {
      headers: { connection: 'Upgrade', upgrade: 'websocket', 'sec-websocket-version': '13', 'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==', 'sec-websocket-protocol': 'v4.channel.k8s.io' },
    });
    assert.equal(none.status, 400);
    assert.match(none.body.toString(), /query parameter "port" is required/);
  });

  void it('port-forward over WebSocket with v4.base64.channel.k8s.io: text frames, the channel as a digit, base64 data', async () => {
    const ws = new WebSocket(`${c.url.replace(/^https/, 'wss')}/api/v1/namespaces/default/pods/web/portforward?ports=${httpPort}`, ['v4.base64.channel.k8s.io'], {
      ca: c.cp.server.caCert,
      headers: { authorization: `Bearer ${c.token}` },
    });
    const frames: string[] = [];
    const closed = new Promise<void>((resolve) => ws.once('close', () => resolve()));
    ws.on('message', (d: Buffer, isBinary: boolean) => {
      assert.equal(isBinary, false);
      frames.push(d.toString());
    });
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    assert.equal(ws.protocol, 'v4.base64.channel.k8s.io');
    ws.send('0' + Buffer.from('GET /b64 HTTP/1.0\r\n\r\n').toString('base64'));
    await closed;
    const port = Buffer.alloc(2);
    port.writeUInt16LE(httpPort);
    // Each channel starts with the port; then the data channel carries the answer, the error channel nothing.
    assert.deepEqual(frames.slice(0, 2), ['0' + port.toString('base64'), '1' + port.toString('base64')]);
    const data = Buffer.concat(frames.slice(2).filter((f) => f.startsWith('0')).map((f) => Buffer.from(f.slice(1), 'base64'))).toString();
    assert.match(data, /^HTTP\/1\.[01] 200/);
    assert.match(data, /GET \/b64$/);
    assert.deepEqual(frames.slice(2).filter((f) => f.startsWith('1') && f.length > 1), []);
  });

  void it('port-forward to a port where nothing listens: kubectl is told why', async (t) => {
    const bin = kubectlPath('1.27');
    if (bin === null) return t.skip('kubectl 1.27 is not installed');
    const [closed, local] = [await freePort(), await freePort()];
    const child = spawn(bin, ['--kubeconfig', c.kubeconfig, 'port-forward', 'pod/web', `${local}:${closed}`], { env: { ...process.env, HOME: c.dir, KUBECACHEDIR: join(c.dir, 'cache') } });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    try {
      await waitFor('kubectl port-forward to listen', async () => (out.includes('Forwarding from') ? true : undefined), 20_000);
      await assert.rejects(httpGet(local, '/'));
      await waitFor('kubectl to say why', async () => (out.includes(`error forwarding port ${closed} to pod web`) ? true : undefined), 20_000);
      assert.match(out, /ECONNREFUSED/);
    } finally {
      child.kill('SIGTERM');
      await exited;
    }
  });

  void it('kubectl 1.27 exec -it over SPDY (a terminal on the client side): output merged, resize stream accepted, exit code', async (t) => {
    const bin = kubectlPath('1.27');
    if (bin === null) return t.skip('kubectl 1.27 is not installed');
    if (!existsSync('/usr/bin/script')) return t.skip('script (util-linux) is not installed');
    const command = `${bin} --kubeconfig ${c.kubeconfig} exec -it shell -- sh -c 'echo out; echo err >&2; exit 4'`;
    const child = spawn('/usr/bin/script', ['-qec', command, '/dev/null'], { env: { ...process.env, HOME: c.dir, KUBECACHEDIR: join(c.dir, 'cache') }, stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('exit', (n) => resolve(n)));
    assert.equal(code, 4, out);
    assert.match(out, /out\r?\n/);
    assert.match(out, /err\r?\n/);
  });

  void it('kubectl 1.27 exec that goes away mid-command: the command is killed', async (t) => {
    const bin = kubectlPath('1.27');
    if (bin === null) return t.skip('kubectl 1.27 is not installed');
    const marker = `${1000 + Math.floor(Math.random() * 1000)}.25`;
    const running = async (): Promise<boolean> => {
      for (const pid of await readdir('/proc')) {
        if (!/^\d+$/.test(pid)) continue;
        const cmd = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
        if (cmd === `sleep\0${marker}\0`) return true;
      }
      return false;
    };
    const child = spawn(bin, ['--kubeconfig', c.kubeconfig, 'exec', 'shell', '--', 'sh', '-c', `echo started; exec sleep ${marker}`], { env: { ...process.env, HOME: c.dir, KUBECACHEDIR: join(c.dir, 'cache') } });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    await waitFor('the command to start', async () => (out.includes('started') && (await running()) ? true : undefined), 20_000);
    child.kill('SIGKILL');
    await exited;
    await waitFor('the command to be killed', async () => ((await running()) ? undefined : true), 20_000);
  });

  void it('SPDY protocol versions: v3.channel.k8s.io gets the error text, an unknown version 403', async () => {
    const path = '/api/v1/namespaces/default/pods/shell/exec?command=sh&command=-c&command=echo%20hi%3B%20exit%205&output=1&error=1';
    const none = await spdyUpgrade(c, path, ['v9.channel.k8s.io']);
    assert.equal(none.status, 403);
    assert.match(none.body, /unable to negotiate protocol/);
    const v3 = await spdyUpgrade(c, path, ['v3.channel.k8s.io', 'v2.channel.k8s.io']);
    assert.equal(v3.status, 101);
    assert.equal(v3.headers['x-stream-protocol-version'], 'v3.channel.k8s.io');
    const { data, frames } = await spdyRun(v3.socket!, v3.head!, [{ streamType: 'error' }, { streamType: 'stdout' }, { streamType: 'stderr' }]);
    assert.equal(frames.filter((f) => f.control && f.type === FrameType.SynReply).length, 3);
    assert.equal(data.get(3), 'hi\n');
    assert.equal(data.get(1), 'command terminated with non-zero exit code: error executing command [sh -c echo hi; exit 5], exit code 5');
    assert.ok(frames.some((f) => f.control && f.type === FrameType.GoAway));
  });
});
