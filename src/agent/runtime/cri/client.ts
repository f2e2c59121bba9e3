// A client of the Container Runtime Interface over gRPC (@grpc/grpc-js), the calls kubelet makes
// of a runtime's RuntimeService and ImageService. Message definitions come from api.proto (written
// for orch with the upstream field numbers), loaded once per process.
//
// Version negotiation: connect() asks runtime.v1 for its Version; when the runtime answers
// UNIMPLEMENTED it asks runtime.v1alpha2, and every later call goes to that package (the two
// share the wire format of everything orchlet sends). The image service may live on another
// endpoint (--image-service-endpoint) and is negotiated the same way.
//
// Every call has a deadline: --runtime-request-timeout, except PullImage (none: pulls may be
// long), StopContainer (the grace period on top) and ExecSync (its own timeout on top). Failures
// reject with CriError, carrying the gRPC status code.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import type * as cri from './types.js';

export type CriApiVersion = 'v1' | 'v1alpha2';

/** A failed CRI call: `code` is the gRPC status code (grpc.status), `details` the runtime's message. */
export class CriError extends Error {
  override name = 'CriError';
  constructor(
    readonly method: string,
    readonly code: grpc.status,
    readonly details: string,
  ) {
    super(`${method}: ${details !== '' ? details : grpc.status[code]}`);
  }

  get notFound(): boolean {
    return this.code === grpc.status.NOT_FOUND;
  }

  /** The runtime does not have the call. */
  get unimplemented(): boolean {
    return this.code === grpc.status.UNIMPLEMENTED;
  }

  /** The runtime could not be reached or did not answer in time. */
  get unavailable(): boolean {
    return this.code === grpc.status.UNAVAILABLE || this.code === grpc.status.DEADLINE_EXCEEDED;
  }
}

export interface CriClientOptions {
  /** --container-runtime-endpoint: unix:///path, unix:/path, a bare absolute path, or tcp://host:port. */
  runtimeEndpoint: string;
  /** --image-service-endpoint; the runtime endpoint when unset or empty. */
  imageEndpoint?: string;
  /** --runtime-request-timeout in ms (default 2 minutes). */
  requestTimeoutMs?: number;
}

type ServiceName = 'RuntimeService' | 'ImageService';

const PROTO_RELATIVE = 'src/agent/runtime/cri/api.proto';

/** The path of api.proto: next to this file when run from source, else under the package root. */
function protoPath(): string {
  const here = fileURLToPath(new URL('.', import.meta.url));
  const beside = `${here}api.proto`;
  if (existsSync(beside)) return beside;
  // compiled: <root>/dist/src/agent/runtime/cri/client.js
  return fileURLToPath(new URL(`../../../../../${PROTO_RELATIVE}`, import.meta.url));
}

/**
 * The message and service definitions, with every message's encoder and decoder generated now:
 * protobufjs generates them at a message's first use, about 0.3 s of CPU over all the messages, which
 * would otherwise fall on the calls for the first pods the agent starts.
 */
function definitions(): protoLoader.PackageDefinition {
  // 64-bit integers decode as numbers: their conversion to decimal strings (Long.toString) cost more
  // than the rest of a PodSandboxStatus or ListContainers answer; nanosecond timestamps keep
  // sub-microsecond precision as numbers, and byte counts stay exact below 2^53.
  const def = protoLoader.loadSync(protoPath(), { keepCase: false, longs: Number, enums: String, defaults: true, oneofs: true });
  for (const d of Object.values(def)) {
    if (d.format === 'Protocol Buffer 3 DescriptorProto') d.deserialize(d.serialize({}));
  }
  return def;
}
let packageDefinition: protoLoader.PackageDefinition | undefined;

/** The method definitions of a service, with call paths pointed at the given API package. */
function serviceMethods(service: ServiceName, version: CriApiVersion): Record<string, grpc.MethodDefinition<unknown, unknown>> {
  packageDefinition ??= definitions();
  const def = packageDefinition[`runtime.v1.${service}`] as unknown as Record<string, grpc.MethodDefinition<unknown, unknown>>;
  const out: Record<string, grpc.MethodDefinition<unknown, unknown>> = {};
  for (const [name, m] of Object.entries(def)) {
    out[name] = version === 'v1' ? m : { ...m, path: m.path.replace('/runtime.v1.', `/runtime.${version}.`) };
  }
  return out;
}

/** The gRPC target of a CRI endpoint. */
export function grpcTarget(endpoint: string): string {
  const e = endpoint.trim();
  if (e.startsWith('unix://') || e.startsWith('unix:')) return e;
  if (e.startsWith('/')) return `unix://${e}`;
  if (e.startsWith('tcp://')) return e.slice('tcp://'.length);
  throw new Error(`unsupported CRI endpoint "${endpoint}": use unix:///path/to/socket (or tcp://host:port)`);
}

const CHANNEL_OPTIONS: grpc.ChannelOptions = {
  // kubelet's limit for CRI messages (a node with many containers lists a lot)
  'grpc.max_receive_message_length': 16 * 1024 * 1024,
  'grpc.max_send_message_length': 16 * 1024 * 1024,
  // a restarted runtime is found again within seconds, not after grpc's default two minutes
  'grpc.initial_reconnect_backoff_ms': 200,
  'grpc.max_reconnect_backoff_ms': 2000,
};

class Service {
  methods: Record<string, grpc.MethodDefinition<unknown, unknown>>;
  constructor(
    readonly name: ServiceName,
    readonly channel: grpc.Client,
    public version: CriApiVersion,
  ) {
    this.methods = serviceMethods(name, version);
  }

  setVersion(version: CriApiVersion): void {
    this.version = version;
    this.methods = serviceMethods(this.name, version);
  }

  call<Res>(method: string, request: object, timeoutMs: number | undefined): Promise<Res> {
    const m = this.methods[method];
    if (!m) return Promise.reject(new Error(`unknown CRI method ${this.name}.${method}`));
    const options: grpc.CallOptions = timeoutMs === undefined ? {} : { deadline: Date.now() + timeoutMs };
    return new Promise<Res>((resolve, reject) => {
      this.channel.makeUnaryRequest(
        m.path,
        m.requestSerialize,
        m.responseDeserialize,
        request,
        new grpc.Metadata(),
        options,
        (err: grpc.ServiceError | null, value?: unknown) => {
          if (err) reject(new CriError(`${this.name}.${method}`, err.code, err.details));
          else resolve(value as Res);
        },
      );
    });
  }
}

/** A server stream of a service: `onData` for each message, then `onEnd` once (with the error, if it failed). */
function serverStream<Res>(service: Service, method: string, request: object, onData: (m: Res) => void, onEnd: (err: CriError | undefined) => void): () => void {
  const m = service.methods[method];
  if (!m) {
    onEnd(new CriError(`${service.name}.${method}`, grpc.status.UNIMPLEMENTED, `unknown CRI method ${service.name}.${method}`));
    return () => {};
  }
  const call = service.channel.makeServerStreamRequest(m.path, m.requestSerialize, m.responseDeserialize, request, new grpc.Metadata(), {});
  let ended = false;
  const end = (err: CriError | undefined): void => {
    if (ended) return;
    ended = true;
    onEnd(err);
  };
  call.on('data', (d: unknown) => onData(d as Res));
  call.on('error', (err: grpc.ServiceError) => end(new CriError(`${service.name}.${method}`, err.code, err.details)));
  call.on('end', () => end(undefined));
  return () => {
    ended = true;
    call.cancel();
  };
}

export class CriClient {
  private readonly runtime: Service;
  private readonly image: Service;
  private readonly channels: grpc.Client[];
  readonly timeoutMs: number;

  private constructor(options: CriClientOptions) {
    this.timeoutMs = options.requestTimeoutMs ?? 120_000;
    const runtimeTarget = grpcTarget(options.runtimeEndpoint);
    const imageTarget = options.imageEndpoint ? grpcTarget(options.imageEndpoint) : runtimeTarget;
    const runtimeChannel = new grpc.Client(runtimeTarget, grpc.credentials.createInsecure(), CHANNEL_OPTIONS);
    const imageChannel =
      imageTarget === runtimeTarget ? runtimeChannel : new grpc.Client(imageTarget, grpc.credentials.createInsecure(), CHANNEL_OPTIONS);
    this.channels = imageChannel === runtimeChannel ? [runtimeChannel] : [runtimeChannel, imageChannel];
    this.runtime = new Service('RuntimeService', runtimeChannel, 'v1');
    this.image = new Service('ImageService', imageChannel, 'v1');
  }

  /**
   * A client whose API version (v1, else v1alpha2) is negotiated with the runtime. Rejects with
   * CriError when the runtime cannot be reached (the caller may retry).
   */
  static async connect(options: CriClientOptions): Promise<CriClient> {
    const client = new CriClient(options);
    try {
      await client.negotiate();
    } catch (err) {
      client.close();
      throw err;
    }
    return client;
  }

  /** The API package the runtime service speaks. */
  get apiVersion(): CriApiVersion {
    return this.runtime.version;
  }

  get imageApiVersion(): CriApiVersion {
    return this.image.version;
  }

  private async negotiate(): Promise<void> {
    for (const service of this.channels.length === 1 ? [this.runtime] : [this.runtime, this.image]) {
      const probe = service.name === 'RuntimeService' ? 'Version' : 'ImageFsInfo';
      const request = service.name === 'RuntimeService' ? { version: 'v1' } : {};
      try {
        await service.call(probe, request, this.timeoutMs);
      } catch (err) {
        if (!(err instanceof CriError) || err.code !== grpc.status.UNIMPLEMENTED) throw err;
        service.setVersion('v1alpha2');
        await service.call(probe, service.name === 'RuntimeService' ? { version: 'v1alpha2' } : {}, this.timeoutMs);
      }
    }
    if (this.channels.length === 1) this.image.setVersion(this.runtime.version);
  }

  close(): void {
    for (const c of this.channels) c.close();
  }

  // --- RuntimeService -------------------------------------------------------------------------

  version(): Promise<cri.VersionResponse> {
    return this.runtime.call('Version', { version: this.runtime.version }, this.timeoutMs);
  }

  status(verbose = false): Promise<cri.StatusResponse> {
    return this.runtime.call('Status', { verbose }, this.timeoutMs);
  }

  /** UpdateRuntimeConfig with the node's pod CIDR (kubelet's UpdatePodCIDR). */
  async updateRuntimeConfig(podCidr: string): Promise<void> {
    await this.runtime.call('UpdateRuntimeConfig', { runtimeConfig: { networkConfig: { podCidr } } }, this.timeoutMs);
  }

  async runPodSandbox(config: cri.PodSandboxConfig, runtimeHandler = ''): Promise<string> {
    const r = await this.runtime.call<{ podSandboxId: string }>('RunPodSandbox', { config, runtimeHandler }, this.timeoutMs);
    return r.podSandboxId;
  }

  async stopPodSandbox(podSandboxId: string): Promise<void> {
    await this.runtime.call('StopPodSandbox', { podSandboxId }, this.timeoutMs);
  }

  async removePodSandbox(podSandboxId: string): Promise<void> {
    await this.runtime.call('RemovePodSandbox', { podSandboxId }, this.timeoutMs);
  }

  podSandboxStatus(podSandboxId: string, verbose = false): Promise<cri.PodSandboxStatusResponse> {
    return this.runtime.call('PodSandboxStatus', { podSandboxId, verbose }, this.timeoutMs);
  }

  async listPodSandbox(filter?: cri.PodSandboxFilter): Promise<cri.PodSandbox[]> {
    const r = await this.runtime.call<{ items: cri.PodSandbox[] }>('ListPodSandbox', filter ? { filter } : {}, this.timeoutMs);
    return r.items;
  }

  async createContainer(podSandboxId: string, config: cri.ContainerConfig, sandboxConfig: cri.PodSandboxConfig): Promise<string> {
    const r = await this.runtime.call<{ containerId: string }>('CreateContainer', { podSandboxId, config, sandboxConfig }, this.timeoutMs);
    return r.containerId;
  }

  async startContainer(containerId: string): Promise<void> {
    await this.runtime.call('StartContainer', { containerId }, this.timeoutMs);
  }

  /** Stops with `timeoutSeconds` between SIGTERM and SIGKILL; the deadline is the request timeout on top. */
  async stopContainer(containerId: string, timeoutSeconds: number): Promise<void> {
    const timeout = Math.max(0, Math.floor(timeoutSeconds));
    await this.runtime.call('StopContainer', { containerId, timeout }, this.timeoutMs + timeout * 1000);
  }

  async removeContainer(containerId: string): Promise<void> {
    await this.runtime.call('RemoveContainer', { containerId }, this.timeoutMs);
  }

  async listContainers(filter?: cri.ContainerFilter): Promise<cri.Container[]> {
    const r = await this.runtime.call<{ containers: cri.Container[] }>('ListContainers', filter ? { filter } : {}, this.timeoutMs);
    return r.containers;
  }

  containerStatus(containerId: string, verbose = false): Promise<cri.ContainerStatusResponse> {
    return this.runtime.call('ContainerStatus', { containerId, verbose }, this.timeoutMs);
  }

  async updateContainerResources(containerId: string, linux: cri.LinuxContainerResources): Promise<void> {
    await this.runtime.call('UpdateContainerResources', { containerId, linux }, this.timeoutMs);
  }

  async reopenContainerLog(containerId: string): Promise<void> {
    await this.runtime.call('ReopenContainerLog', { containerId }, this.timeoutMs);
  }

  /** Runs `cmd` in the container; `timeoutSeconds` 0 means no limit of its own. */
  execSync(containerId: string, cmd: string[], timeoutSeconds: number): Promise<cri.ExecSyncResponse> {
    const timeout = Math.max(0, Math.floor(timeoutSeconds));
    return this.runtime.call('ExecSync', { containerId, cmd, timeout }, timeout === 0 ? undefined : this.timeoutMs + timeout * 1000);
  }

  /** Prepares a streaming exec; resolves with the URL of the runtime's streaming server that serves it. */
  async exec(containerId: string, cmd: string[], o: { tty: boolean; stdin: boolean; stdout: boolean; stderr: boolean }): Promise<string> {
    const r = await this.runtime.call<{ url: string }>('Exec', { containerId, cmd, ...o }, this.timeoutMs);
    return r.url;
  }

  /** Prepares a streaming attach; resolves with the streaming server's URL. */
  async attach(containerId: string, o: { tty: boolean; stdin: boolean; stdout: boolean; stderr: boolean }): Promise<string> {
    const r = await this.runtime.call<{ url: string }>('Attach', { containerId, ...o }, this.timeoutMs);
    return r.url;
  }

  /** Prepares a port forward into a sandbox; resolves with the streaming server's URL. */
  async portForward(podSandboxId: string, port: number[]): Promise<string> {
    const r = await this.runtime.call<{ url: string }>('PortForward', { podSandboxId, port }, this.timeoutMs);
    return r.url;
  }

  /**
   * GetContainerEvents: the runtime's container events as they happen, until the returned function
   * cancels the stream or it ends (`onEnd`, with the error: UNIMPLEMENTED from runtimes before CRI
   * 1.27, such as containerd 1.6, and always under runtime.v1alpha2, which has no such call).
   */
  containerEvents(onEvent: (e: cri.ContainerEventResponse) => void, onEnd: (err: CriError | undefined) => void): () => void {
    if (this.runtime.version !== 'v1') {
      onEnd(new CriError('RuntimeService.GetContainerEvents', grpc.status.UNIMPLEMENTED, 'runtime.v1alpha2 has no container events'));
      return () => {};
    }
    return serverStream(this.runtime, 'GetContainerEvents', {}, onEvent, onEnd);
  }

  // --- ImageService ---------------------------------------------------------------------------

  async listImages(image?: string): Promise<cri.Image[]> {
    const r = await this.image.call<{ images: cri.Image[] }>('ListImages', image ? { filter: { image: { image } } } : {}, this.timeoutMs);
    return r.images;
  }

  /** The image, or undefined when the runtime does not have it. */
  async imageStatus(image: string): Promise<cri.Image | undefined> {
    const r = await this.image.call<{ image?: cri.Image | null }>('ImageStatus', { image: { image } }, this.timeoutMs);
    return r.image ?? undefined;
  }

  /** Pulls the image (no deadline); resolves with its image ref. */
  async pullImage(image: string, auth?: cri.AuthConfig, sandboxConfig?: cri.PodSandboxConfig): Promise<string> {
    const request = { image: { image }, ...(auth ? { auth } : {}), ...(sandboxConfig ? { sandboxConfig } : {}) };
    const r = await this.image.call<{ imageRef: string }>('PullImage', request, undefined);
    return r.imageRef;
  }

  async removeImage(image: string): Promise<void> {
    await this.image.call('RemoveImage', { image: { image } }, this.timeoutMs);
  }

  async imageFsInfo(): Promise<cri.FilesystemUsage[]> {
    const r = await this.image.call<{ imageFilesystems: cri.FilesystemUsage[] }>('ImageFsInfo', {}, this.timeoutMs);
    return r.imageFilesystems;
  }
}
