/**
 * NamespaceLifecycle admission, as Kubernetes': objects cannot be created in a namespace that does not
 * exist or is being terminated, and the system namespaces cannot be deleted.
 */
import { apiErrors, isStatusError } from '../errors.js';
import type { KObject } from '../kind.js';
import type { Admission, AdmissionAttributes, ResourceStore } from '../store.js';

/** Namespaces that always exist and may not be deleted. */
export const IMMORTAL_NAMESPACES = ['default', 'kube-system', 'kube-public', 'kube-node-lease'];

/** What the plugin knows of one namespace, as of `revision`. */
interface NamespaceState {
  revision: number;
  /** Deleted: ask storage, it may have been created again since. */
  gone: boolean;
  terminating: boolean;
}

/**
 * The namespaces' phases, kept from a watch of the namespaces (as Kubernetes' plugin keeps an informer) and
 * from this server's own writes to them, which it hears before the writer's caller does: a namespace this
 * server just deleted or marked Terminating refuses content at once. Each entry keeps the revision it was
 * learned at, so that an older event never overwrites newer knowledge. A namespace it does not know (not
 * yet seen, or deleted) is looked up in storage, so one just created is found.
 */
class NamespaceCache {
  private readonly states = new Map<string, NamespaceState>();
  private watching = false;
  private observing: ResourceStore | undefined;

  /** The known state of `name`, starting the watch on first use. */
  lookup(store: ResourceStore, name: string): NamespaceState | undefined {
    if (this.observing !== store) {
      this.observing = store;
      this.states.clear();
      store.observeWrites((n, obj, revision) => this.learn(n, obj, revision));
    }
    if (!this.watching) this.watch(store);
    return this.states.get(name);
  }

  private learn(name: string, obj: KObject | null, revision: number): void {
    const known = this.states.get(name);
    if (known && known.revision > revision) return;
    this.states.set(name, { revision, gone: obj === null, terminating: obj?.status?.phase === 'Terminating' });
  }

  private watch(store: ResourceStore): void {
    this.watching = true;
    const watch = store.watch({ namespace: '' }, {});
    void (async () => {
      try {
        for await (const ev of watch) {
          if (ev.type === 'ADDED' || ev.type === 'MODIFIED' || ev.type === 'DELETED') {
            const name = ev.object.metadata?.name;
            const revision = Number(ev.object.metadata?.resourceVersion);
            if (name && Number.isInteger(revision)) this.learn(name, ev.type === 'DELETED' ? null : ev.object, revision);
          } else if (ev.type === 'ERROR') {
            break;
          }
        }
      } catch {
        // The watch failed: forget what it taught (storage answers meanwhile) and start again on next use.
      } finally {
        watch.close();
        this.states.clear();
        this.watching = false;
      }
    })();
  }
}

export function namespaceLifecycle(namespaces: () => ResourceStore | undefined): Admission {
  const cache = new NamespaceCache();
  return {
    async validate(a: AdmissionAttributes): Promise<void> {
      if (a.decl.group === '' && a.decl.resource === 'namespaces') {
        if (a.operation === 'DELETE' && IMMORTAL_NAMESPACES.includes(a.name)) {
          throw apiErrors.forbidden({ group: '', resource: 'namespaces' }, a.name, 'this namespace may not be deleted');
        }
        return;
      }
      if (!a.decl.namespaced || a.operation !== 'CREATE' || a.namespace === '') return;
      const store = namespaces();
      if (!store) return;
      const known = cache.lookup(store, a.namespace);
      let terminating: boolean;
      if (known && !known.gone) {
        terminating = known.terminating;
      } else {
        let ns;
        try {
          ns = await store.get({ namespace: '' }, a.namespace);
        } catch (err) {
          if (isStatusError(err, 'NotFound')) throw apiErrors.notFound({ group: '', resource: 'namespaces' }, a.namespace);
          throw err;
        }
        terminating = ns.status?.phase === 'Terminating';
      }
      if (terminating) {
        const e = apiErrors.forbidden(
          { group: a.decl.group, resource: a.decl.resource },
          a.name,
          `unable to create new content in namespace ${a.namespace} because it is being terminated`,
        );
        e.status.details = {
          ...e.status.details,
          causes: [
            {
              reason: 'NamespaceTerminating',
              message: `namespace ${a.namespace} is being terminated`,
              field: 'metadata.namespace',
            },
          ],
        };
        throw e;
      }
    },
  };
}

/** The chain lives in chain.ts (reinvocation and metrics); re-exported for the callers that import it from here. */
export { chainAdmission } from './chain.js';
