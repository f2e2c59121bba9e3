/**
 * The APIServerIdentity feature of Kubernetes 1.23: each server holds a Lease named after its identity
 * ('kube-apiserver-<uuid>', a new one per start, as 1.23's APIServerID) in kube-system, labelled
 * k8s.io/component=kube-apiserver, with holderIdentity its name and leaseDurationSeconds from
 * --identity-lease-duration-seconds; renewTime is renewed every --identity-lease-renew-interval-seconds
 * (component-helpers' lease controller). A garbage collector deletes identity leases (by that label) whose
 * renewTime plus duration has passed, or that lack either field, checking every lease duration
 * (apiserverleasegc).
 */
import { randomUUID } from 'node:crypto';
import { isStatusError } from '../registry/errors.js';
import type { KObject } from '../registry/kind.js';
import type { Registry } from '../registry/registry.js';
import type { RequestScope, ResourceStore } from '../registry/store.js';
import { tryParse as parseLabels } from '../util/labels.js';
import type { Controller } from './controllers/runner.js';

export const IDENTITY_LEASE_NAMESPACE = 'kube-system';
export const IDENTITY_LEASE_LABEL_KEY = 'k8s.io/component';
export const IDENTITY_LEASE_LABEL_VALUE = 'kube-apiserver';

const SYSTEM = { name: 'system:apiserver', groups: ['system:masters'] };

export interface IdentityLeaseOptions {
  /** The server's identity; default 'kube-apiserver-<uuid>'. */
  id?: string;
  durationSeconds: number;
  renewIntervalSeconds: number;
  log?: (message: string) => void;
  now?: () => Date;
}

/** metav1.MicroTime's text: RFC 3339 with microseconds. */
function microTime(d: Date): string {
  return d.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

/** isLeaseExpired of apiserverleasegc. */
export function leaseExpired(lease: KObject, now: Date): boolean {
  const spec = (lease.spec ?? {}) as { renewTime?: string; leaseDurationSeconds?: number };
  if (!spec.renewTime || spec.leaseDurationSeconds === undefined || spec.leaseDurationSeconds === null) return true;
  return Date.parse(spec.renewTime) + spec.leaseDurationSeconds * 1000 < now.getTime();
}

export interface IdentityLease extends Controller {
  readonly id: string;
}

/** Starts the identity lease's renewal and the garbage collector; stop() ends both (the lease stays, to expire). */
export function startIdentityLease(registry: Registry, opts: IdentityLeaseOptions): IdentityLease {
  const id = opts.id ?? `kube-apiserver-${randomUUID()}`;
  const log = opts.log ?? (() => {});
  const now = opts.now ?? (() => new Date());
  const store = registry.store('coordination.k8s.io', 'v1', 'leases');
  if (!store) {
    log('APIServerIdentity: the coordination.k8s.io/v1 Lease kind is not available; no identity lease is kept');
    return { id, stop: () => {} };
  }
  const scope: RequestScope = { namespace: IDENTITY_LEASE_NAMESPACE, user: SYSTEM, fieldManager: 'kube-apiserver' };
  let stopped = false;
  const renew = async () => {
    const spec = { holderIdentity: id, leaseDurationSeconds: opts.durationSeconds, renewTime: microTime(now()) };
    try {
      await store.update(scope, id, (cur) => {
        if (!cur) {
          return {
            apiVersion: 'coordination.k8s.io/v1',
            kind: 'Lease',
            metadata: { name: id, namespace: IDENTITY_LEASE_NAMESPACE, labels: { [IDENTITY_LEASE_LABEL_KEY]: IDENTITY_LEASE_LABEL_VALUE } },
            spec,
          };
        }
        return { ...cur, spec: { ...(cur.spec as object), renewTime: spec.renewTime } };
      });
    } catch (err) {
      if (!stopped) log(`failed to renew the identity lease ${IDENTITY_LEASE_NAMESPACE}/${id}: ${(err as Error).message}`);
    }
  };
  const gc = () => collectExpiredLeases(store, scope, now, log);
  const renewTimer = setInterval(() => void renew(), opts.renewIntervalSeconds * 1000);
  const gcTimer = setInterval(() => void gc(), opts.durationSeconds * 1000);
  renewTimer.unref();
  gcTimer.unref();
  void renew();
  void gc();
  return {
    id,
    stop() {
      stopped = true;
      clearInterval(renewTimer);
      clearInterval(gcTimer);
    },
  };
}

/** Deletes the expired identity leases, re-reading each before deleting it. */
async function collectExpiredLeases(store: ResourceStore, scope: RequestScope, now: () => Date, log: (m: string) => void): Promise<void> {
  try {
    const selector = parseLabels(`${IDENTITY_LEASE_LABEL_KEY}=${IDENTITY_LEASE_LABEL_VALUE}`);
    if (selector instanceof Error) throw selector;
    const list = await store.list(scope, { labelSelector: selector });
    for (const item of list.items as KObject[]) {
      const name = item.metadata!.name!;
      if (!leaseExpired(item, now())) continue;
      try {
        const fresh = await store.get(scope, name);
        if (!leaseExpired(fresh, now())) continue;
        await store.delete(scope, name, { preconditions: { uid: fresh.metadata?.uid } });
      } catch (err) {
        if (!isStatusError(err, 'NotFound') && !isStatusError(err, 'Conflict')) log(`Error deleting lease ${name}: ${(err as Error).message}`);
      }
    }
  } catch (err) {
    log(`identity lease garbage collection failed: ${(err as Error).message}`);
  }
}
