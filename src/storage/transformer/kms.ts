/**
 * A client of a KMS plugin (API v1beta1, over gRPC on a unix socket), as kube-apiserver's kms v1 provider
 * calls it: the plugin's Version is checked once, before the first Encrypt or Decrypt; every call waits for
 * the socket to be ready, within the provider's timeout. Nothing connects until the first call, so a plugin
 * that starts after the server is found then.
 *
 * Failures carry Go's gRPC error text ('rpc error: code = Unavailable desc = ...') and the code's name as
 * their metrics status.
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import type * as Grpc from '@grpc/grpc-js';
import type * as ProtoLoader from '@grpc/proto-loader';
import type { EnvelopeService } from './envelope.js';
import { TransformError } from './transformer.js';

export const KMS_API_VERSION = 'v1beta1';

const PROTO_RELATIVE = 'src/storage/transformer/kms-v1beta1.proto';

/** The path of the .proto: next to this file when run from source, else under the package root. */
function protoPath(): string {
  const beside = fileURLToPath(new URL('./kms-v1beta1.proto', import.meta.url));
  if (existsSync(beside)) return beside;
  // compiled: <root>/dist/src/storage/transformer/kms.js
  return fileURLToPath(new URL(`../../../../${PROTO_RELATIVE}`, import.meta.url));
}

/**
 * @grpc/grpc-js and its protobuf loader (about 110 modules) are loaded when a kms provider is configured,
 * not on every start: a server without one never pays for them.
 */
const requireCjs = createRequire(import.meta.url);
const grpcModule = (): typeof Grpc => requireCjs('@grpc/grpc-js') as typeof Grpc;
const protoLoaderModule = (): typeof ProtoLoader => requireCjs('@grpc/proto-loader') as typeof ProtoLoader;

type Methods = Record<'Version' | 'Encrypt' | 'Decrypt', Grpc.MethodDefinition<object, Record<string, unknown>>>;
let methods: Methods | undefined;

/** The service's method definitions (loaded once per process; the definitions are immutable). */
export function kmsServiceDefinition(): Methods {
  if (!methods) {
    const def = protoLoaderModule().loadSync(protoPath(), { keepCase: true, longs: String, defaults: true });
    methods = def['v1beta1.KeyManagementService'] as unknown as Methods;
  }
  return methods;
}

/** Go's names of the gRPC codes, as they appear in Go's status errors and in Kubernetes' metric labels. */
const GO_CODE_NAMES = [
  'OK', 'Canceled', 'Unknown', 'InvalidArgument', 'DeadlineExceeded', 'NotFound', 'AlreadyExists', 'PermissionDenied',
  'ResourceExhausted', 'FailedPrecondition', 'Aborted', 'OutOfRange', 'Unimplemented', 'Internal', 'Unavailable',
  'DataLoss', 'Unauthenticated',
];

export function goCodeName(code: number): string {
  return GO_CODE_NAMES[code] ?? `Code(${code})`;
}

/**
 * The socket of a kms endpoint ('unix:///path'; '/@name' is a Linux abstract socket), as a gRPC target.
 * Throws Kubernetes' message for an endpoint it cannot use.
 */
export function kmsTarget(endpoint: string): string {
  if (endpoint === '') throw new Error(`remote KMS provider can't use empty string as endpoint`);
  let u: URL;
  try {
    u = new URL(endpoint);
  } catch (err) {
    throw new Error(`invalid endpoint "${endpoint}" for remote KMS provider, error: ${(err as Error).message}`, { cause: err });
  }
  if (u.protocol !== 'unix:') throw new Error(`unsupported scheme "${u.protocol.replace(/:$/, '')}" for remote KMS provider`);
  const path = decodeURIComponent(u.pathname);
  if (path.startsWith('/@')) return `unix-abstract:${path.slice(2)}`;
  return `unix://${path}`;
}

export class GrpcKmsService implements EnvelopeService {
  private readonly client: Grpc.Client;
  private versionChecked: Promise<void> | undefined;
  private closed = false;

  constructor(
    endpoint: string,
    private readonly timeoutMs: number,
  ) {
    const grpc = grpcModule();
    this.client = new grpc.Client(kmsTarget(endpoint), grpc.credentials.createInsecure(), {
      'grpc.initial_reconnect_backoff_ms': 200,
      'grpc.max_reconnect_backoff_ms': 2000,
    });
  }

  async encrypt(plain: Uint8Array): Promise<Uint8Array> {
    await this.checkVersion();
    const res = await this.call('Encrypt', { version: KMS_API_VERSION, plain: Buffer.from(plain) });
    return res.cipher as Uint8Array;
  }

  async decrypt(cipher: Uint8Array): Promise<Uint8Array> {
    await this.checkVersion();
    const res = await this.call('Decrypt', { version: KMS_API_VERSION, cipher: Buffer.from(cipher) });
    return res.plain as Uint8Array;
  }

  /** Idempotent: the service is shared by the transformers of every resource its configuration entry lists. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.client.close();
  }

  /** The plugin must speak v1beta1; a failed check is retried by the next call. */
  private checkVersion(): Promise<void> {
    this.versionChecked ??= (async () => {
      let version: string;
      try {
        const v = (await this.call('Version', { version: KMS_API_VERSION })).version;
        version = typeof v === 'string' ? v : '';
      } catch (err) {
        throw new TransformError(`failed get version from remote KMS provider: ${(err as Error).message}`);
      }
      if (version !== KMS_API_VERSION) {
        throw new TransformError(`KMS provider api version ${version} is not supported, only ${KMS_API_VERSION} is supported now`);
      }
    })().catch((err: unknown) => {
      this.versionChecked = undefined;
      throw err;
    });
    return this.versionChecked;
  }

  private call(method: keyof Methods, request: object): Promise<Record<string, unknown>> {
    const m = kmsServiceDefinition()[method];
    return new Promise((resolve, reject) => {
      this.client.makeUnaryRequest(
        m.path,
        m.requestSerialize,
        m.responseDeserialize,
        request,
        new (grpcModule().Metadata)({ waitForReady: true }),
        { deadline: Date.now() + this.timeoutMs },
        (err: Grpc.ServiceError | null, value?: Record<string, unknown>) => {
          if (err) {
            const code = goCodeName(err.code);
            reject(new TransformError(`rpc error: code = ${code} desc = ${err.details}`, code));
          } else resolve(value ?? {});
        },
      );
    });
  }
}

const HEALTHZ_NEGATIVE_TTL_MS = 3_000;
const HEALTHZ_POSITIVE_TTL_MS = 20_000;

/**
 * The kms-provider-<n> health check: encrypts and decrypts 'ping' through the plugin, remembering a success
 * for 20 seconds and a failure for 3, as kube-apiserver's probe does.
 */
export class KmsProbe {
  private last: { at: number; err: Error | undefined } | undefined;
  private ttl = HEALTHZ_NEGATIVE_TTL_MS;
  private running: Promise<void> | undefined;

  constructor(
    readonly name: string,
    private readonly service: EnvelopeService,
  ) {}

  check(): Promise<void> {
    if (this.last && Date.now() - this.last.at < this.ttl) return this.last.err ? Promise.reject(this.last.err) : Promise.resolve();
    this.running ??= this.probe().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  private async probe(): Promise<void> {
    let cipher: Uint8Array;
    try {
      cipher = await this.service.encrypt(Buffer.from('ping'));
    } catch (err) {
      throw this.fail(`failed to perform encrypt section of the healthz check for KMS Provider ${this.name}, error: ${(err as Error).message}`);
    }
    try {
      await this.service.decrypt(cipher);
    } catch (err) {
      throw this.fail(`failed to perform decrypt section of the healthz check for KMS Provider ${this.name}, error: ${(err as Error).message}`);
    }
    this.last = { at: Date.now(), err: undefined };
    this.ttl = HEALTHZ_POSITIVE_TTL_MS;
  }

  private fail(message: string): Error {
    const err = new Error(message);
    this.last = { at: Date.now(), err };
    this.ttl = HEALTHZ_NEGATIVE_TTL_MS;
    return err;
  }
}
