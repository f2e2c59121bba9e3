// A client of the Container Runtime Interface over gRPC, the calls kubelet makes of a runtime's
// RuntimeService and ImageService. Message definitions come from api.proto (written for orch with the
// upstream field numbers), loaded once per process (@grpc/proto-loader, protobufjs underneath).
//
// The wire: gRPC over HTTP/2 without TLS (h2c), spoken directly on node:http2 — a unary call is one
// stream (a POST of one length-prefixed message, answered by one message and the grpc-status
// trailer), a server stream the same with many answers. One HTTP/2 session per endpoint carries every
// call. @grpc/grpc-js did the same through its channel, filter, interceptor and retry layers, which
// cost about three to five times the CPU per call (measured against containerd on the 2-core test
// machine, about 0.7 ms against 0.15–0.35 ms per call), and a pod start makes ten or more calls. What
// grpc-js did that matters here is kept: a session that fails or closes is replaced at the next call;
// a call made while the runtime cannot be reached fails at once with UNAVAILABLE (grpc-js's default,
// not wait-for-ready); deadlines go to the server as grpc-timeout and end the call locally with
// DEADLINE_EXCEEDED; messages are limited to 16 MiB each way (RESOURCE_EXHAUSTED); answers without
// a grpc-status map from the HTTP status or the stream's reset code as grpc-js maps them; and the
// session keeps the process alive only while a call is in flight.
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
import * as http2 from 'node:http2';
import { connect as netConnect } from 'node:net';
import { fileURLToPath } from 'node:url';
import * as protoLoader from '@grpc/proto-loader';
import type * as cri from './types.js';

export type CriApiVersion = 'v1' | 'v1alpha2';

/** gRPC status codes (the numbers of grpc's status enum). */
export const GrpcStatus = {
  OK: 0,
  CANCELLED: 1,
  UNKNOWN: 2,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  ALREADY_EXISTS: 6,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  ABORTED: 10,
  OUT_OF_RANGE: 11,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  DATA_LOSS: 15,
  UNAUTHENTICATED: 16,
} as const;

const STATUS_NAMES = new Map<number, string>(Object.entries(GrpcStatus).map(([k, v]) => [v, k]));

/** A failed CRI call: `code` is the gRPC status code (GrpcStatus), `details` the runtime's message. */
export class CriError extends Error {
  override name = 'CriError';
  constructor(
    readonly method: string,
    readonly code: number,
    readonly details: string,
  ) {
    super(`${method}: ${details !== '' ? details : (STATUS_NAMES.get(code) ?? String(code))}`);
  }

  get notFound(): boolean {
    return this.code === GrpcStatus.NOT_FOUND;
  }

  /** The runtime does not have the call. */
  get unimplemented(): boolean {
    return this.code === GrpcStatus.UNIMPLEMENTED;
  }

  /** The runtime could not be reached or did not answer in time. */
  get unavailable(): boolean {
    return this.code === GrpcStatus.UNAVAILABLE || this.code === GrpcStatus.DEADLINE_EXCEEDED;
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

/** One method of a service: its HTTP/2 path and its message codec. */
interface Method {
  path: string;
  serialize: (value: object) => Buffer;
  deserialize: (bytes: Buffer) => unknown;
}

/** The methods of a service, with call paths pointed at the given API package. */
function serviceMethods(service: ServiceName, version: CriApiVersion): Record<string, Method> {
  packageDefinition ??= definitions();
  const def = packageDefinition[`runtime.v1.${service}`] as unknown as Record<string, protoLoader.MethodDefinition<object, unknown>>;
  const out: Record<string, Method> = {};
  for (const [name, m] of Object.entries(def)) {
    out[name] = {
      path: version === 'v1' ? m.path : m.path.replace('/runtime.v1.', `/runtime.${version}.`),
      serialize: m.requestSerialize,
      deserialize: m.responseDeserialize,
    };
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

/** kubelet's limit for CRI messages (a node with many containers lists a lot), each way. */
const MAX_MESSAGE = 16 * 1024 * 1024;

/** grpc-js's status for an answer without grpc-status, from its HTTP status. */
function statusOfHttp(code: number): number {
  switch (code) {
    case 400:
      return GrpcStatus.INTERNAL;
    case 401:
      return GrpcStatus.UNAUTHENTICATED;
    case 403:
      return GrpcStatus.PERMISSION_DENIED;
    case 404:
      return GrpcStatus.UNIMPLEMENTED;
    case 429:
    case 502:
    case 503:
    case 504:
      return GrpcStatus.UNAVAILABLE;
    default:
      return GrpcStatus.UNKNOWN;
  }
}

/** grpc-js's status for a stream reset before any grpc-status, from the reset code. */
function statusOfReset(rstCode: number): number {
  const c = http2.constants;
  if (rstCode === c.NGHTTP2_REFUSED_STREAM) return GrpcStatus.UNAVAILABLE;
  if (rstCode === c.NGHTTP2_CANCEL) return GrpcStatus.CANCELLED;
  if (rstCode === c.NGHTTP2_ENHANCE_YOUR_CALM) return GrpcStatus.RESOURCE_EXHAUSTED;
  if (rstCode === c.NGHTTP2_INADEQUATE_SECURITY) return GrpcStatus.PERMISSION_DENIED;
  return GrpcStatus.INTERNAL;
}

/** grpc-message is percent-encoded. */
function decodeGrpcMessage(text: string | string[] | undefined): string {
  const t = Array.isArray(text) ? text.join(',') : (text ?? '');
  try {
    return decodeURIComponent(t);
  } catch {
    return t;
  }
}

/** A grpc-timeout header value (at most 8 digits and a unit). */
function grpcTimeout(ms: number): string {
  const t = Math.max(1, Math.ceil(ms));
  if (t < 100_000_000) return `${t}m`;
  return `${Math.min(99_999_999, Math.ceil(t / 1000))}S`;
}

/** A gRPC failure inside the transport (turned into a CriError naming the method by the caller). */
class CallFailure extends Error {
  constructor(
    readonly code: number,
    readonly details: string,
  ) {
    super(details);
  }
}

/**
 * One endpoint's HTTP/2 session, opened at the first call and again after it fails or closes. The
 * session holds the process open only while calls are in flight (as grpc-js's transport).
 */
class Channel {
  private session: http2.ClientHttp2Session | undefined;
  private opening: Promise<http2.ClientHttp2Session> | undefined;
  private active = 0;
  private closed = false;

  constructor(private readonly target: string) {}

  private open(): Promise<http2.ClientHttp2Session> {
    const unixPath = this.target.startsWith('unix://') ? this.target.slice('unix://'.length) : this.target.startsWith('unix:') ? this.target.slice('unix:'.length) : undefined;
    const session =
      unixPath !== undefined
        ? http2.connect('http://localhost', { createConnection: () => netConnect(unixPath), maxSessionMemory: 64 })
        : http2.connect(`http://${this.target}`, { maxSessionMemory: 64 });
    return new Promise((resolve, reject) => {
      const onError = (err: Error): void => {
        session.destroy();
        reject(new CallFailure(GrpcStatus.UNAVAILABLE, `connection to ${this.target} failed: ${err.message}`));
      };
      session.once('error', onError);
      session.once('connect', () => {
        session.off('error', onError);
        // A later failure closes the session; the next call opens a new one.
        session.on('error', () => undefined);
        session.once('close', () => {
          if (this.session === session) this.session = undefined;
        });
        session.once('goaway', () => {
          if (this.session === session) this.session = undefined;
        });
        if (this.active === 0) session.unref();
        resolve(session);
      });
    });
  }

  /** The live session, opened when there is none; rejects (UNAVAILABLE) when the endpoint cannot be reached. */
  private async get(): Promise<http2.ClientHttp2Session> {
    if (this.closed) throw new CallFailure(GrpcStatus.UNAVAILABLE, 'the client is closed');
    const s = this.session;
    if (s && !s.closed && !s.destroyed) return s;
    this.opening ??= this.open().then(
      (session) => {
        this.opening = undefined;
        if (this.closed) {
          session.destroy();
          throw new CallFailure(GrpcStatus.UNAVAILABLE, 'the client is closed');
        }
        this.session = session;
        return session;
      },
      (err: unknown) => {
        this.opening = undefined;
        throw err;
      },
    );
    return this.opening;
  }

  private hold(session: http2.ClientHttp2Session): () => void {
    if (this.active++ === 0) session.ref();
    let released = false;
    return () => {
      if (released) return;
      released = true;
      if (--this.active === 0 && !session.destroyed) session.unref();
    };
  }

  /**
   * One call: sends `request`, hands each answer to `onMessage`, and settles with the call's end
   * (undefined for OK, else the failure). `deadline` (ms since the epoch) ends it with
   * DEADLINE_EXCEEDED. Returns a function that cancels the call.
   */
  call(path: string, request: Buffer, deadline: number | undefined, onMessage: (bytes: Buffer) => void, onEnd: (failure: CallFailure | undefined) => void): () => void {
    let done = false;
    let stream: http2.ClientHttp2Stream | undefined;
    let release: (() => void) | undefined;
    let timer: NodeJS.Timeout | undefined;
    const finish = (failure: CallFailure | undefined): void => {
      if (done) return;
      done = true;
      if (timer) clearTimeout(timer);
      if (stream && !stream.closed) stream.close(http2.constants.NGHTTP2_CANCEL);
      release?.();
      onEnd(failure);
    };
    if (deadline !== undefined) {
      timer = setTimeout(() => finish(new CallFailure(GrpcStatus.DEADLINE_EXCEEDED, 'Deadline exceeded')), Math.max(0, deadline - Date.now()));
    }
    if (request.length > MAX_MESSAGE) {
      finish(new CallFailure(GrpcStatus.RESOURCE_EXHAUSTED, `Sent message larger than max (${request.length} vs. ${MAX_MESSAGE})`));
      return () => {};
    }
    this.get().then(
      (session) => {
        if (done) return;
        const headers: http2.OutgoingHttpHeaders = {
          ':method': 'POST',
          ':path': path,
          'content-type': 'application/grpc',
          te: 'trailers',
          'user-agent': 'orchlet-cri',
        };
        if (deadline !== undefined) headers['grpc-timeout'] = grpcTimeout(deadline - Date.now());
        let s: http2.ClientHttp2Stream;
        try {
          s = session.request(headers);
        } catch (err) {
          if (this.session === session) this.session = undefined;
          finish(new CallFailure(GrpcStatus.UNAVAILABLE, err instanceof Error ? err.message : String(err)));
          return;
        }
        stream = s;
        release = this.hold(session);
        let httpStatus = 0;
        let grpcStatus: number | undefined;
        let grpcMessage = '';
        const takeStatus = (h: http2.IncomingHttpHeaders): void => {
          const st = h['grpc-status'];
          if (st !== undefined) {
            grpcStatus = Number(Array.isArray(st) ? st[0] : st);
            grpcMessage = decodeGrpcMessage(h['grpc-message']);
          }
        };
        s.on('response', (h) => {
          httpStatus = Number(h[':status'] ?? 0);
          takeStatus(h); // a trailers-only answer carries its status here
        });
        s.on('trailers', takeStatus);
        // Length-prefixed messages: 1 byte compressed flag, 4 bytes length, the message.
        let pending: Buffer[] = [];
        let pendingBytes = 0;
        s.on('data', (chunk: Buffer) => {
          if (done) return;
          pending.push(chunk);
          pendingBytes += chunk.length;
          while (pendingBytes >= 5) {
            const buf = pending.length === 1 ? pending[0]! : Buffer.concat(pending, pendingBytes);
            const length = buf.readUInt32BE(1);
            if (length > MAX_MESSAGE) {
              finish(new CallFailure(GrpcStatus.RESOURCE_EXHAUSTED, `Received message larger than max (${length} vs. ${MAX_MESSAGE})`));
              return;
            }
            if (buf[0] !== 0) {
              finish(new CallFailure(GrpcStatus.INTERNAL, 'Received a compressed message, which this client did not ask for'));
              return;
            }
            if (pendingBytes < 5 + length) {
              pending = [buf];
              return;
            }
            const message = buf.subarray(5, 5 + length);
            const rest = buf.subarray(5 + length);
            pending = rest.length > 0 ? [rest] : [];
            pendingBytes = rest.length;
            try {
              onMessage(message);
            } catch (err) {
              finish(new CallFailure(GrpcStatus.INTERNAL, `Failed to parse server response: ${err instanceof Error ? err.message : String(err)}`));
              return;
            }
          }
        });
        s.on('error', () => undefined); // the close below says how it ended
        s.on('close', () => {
          if (grpcStatus !== undefined) {
            finish(grpcStatus === GrpcStatus.OK ? undefined : new CallFailure(grpcStatus, grpcMessage));
          } else if (httpStatus !== 0 && httpStatus !== 200) {
            finish(new CallFailure(statusOfHttp(httpStatus), `Received HTTP status code ${httpStatus}`));
          } else if (s.rstCode !== undefined && s.rstCode !== http2.constants.NGHTTP2_NO_ERROR) {
            finish(new CallFailure(statusOfReset(s.rstCode), `Received RST_STREAM with code ${s.rstCode}`));
          } else if (session.destroyed || session.closed) {
            finish(new CallFailure(GrpcStatus.UNAVAILABLE, 'Connection dropped'));
          } else {
            finish(new CallFailure(GrpcStatus.UNKNOWN, 'Call ended without a status'));
          }
        });
        const frame = Buffer.allocUnsafe(5 + request.length);
        frame[0] = 0;
        frame.writeUInt32BE(request.length, 1);
        request.copy(frame, 5);
        s.end(frame);
      },
      (err: unknown) => finish(err instanceof CallFailure ? err : new CallFailure(GrpcStatus.UNAVAILABLE, err instanceof Error ? err.message : String(err))),
    );
    return () => finish(new CallFailure(GrpcStatus.CANCELLED, 'Cancelled on client'));
  }

  close(): void {
    this.closed = true;
    this.session?.close();
    this.session = undefined;
  }
}

class Service {
  methods: Record<string, Method>;
  constructor(
    readonly name: ServiceName,
    readonly channel: Channel,
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
    return new Promise<Res>((resolve, reject) => {
      let answer: unknown;
      let got = false;
      this.channel.call(
        m.path,
        m.serialize(request),
        timeoutMs === undefined ? undefined : Date.now() + timeoutMs,
        (bytes) => {
          answer = m.deserialize(bytes);
          got = true;
        },
        (failure) => {
          if (failure) reject(new CriError(`${this.name}.${method}`, failure.code, failure.details));
          else if (!got) reject(new CriError(`${this.name}.${method}`, GrpcStatus.UNIMPLEMENTED, 'No message received'));
          else resolve(answer as Res);
        },
      );
    });
  }
}

/** A server stream of a service: `onData` for each message, then `onEnd` once (with the error, if it failed). */
function serverStream<Res>(service: Service, method: string, request: object, onData: (m: Res) => void, onEnd: (err: CriError | undefined) => void): () => void {
  const m = service.methods[method];
  if (!m) {
    onEnd(new CriError(`${service.name}.${method}`, GrpcStatus.UNIMPLEMENTED, `unknown CRI method ${service.name}.${method}`));
    return () => {};
  }
  let ended = false;
  const cancel = service.channel.call(
    m.path,
    m.serialize(request),
    undefined,
    (bytes) => {
      if (!ended) onData(m.deserialize(bytes) as Res);
    },
    (failure) => {
      if (ended) return;
      ended = true;
      onEnd(failure ? new CriError(`${service.name}.${method}`, failure.code, failure.details) : undefined);
    },
  );
  return () => {
    ended = true;
    cancel();
  };
}

export class CriClient {
  private readonly runtime: Service;
  private readonly image: Service;
  private readonly channels: Channel[];
  readonly timeoutMs: number;

  private constructor(options: CriClientOptions) {
    this.timeoutMs = options.requestTimeoutMs ?? 120_000;
    const runtimeTarget = grpcTarget(options.runtimeEndpoint);
    const imageTarget = options.imageEndpoint ? grpcTarget(options.imageEndpoint) : runtimeTarget;
    const runtimeChannel = new Channel(runtimeTarget);
    const imageChannel = imageTarget === runtimeTarget ? runtimeChannel : new Channel(imageTarget);
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
        if (!(err instanceof CriError) || err.code !== GrpcStatus.UNIMPLEMENTED) throw err;
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
      onEnd(new CriError('RuntimeService.GetContainerEvents', GrpcStatus.UNIMPLEMENTED, 'runtime.v1alpha2 has no container events'));
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
