/**
 * --pod-cidr (src/agent/network/podcidr.ts), as kubelet 1.23's updatePodCIDR: standalone, bin/orchlet gives the
 * CIDR of the option (or of podCIDR in the --config file) to its CRI runtime with UpdateRuntimeConfig
 * (network_config.pod_cidr), here a small gRPC runtime made from the same api.proto that records the calls;
 * nothing is sent without it. In API-server mode the Node's spec.podCIDRs, once set (kubectl patch), wins over
 * the option.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { PodCIDRManager } from '../../src/agent/network/podcidr.js';
import { parseAgentOptions } from '../../src/agent/options.js';
import { ProcessRuntime } from '../../src/agent/runtime/process.js';
import { startAgent } from '../helpers/agent.js';
import { startCluster, type TestCluster } from '../helpers/cluster.js';
import { eventually } from '../helpers/eventually.js';

const ORCHLET = fileURLToPath(new URL('../../../bin/orchlet', import.meta.url));
const PROTO = fileURLToPath(new URL('../../../src/agent/runtime/cri/api.proto', import.meta.url));

/** A CRI runtime with nothing in it, answering every call (empty lists), that records UpdateRuntimeConfig. */
async function recordingRuntime(socket: string, seen: string[]): Promise<grpc.Server> {
  const def = protoLoader.loadSync(PROTO, { keepCase: false, longs: String, enums: String, defaults: true });
  const server = new grpc.Server();
  const answers: Record<string, (req: Record<string, unknown>) => object> = {
    Version: () => ({ version: '0.1.0', runtimeName: 'recorder', runtimeVersion: '1.0', runtimeApiVersion: 'v1' }),
    Status: () => ({
      status: {
        conditions: [
          { type: 'RuntimeReady', status: true },
          { type: 'NetworkReady', status: true },
        ],
      },
    }),
    UpdateRuntimeConfig: (req) => {
      const rc = req.runtimeConfig as { networkConfig?: { podCidr?: string } } | undefined;
      seen.push(rc?.networkConfig?.podCidr ?? '<none>');
      return {};
    },
  };
  for (const service of ['RuntimeService', 'ImageService']) {
    const methods = def[`runtime.v1.${service}`] as unknown as grpc.ServiceDefinition;
    const impl: grpc.UntypedServiceImplementation = {};
    for (const name of Object.keys(methods)) {
      impl[name] = (call: grpc.ServerUnaryCall<Record<string, unknown>, object>, cb: grpc.sendUnaryData<object>) => cb(null, answers[name]?.(call.request) ?? {});
    }
    server.addService(methods, impl);
  }
  await new Promise<void>((resolve, reject) => server.bindAsync(`unix://${socket}`, grpc.ServerCredentials.createInsecure(), (err) => (err ? reject(err) : resolve())));
  return server;
}

/** bin/orchlet standalone on the recording runtime until it says it runs; resolves with its stderr. */
function runAgent(dir: string, socket: string, extra: string[]): Promise<string> {
  const args = [
    '--container-runtime=remote',
    `--container-runtime-endpoint=unix://${socket}`,
    `--root-dir=${join(dir, 'root')}`,
    `--pod-manifest-path=${join(dir, 'manifests')}`,
    '--enable-server=false',
    '--fail-swap-on=false',
    '--healthz-port=0',
    '--make-iptables-util-chains=false',
    ...extra,
  ];
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [ORCHLET, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
      if (/running standalone/.test(stderr)) child.kill('SIGTERM');
    });
    child.on('exit', () => {
      clearTimeout(timer);
      if (/running standalone/.test(stderr)) resolve(stderr);
      else reject(new Error(`orchlet did not start:\n${stderr}`));
    });
  });
}

void describe('pod CIDR: kubelet updatePodCIDR', () => {
  void it('tells the runtime only a new value; a failure is logged and the value tried again', async () => {
    const calls: string[] = [];
    let fail = true;
    const logs: string[] = [];
    const m = new PodCIDRManager(
      {
        updatePodCIDR: (c) => {
          calls.push(c);
          return fail ? Promise.reject(new Error('runtime says no')) : Promise.resolve();
        },
      },
      (l, msg) => logs.push(`${l} ${msg}`),
    );
    assert.equal(await m.update(''), false);
    assert.equal(await m.update('10.1.0.0/24'), true);
    assert.match(logs.join('\n'), /error Pod CIDR update failed: failed to update pod CIDR: runtime says no/);
    assert.equal(m.podCIDR, '');
    fail = false;
    assert.equal(await m.update('10.1.0.0/24'), true);
    assert.equal(await m.update('10.1.0.0/24'), false);
    assert.equal(m.podCIDR, '10.1.0.0/24');
    assert.match(logs.join('\n'), /info Updating Pod CIDR originalPodCIDR="" newPodCIDR="10.1.0.0\/24"/);
    // from a Node: podCIDRs joined (dual stack); an empty spec changes nothing
    assert.equal(await m.updateFromNodeSpec({}), false);
    assert.equal(await m.updateFromNodeSpec({ podCIDR: '10.2.0.0/24', podCIDRs: ['10.2.0.0/24', 'fd00:2::/64'] }), true);
    assert.deepEqual(calls, ['10.1.0.0/24', '10.1.0.0/24', '10.2.0.0/24,fd00:2::/64']);
  });

  void it('checks --pod-cidr', () => {
    assert.equal(parseAgentOptions(['--pod-cidr=10.244.0.0/24']).podCidr, '10.244.0.0/24');
    assert.equal(parseAgentOptions(['--pod-cidr=10.244.0.0/24,fd00:1::/64']).podCidr, '10.244.0.0/24,fd00:1::/64');
    assert.throws(() => parseAgentOptions(['--pod-cidr=10.244.0.0']), /pod-cidr.*must be a CIDR/);
    assert.throws(() => parseAgentOptions(['--pod-cidr=10.1.0.0/24,10.2.0.0/24']), /dual-stack/);
  });
});

void describe('pod CIDR: bin/orchlet standalone gives it to the CRI runtime', () => {
  let dir: string;
  let server: grpc.Server;
  const seen: string[] = [];
  let socket: string;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'orch-podcidr-'));
    socket = join(dir, 'cri.sock');
    server = await recordingRuntime(socket, seen);
  });
  after(() => {
    server.forceShutdown();
    rmSync(dir, { recursive: true, force: true });
  });

  void it('sends UpdateRuntimeConfig with --pod-cidr, and nothing without it', async () => {
    const stderr = await runAgent(join(dir, 'a'), socket, ['--pod-cidr=10.244.3.0/24,fd00:10::/64']);
    assert.deepEqual(seen.splice(0), ['10.244.3.0/24,fd00:10::/64']);
    assert.match(stderr, /Updating Pod CIDR originalPodCIDR="" newPodCIDR="10\.244\.3\.0\/24,fd00:10::\/64"/);
    await runAgent(join(dir, 'b'), socket, []);
    assert.deepEqual(seen.splice(0), []);
  });

  void it('takes podCIDR from the --config file', async () => {
    const config = join(dir, 'config.yaml');
    writeFileSync(config, ['apiVersion: kubelet.config.k8s.io/v1beta1', 'kind: KubeletConfiguration', 'podCIDR: 10.99.0.0/16'].join('\n'));
    await runAgent(join(dir, 'c'), socket, [`--config=${config}`]);
    assert.deepEqual(seen.splice(0), ['10.99.0.0/16']);
  });
});

void describe('pod CIDR in API-server mode: the Node spec wins', () => {
  let cluster: TestCluster;
  before(async () => {
    cluster = await startCluster();
  });
  after(async () => {
    await cluster.stop();
  });

  void it('first the option, then spec.podCIDRs once the Node has them', async () => {
    const given: string[] = [];
    const runtime = new ProcessRuntime();
    Object.assign(runtime, {
      updatePodCIDR: (cidr: string) => {
        given.push(cidr);
        return Promise.resolve();
      },
    });
    const a = await startAgent(cluster, { extra: { runtime, network: { podCIDR: '10.1.0.0/24', nodeSpecPeriodMs: 100 } } });
    try {
      assert.deepEqual(given, ['10.1.0.0/24']);
      await eventually('the node is registered', async () => (await cluster.kubectl(['get', 'node', a.nodeName])).code === 0);
      const patch = await cluster.kubectl(['patch', 'node', a.nodeName, '-p', JSON.stringify({ spec: { podCIDR: '10.7.0.0/24', podCIDRs: ['10.7.0.0/24'] } })]);
      assert.equal(patch.code, 0, patch.stderr);
      await eventually('the runtime is given the Node\'s pod CIDR', () => given.length === 2, { timeoutMs: 15_000 });
      assert.deepEqual(given, ['10.1.0.0/24', '10.7.0.0/24']);
    } finally {
      await a.stop();
    }
  });
});
