// The CRI client's version negotiation and error mapping, against small gRPC servers made here
// from the same api.proto: one that serves only runtime.v1alpha2, one that serves nothing.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { CriClient, CriError, grpcTarget } from '../../src/agent/runtime/cri/client.js';
import { CriRuntime, runtimeErrorOf } from '../../src/agent/runtime/cri.js';
import { waitFor } from './runtime-contract.js';

const PROTO = fileURLToPath(new URL('../../../src/agent/runtime/cri/api.proto', import.meta.url));

type Handler = (call: { request: Record<string, unknown> }, cb: (err: grpc.ServiceError | null, value?: object) => void) => void;

/** A server answering `handlers` under the runtime.v1alpha2 package only. */
async function v1alpha2Server(socket: string, handlers: Record<string, Handler>): Promise<grpc.Server> {
  const def = protoLoader.loadSync(PROTO, { keepCase: false, longs: String, enums: String, defaults: true });
  const server = new grpc.Server();
  for (const service of ['RuntimeService', 'ImageService']) {
    const methods = def[`runtime.v1.${service}`] as unknown as Record<string, grpc.MethodDefinition<object, object>>;
    const renamed: Record<string, grpc.MethodDefinition<object, object>> = {};
    const impl: grpc.UntypedServiceImplementation = {};
    for (const [name, m] of Object.entries(methods)) {
      renamed[name] = { ...m, path: m.path.replace('/runtime.v1.', '/runtime.v1alpha2.') };
      const h = handlers[`${service}.${name}`];
      impl[name] = (call: grpc.ServerUnaryCall<object, object>, cb: grpc.sendUnaryData<object>) => {
        if (h) h(call as unknown as { request: Record<string, unknown> }, cb);
        else cb({ code: grpc.status.UNIMPLEMENTED, details: `${name} not here`, name: 'Error', message: '', metadata: new grpc.Metadata() });
      };
    }
    server.addService(renamed, impl);
  }
  await new Promise<void>((resolve, reject) => server.bindAsync(`unix://${socket}`, grpc.ServerCredentials.createInsecure(), (err) => (err ? reject(err) : resolve())));
  return server;
}

void describe('CRI client', () => {
  let dir: string;
  let server: grpc.Server;
  const seen: string[] = [];

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'orch-cri-client-'));
    server = await v1alpha2Server(join(dir, 'old.sock'), {
      'RuntimeService.Version': (call, cb) => {
        seen.push(`Version ${String(call.request.version)}`);
        cb(null, { version: '0.1.0', runtimeName: 'old-runtime', runtimeVersion: '1.0', runtimeApiVersion: 'v1alpha2' });
      },
      'RuntimeService.ContainerStatus': (call, cb) =>
        cb({ code: grpc.status.NOT_FOUND, details: `container "${String(call.request.containerId)}" not found`, name: 'Error', message: '', metadata: new grpc.Metadata() }),
      'ImageService.ImageFsInfo': (_call, cb) => cb(null, { imageFilesystems: [] }),
    });
  });
  after(async () => {
    server.forceShutdown();
    await rm(dir, { recursive: true, force: true });
  });

  void it('falls back to runtime.v1alpha2 when the runtime does not implement runtime.v1', async () => {
    const client = await CriClient.connect({ runtimeEndpoint: `unix://${join(dir, 'old.sock')}`, requestTimeoutMs: 5000 });
    try {
      assert.equal(client.apiVersion, 'v1alpha2');
      assert.equal(client.imageApiVersion, 'v1alpha2');
      const v = await client.version();
      assert.deepEqual([v.runtimeName, v.runtimeApiVersion], ['old-runtime', 'v1alpha2']);
      assert.ok(seen.includes('Version v1alpha2'), seen.join(', '));
      assert.deepEqual(await client.imageFsInfo(), []);
      // A runtime's NotFound becomes the Runtime interface's NotFound.
      const err = await client.containerStatus('abc').catch((e: unknown) => e);
      assert.ok(err instanceof CriError && err.notFound, String(err));
      const mapped = runtimeErrorOf(err);
      assert.equal(mapped.code, 'NotFound');
      assert.match(mapped.message, /container "abc" not found/);
    } finally {
      client.close();
    }
  });

  void it('sends image calls to --image-service-endpoint when it is set', async () => {
    const imageServer = await v1alpha2Server(join(dir, 'images.sock'), {
      'ImageService.ImageFsInfo': (_call, cb) => cb(null, { imageFilesystems: [{ timestamp: '1', fsId: { mountpoint: '/var/lib/images' }, usedBytes: { value: '42' } }] }),
    });
    try {
      const client = await CriClient.connect({ runtimeEndpoint: `unix://${join(dir, 'old.sock')}`, imageEndpoint: `unix://${join(dir, 'images.sock')}`, requestTimeoutMs: 5000 });
      try {
        assert.equal((await client.version()).runtimeName, 'old-runtime');
        assert.deepEqual((await client.imageFsInfo()).map((f) => f.fsId?.mountpoint), ['/var/lib/images']);
      } finally {
        client.close();
      }
      const none = await CriClient.connect({ runtimeEndpoint: `unix://${join(dir, 'old.sock')}`, imageEndpoint: join(dir, 'nobody.sock'), requestTimeoutMs: 2000 }).catch((e: unknown) => e);
      assert.ok(none instanceof CriError && none.unavailable && none.method.startsWith('ImageService.'), String(none));
    } finally {
      imageServer.forceShutdown();
    }
  });

  void it('reports an endpoint nothing answers on as unavailable', async () => {
    const err = await CriClient.connect({ runtimeEndpoint: join(dir, 'nobody.sock'), requestTimeoutMs: 2000 }).catch((e: unknown) => e);
    assert.ok(err instanceof CriError, String(err));
    assert.ok(err.unavailable, err.message);
    assert.equal(runtimeErrorOf(err).code, 'Unavailable');
  });

  void it('accepts kubelet spellings of an endpoint', () => {
    assert.equal(grpcTarget('unix:///run/containerd/containerd.sock'), 'unix:///run/containerd/containerd.sock');
    assert.equal(grpcTarget('/run/containerd/containerd.sock'), 'unix:///run/containerd/containerd.sock');
    assert.equal(grpcTarget('tcp://127.0.0.1:5000'), '127.0.0.1:5000');
    assert.throws(() => grpcTarget('npipe:////./pipe/containerd'), /unsupported CRI endpoint/);
  });

  void it('takes container events from a runtime that streams them (GetContainerEvents), without waiting for a relist', async () => {
    const def = protoLoader.loadSync(PROTO, { keepCase: false, longs: String, enums: String, defaults: true });
    const methods = def['runtime.v1.RuntimeService'] as unknown as Record<string, grpc.MethodDefinition<object, object>>;
    const streams: grpc.ServerWritableStream<object, object>[] = [];
    const v1 = new grpc.Server();
    v1.addService(methods, {
      Version: (_call: unknown, cb: grpc.sendUnaryData<object>) => cb(null, { version: '0.1.0', runtimeName: 'streaming-runtime', runtimeVersion: '2.0', runtimeApiVersion: 'v1' }),
      ListContainers: (_call: unknown, cb: grpc.sendUnaryData<object>) => cb(null, { containers: [] }),
      GetContainerEvents: (call: grpc.ServerWritableStream<object, object>) => streams.push(call),
    });
    const socket = join(dir, 'v1.sock');
    await new Promise<void>((resolve, reject) => v1.bindAsync(`unix://${socket}`, grpc.ServerCredentials.createInsecure(), (err) => (err ? reject(err) : resolve())));
    // a relist period longer than the test: what arrives comes from the stream
    const rt = await CriRuntime.connect({ runtimeEndpoint: `unix://${socket}`, requestTimeoutMs: 5000, eventPollMs: 600_000 });
    const events: string[] = [];
    const off = rt.onContainerEvent((e) => events.push(`${e.type} ${e.containerId} ${e.podSandboxId}`));
    try {
      const stream = await waitFor('the event stream to open', () => streams[0]);
      for (const containerEventType of ['CONTAINER_CREATED_EVENT', 'CONTAINER_STARTED_EVENT', 'CONTAINER_STOPPED_EVENT', 'CONTAINER_DELETED_EVENT']) {
        stream.write({ containerId: 'c1', containerEventType, createdAt: '1', podSandboxStatus: { id: 'sb1' } });
      }
      await waitFor('three events', () => (events.length >= 3 ? true : undefined));
      assert.deepEqual(events, ['CONTAINER_STARTED_EVENT c1 sb1', 'CONTAINER_STOPPED_EVENT c1 sb1', 'CONTAINER_DELETED_EVENT c1 sb1']);
    } finally {
      off();
      await rt.detach();
      v1.forceShutdown();
    }
  });
});
