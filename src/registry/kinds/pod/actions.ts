/**
 * The pod's create-only subresources, as Kubernetes 1.23 serves them (pkg/registry/core/pod/storage):
 *   - pods/binding (BindingREST): binds an unbound pod to a node (spec.nodeName), merges the binding's
 *     annotations and sets the PodScheduled condition; 409 Conflict when the pod is already bound or
 *     being deleted. Answers 201 with a Status Success.
 *   - pods/eviction (EvictionREST, policy/v1 and policy/v1beta1): without PodDisruptionBudgets (orch has
 *     none yet) it deletes the pod with the eviction's deleteOptions. Answers 201 with a Status Success.
 */
import { apiErrors, StatusError } from '../../errors.js';
import type { ActionSubresource, KObject, SubresourceContext } from '../../kind.js';
import type { DeleteOptions } from '../../store.js';
import { aggregateMessage, notSupported, required, root, type FieldError } from '../../../util/validation.js';

type Json = Record<string, any>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const s = (v: unknown): string => (typeof v === 'string' ? v : '');

const SUCCESS: KObject = { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success' };

const stamp = (d: Date) => d.toISOString().replace(/\.\d{3}Z$/, 'Z');

/** ValidatePodBinding */
function validateBinding(binding: KObject): FieldError[] {
  const target: Json = isObject(binding['target']) ? binding['target'] : {};
  const errs: FieldError[] = [];
  if (s(target['kind']) !== '' && target['kind'] !== 'Node') errs.push(notSupported(root('target', 'kind'), s(target['kind']), ['Node', '<empty>']));
  if (s(target['name']) === '') errs.push(required(root('target', 'name'), ''));
  return errs;
}

/** podutil.UpdatePodCondition for PodScheduled=True: the transition time moves only when the status does. */
function setScheduled(pod: KObject, now: string): void {
  const status: Json = isObject(pod.status) ? pod.status : (pod.status = {});
  const conditions: Json[] = Array.isArray(status['conditions']) ? status['conditions'] : (status['conditions'] = []);
  const i = conditions.findIndex((c) => isObject(c) && c['type'] === 'PodScheduled');
  if (i < 0) {
    conditions.push({ type: 'PodScheduled', status: 'True', lastProbeTime: null, lastTransitionTime: now });
    return;
  }
  const c = conditions[i]!;
  if (c['status'] !== 'True') c['lastTransitionTime'] = now;
  c['status'] = 'True';
  delete c['reason'];
  delete c['message'];
}

export const bindingAction: ActionSubresource = {
  bodyKinds: [{ group: '', version: 'v1', kind: 'Binding', definition: 'io.k8s.api.core.v1.Binding' }],
  async create(ctx: SubresourceContext, name: string, binding: KObject) {
    const meta = binding.metadata ?? {};
    if (s(meta.name) !== name) throw apiErrors.badRequest('name in URL does not match name in Binding object');
    const errs = validateBinding(binding);
    if (errs.length > 0) throw apiErrors.internal(aggregateMessage(errs));
    const node = s((binding['target'] as Json)['name']);
    const conflict = (msg: string) => apiErrors.conflict({ group: '', resource: 'pods/binding' }, name, msg);
    if (ctx.scope.dryRun) {
      await ctx.store.get(ctx.scope, name);
      return { status: 201, body: SUCCESS };
    }
    await ctx.store.update(
      ctx.scope,
      name,
      (pod) => {
        if (!pod) throw apiErrors.notFound(ctx.store.gr, name);
        const pm = pod.metadata ?? {};
        if (pm.deletionTimestamp) throw conflict(`pod ${name} is being deleted, cannot be assigned to a host`);
        const spec: Json = isObject(pod.spec) ? pod.spec : (pod.spec = {});
        if (s(spec['nodeName']) !== '') throw conflict(`pod ${name} is already assigned to node ${JSON.stringify(spec['nodeName'])}`);
        if (meta.uid && meta.uid !== pm.uid) {
          throw apiErrors.conflict(ctx.store.gr, name, `Precondition failed: UID in precondition: ${meta.uid}, UID in object meta: ${pm.uid ?? ''}`);
        }
        if (meta.resourceVersion && meta.resourceVersion !== pm.resourceVersion) {
          throw apiErrors.conflict(ctx.store.gr, name, 'the object has been modified; please apply your changes to the latest version and try again');
        }
        spec['nodeName'] = node;
        if (isObject(meta.annotations)) pod.metadata = { ...pm, annotations: { ...(pm.annotations ?? {}), ...meta.annotations } };
        setScheduled(pod, stamp(new Date()));
        return pod;
      },
      { unchecked: true },
    );
    return { status: 201, body: SUCCESS };
  },
};

/** The delete options an eviction carries, as DeleteOptions. */
function evictionDeleteOptions(eviction: KObject): { options: DeleteOptions; dryRun: boolean } {
  const raw: Json = isObject(eviction['deleteOptions']) ? eviction['deleteOptions'] : {};
  const options: DeleteOptions = {};
  if (typeof raw['gracePeriodSeconds'] === 'number') options.gracePeriodSeconds = raw['gracePeriodSeconds'];
  if (isObject(raw['preconditions'])) options.preconditions = raw['preconditions'];
  if (['Orphan', 'Background', 'Foreground'].includes(s(raw['propagationPolicy']))) {
    options.propagationPolicy = raw['propagationPolicy'] as DeleteOptions['propagationPolicy'];
  }
  const dryRun = Array.isArray(raw['dryRun']) && raw['dryRun'].includes('All');
  return { options, dryRun };
}

export const evictionAction: ActionSubresource = {
  bodyKinds: [
    { group: 'policy', version: 'v1', kind: 'Eviction', definition: 'io.k8s.api.policy.v1.Eviction' },
    { group: 'policy', version: 'v1beta1', kind: 'Eviction', definition: 'io.k8s.api.policy.v1beta1.Eviction' },
  ],
  async create(ctx: SubresourceContext, name: string, eviction: KObject) {
    if (s(eviction.metadata?.name) !== name) throw apiErrors.badRequest('name in URL does not match name in Eviction object');
    const { options, dryRun } = evictionDeleteOptions(eviction);
    // Without PodDisruptionBudgets every eviction is allowed: the pod is deleted as the eviction asks.
    try {
      await ctx.store.delete({ ...ctx.scope, dryRun: ctx.scope.dryRun || dryRun }, name, options);
    } catch (err) {
      if (err instanceof StatusError) throw err;
      throw apiErrors.internal((err as Error).message);
    }
    return { status: 201, body: SUCCESS };
  },
};
