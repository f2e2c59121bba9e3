/**
 * The control plane as one value: the storage the options name and the API server on top of it.
 * `orch-apiserver` builds one from its command line; tests build as many as they like (port 0, memory store).
 */
import { openStorage, type Storage, type StorageConfig } from '../storage/factory.js';
import { versionInfo } from '../util/version.js';
import type { ServerOptions } from './options.js';
import { createApiServer, type ApiServer, type ServerConfig } from './server.js';

export interface ControlPlane {
  readonly server: ApiServer;
  readonly storage: Storage;
  /** Listens; resolves once serving. */
  start(): Promise<void>;
  /** Stops serving (after the shutdown delay), then closes the storage. Safe to call twice. */
  stop(): Promise<void>;
}

export function storageConfigFrom(o: ServerOptions): StorageConfig {
  return {
    servers: o.kvstoreServers,
    serversOverrides: o.kvstoreServersOverrides,
    prefix: o.kvstorePrefix,
    caFile: o.kvstoreCafile,
    certFile: o.kvstoreCertfile,
    keyFile: o.kvstoreKeyfile,
    healthcheckTimeoutMs: o.kvstoreHealthcheckTimeout,
    compactionIntervalMs: o.kvstoreCompactionInterval,
    countMetricPollPeriodMs: o.kvstoreCountMetricPollPeriod,
    dbMetricPollIntervalMs: o.kvstoreDbMetricPollInterval,
    dataDir: o.dataDir,
  };
}

export function serverConfigFrom(o: ServerOptions, logger?: (message: string) => void): ServerConfig {
  return {
    bindAddress: o.bindAddress,
    securePort: o.securePort,
    advertiseAddress: o.advertiseAddress,
    certDir: o.certDir,
    tlsCertFile: o.tlsCertFile,
    tlsPrivateKeyFile: o.tlsPrivateKeyFile,
    tokenAuthFile: o.tokenAuthFile,
    clientCaFile: o.clientCaFile,
    anonymousAuth: o.anonymousAuth,
    authorizationModes: o.authorizationMode,
    shutdownDelayMs: o.shutdownDelayDuration,
    livezGracePeriodMs: o.livezGracePeriod,
    versionInfo,
    ...(logger ? { logger } : {}),
  };
}

/** Opens the storage and builds the server; nothing listens until start(). */
export async function createControlPlane(
  options: ServerOptions,
  overrides: { securePort?: number; logger?: (message: string) => void } = {},
): Promise<ControlPlane> {
  const storage = await openStorage(storageConfigFrom(options));
  let server: ApiServer;
  try {
    const cfg = serverConfigFrom(options, overrides.logger);
    if (overrides.securePort !== undefined) cfg.securePort = overrides.securePort;
    server = await createApiServer(cfg);
  } catch (err) {
    await storage.close();
    throw err;
  }
  // kube-apiserver's storage check: reads the store within the health-check timeout.
  const timeout = options.kvstoreHealthcheckTimeout;
  server.addHealthCheck('etcd', async () => {
    const kv = storage.kvFor('', 'namespaces');
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        kv.currentRevision(),
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Error('storage health check timed out')), timeout);
        }),
      ]);
    } finally {
      clearTimeout(timer);
    }
  });
  let stopped: Promise<void> | undefined;
  return {
    server,
    storage,
    start: () => server.start(),
    stop: () =>
      (stopped ??= (async () => {
        try {
          await server.stop();
        } finally {
          await storage.close();
        }
      })()),
  };
}
