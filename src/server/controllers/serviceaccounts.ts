/**
 * The service-account controllers of kube-controller-manager 1.23, in-process:
 *   - the service account controller (pkg/controller/serviceaccount/serviceaccounts_controller.go): every
 *     active namespace has a `default` ServiceAccount, made again when deleted;
 *   - the root-CA publisher (pkg/controller/certificates/rootcacertpublisher): every namespace has the
 *     ConfigMap kube-root-ca.crt holding the cluster CA (ca.crt), put back when changed or deleted.
 * Both sync per namespace, one sync per namespace at a time, retrying failures after a second.
 */
import { isStatusError } from '../../registry/errors.js';
import type { KObject } from '../../registry/kind.js';
import type { Registry } from '../../registry/registry.js';
import type { ResourceStore, WatchEvent } from '../../registry/store.js';
import { subscribe, type Controller } from './runner.js';

const SA_CONTROLLER = { name: 'system:serviceaccount:kube-system:service-account-controller', groups: ['system:serviceaccounts', 'system:serviceaccounts:kube-system'] };
const ROOT_CA_PUBLISHER = { name: 'system:serviceaccount:kube-system:root-ca-cert-publisher', groups: ['system:serviceaccounts', 'system:serviceaccounts:kube-system'] };

export const ROOT_CA_CONFIGMAP = 'kube-root-ca.crt';
const DESCRIPTION_ANNOTATION = 'kubernetes.io/description';
const DESCRIPTION =
  'Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. ' +
  'No other usage is guaranteed across distributions of Kubernetes clusters.';

/**
 * A queue of keys, each synced by at most one call at a time (a key queued during its sync is synced again
 * after it); a failed sync is retried after `retryMs`. stop() drops what is queued.
 */
export function keyedQueue(sync: (key: string) => Promise<void>, log: (m: string) => void, name: string, retryMs = 1000) {
  const busy = new Set<string>();
  const again = new Set<string>();
  const timers = new Set<NodeJS.Timeout>();
  let stopped = false;
  const add = (key: string): void => {
    if (stopped) return;
    if (busy.has(key)) {
      again.add(key);
      return;
    }
    busy.add(key);
    void sync(key)
      .catch((err: unknown) => {
        if (stopped) return;
        log(`${name}: ${key}: ${(err as Error).message}`);
        const t = setTimeout(() => {
          timers.delete(t);
          add(key);
        }, retryMs);
        t.unref();
        timers.add(t);
      })
      .finally(() => {
        busy.delete(key);
        if (again.delete(key)) add(key);
      });
  };
  return {
    add,
    stop(): void {
      stopped = true;
      for (const t of timers) clearTimeout(t);
    },
  };
}

/** Watches several stores with one handler each; the returned controller stops the queue and the watches. */
export function watchAll(stores: [ResourceStore, (ev: WatchEvent) => void][], stopQueue: () => void): Controller {
  const unsubscribes = stores.map(([store, event]) => subscribe(store, { event }));
  return {
    stop() {
      stopQueue();
      for (const u of unsubscribes) u();
    },
  };
}

const isActive = (ns: KObject): boolean => !ns.metadata?.deletionTimestamp && (ns.status?.phase ?? 'Active') === 'Active';

async function getOrUndefined(store: ResourceStore, namespace: string, name: string): Promise<KObject | undefined> {
  try {
    return await store.get({ namespace }, name);
  } catch (err) {
    if (isStatusError(err, 'NotFound')) return undefined;
    throw err;
  }
}

/** A create that may find the object there already, or its namespace gone or terminating. */
async function createQuietly(store: ResourceStore, namespace: string, user: { name: string; groups: string[] }, obj: KObject): Promise<void> {
  try {
    await store.create({ namespace, user }, obj);
  } catch (err) {
    if (isStatusError(err, 'AlreadyExists') || isStatusError(err, 'NotFound')) return;
    if (isStatusError(err, 'Forbidden') && JSON.stringify(err).includes('NamespaceTerminating')) return;
    throw err;
  }
}

/** Keeps a `default` ServiceAccount in every active namespace. */
export function startServiceAccountController(registry: Registry, log: (m: string) => void = () => {}): Controller {
  const namespaces = registry.store('', 'v1', 'namespaces')!;
  const accounts = registry.store('', 'v1', 'serviceaccounts')!;
  const queue = keyedQueue(
    async (namespace) => {
      const ns = await getOrUndefined(namespaces, '', namespace);
      if (!ns || !isActive(ns)) return;
      if (await getOrUndefined(accounts, namespace, 'default')) return;
      await createQuietly(accounts, namespace, SA_CONTROLLER, { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'default' } });
    },
    log,
    'serviceaccount-controller',
  );
  return watchAll(
    [
      [namespaces, (ev) => (ev.type === 'ADDED' || ev.type === 'MODIFIED') && queue.add(ev.object.metadata?.name ?? '')],
      [accounts, (ev) => ev.type === 'DELETED' && queue.add(ev.object.metadata?.namespace ?? '')],
    ],
    () => queue.stop(),
  );
}

/** Keeps the ConfigMap kube-root-ca.crt, with `rootCA` as ca.crt, in every namespace. */
export function startRootCAPublisher(registry: Registry, rootCA: string, log: (m: string) => void = () => {}): Controller {
  const namespaces = registry.store('', 'v1', 'namespaces')!;
  const configMaps = registry.store('', 'v1', 'configmaps')!;
  const queue = keyedQueue(
    async (namespace) => {
      const ns = await getOrUndefined(namespaces, '', namespace);
      if (!ns || !isActive(ns)) return;
      const cm = await getOrUndefined(configMaps, namespace, ROOT_CA_CONFIGMAP);
      const data = { 'ca.crt': rootCA };
      if (!cm) {
        await createQuietly(configMaps, namespace, ROOT_CA_PUBLISHER, {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { name: ROOT_CA_CONFIGMAP, annotations: { [DESCRIPTION_ANNOTATION]: DESCRIPTION } },
          data,
        });
        return;
      }
      const current = cm['data'] ?? {};
      const same = Object.keys(current).length === 1 && current['ca.crt'] === rootCA;
      if (same && cm.metadata?.annotations?.[DESCRIPTION_ANNOTATION]) return;
      await configMaps.update({ namespace, user: ROOT_CA_PUBLISHER }, ROOT_CA_CONFIGMAP, (live) => {
        if (!live) throw new Error('kube-root-ca.crt went away; syncing again');
        const next = structuredClone(live);
        next['data'] = data;
        next.metadata = { ...next.metadata, annotations: { ...(next.metadata?.annotations ?? {}), [DESCRIPTION_ANNOTATION]: DESCRIPTION } };
        return next;
      });
    },
    log,
    'root-ca-cert-publisher',
  );
  return watchAll(
    [
      [namespaces, (ev) => (ev.type === 'ADDED' || ev.type === 'MODIFIED') && queue.add(ev.object.metadata?.name ?? '')],
      [
        configMaps,
        (ev) =>
          (ev.type === 'MODIFIED' || ev.type === 'DELETED') && ev.object.metadata?.name === ROOT_CA_CONFIGMAP && queue.add(ev.object.metadata.namespace ?? ''),
      ],
    ],
    () => queue.stop(),
  );
}
