/**
 * Service (core/v1, namespaced), as Kubernetes 1.23 serves it:
 *   - strategy: pkg/registry/core/service/strategy.go (status cleared on create and kept on update; type
 *     changes drop what the old type allocated; create on update and unconditional updates allowed)
 *   - storage hooks: pkg/registry/core/service/storage (BeginCreate/BeginUpdate allocate cluster IPs and
 *     node ports from the server's ServiceNetwork, AfterDelete releases them and deletes the Endpoints of
 *     the same name); see alloc.ts
 *   - defaulting, validation and tables: defaults.ts, validation.ts, table.ts
 *   - field selectors: metadata.name and metadata.namespace only
 */
import { isStatusError } from '../../errors.js';
import type { KObject, KindDecl, StrategyContext, SubresourceStrategy, WriteTransaction } from '../../kind.js';
import { nameIsDNS1035Label, type FieldError } from '../../../util/validation.js';
import { allocateCreate, allocateUpdate, releaseAllocated } from './alloc.js';
import { dropTypeDependentFields, normalizeClusterIPs, patchAllocatedValues, setDefaultsService } from './defaults.js';
import { SERVICE_DEFINITIONS } from './definitions.js';
import { SERVICE_COLUMNS } from './table.js';
import { validateService, validateServiceStatusUpdate, validateServiceUpdate } from './validation.js';
import type { ServiceNetwork } from '../../allocators/service-network.js';
import { apiErrors } from '../../errors.js';
import { serviceProxyConnector } from '../proxy.js';

export { SERVICE_DEFINITIONS } from './definitions.js';

const CORE = 'io.k8s.api.core.v1.';
const SYSTEM = { name: 'system:apiserver', groups: ['system:masters'] };

function network(ctx: StrategyContext): ServiceNetwork {
  const net = ctx.settings?.serviceNetwork;
  if (!net) throw apiErrors.internal('the service network (--service-cluster-ip-range) is not configured');
  return net;
}

const statusStrategy: SubresourceStrategy = {
  prepareForUpdate(obj: KObject, old: KObject): void {
    obj.spec = structuredClone(old.spec);
  },
  validateUpdate(obj: KObject): FieldError[] {
    return validateServiceStatusUpdate(obj);
  },
};

export const serviceKind: KindDecl = {
  group: '',
  version: 'v1',
  kind: 'Service',
  listKind: 'ServiceList',
  resource: 'services',
  singular: 'service',
  shortNames: ['svc'],
  categories: ['all'],
  namespaced: true,
  nameValidator: nameIsDNS1035Label,
  definition: `${CORE}Service`,
  listDefinition: `${CORE}ServiceList`,
  definitions: SERVICE_DEFINITIONS,
  tracksGeneration: false,
  columns: SERVICE_COLUMNS,
  subresources: { status: statusStrategy },
  connectors: { proxy: serviceProxyConnector },
  strategy: {
    allowCreateOnUpdate: true,
    allowUnconditionalUpdate: true,
    prepareForCreate(obj: KObject): void {
      obj.status = {};
    },
    prepareForUpdate(obj: KObject, old: KObject): void {
      obj.status = structuredClone(old.status ?? {});
      dropTypeDependentFields(obj, old);
    },
    default(obj: KObject): void {
      setDefaultsService(obj);
    },
    validate(obj: KObject): FieldError[] {
      return validateService(obj);
    },
    validateUpdate(obj: KObject, old: KObject): FieldError[] {
      return validateServiceUpdate(obj, old);
    },
    canonicalize(obj: KObject): void {
      // Go's omitempty: an empty status.loadBalancer stays as {} (a struct), empty lists go.
      if (obj.status && typeof obj.status === 'object' && obj.status.loadBalancer === undefined) obj.status.loadBalancer = {};
    },
  },
  beginCreate(obj: KObject, ctx: StrategyContext): Promise<WriteTransaction> {
    normalizeClusterIPs(null, obj);
    return allocateCreate(network(ctx), obj, !!ctx.dryRun);
  },
  beginUpdate(obj: KObject, old: KObject, ctx: StrategyContext): Promise<WriteTransaction> {
    patchAllocatedValues(obj, old);
    normalizeClusterIPs(old, obj);
    return allocateUpdate(network(ctx), obj, old, !!ctx.dryRun);
  },
  async afterDelete(obj: KObject, ctx: StrategyContext): Promise<void> {
    const endpoints = ctx.settings?.lookup?.('', 'endpoints');
    const namespace = obj.metadata?.namespace ?? '';
    try {
      await endpoints?.delete({ namespace, user: SYSTEM }, obj.metadata?.name ?? '');
    } catch (err) {
      if (!isStatusError(err, 'NotFound')) ctx.settings?.serviceNetwork?.log?.(`deleting the endpoints of service ${namespace}/${obj.metadata?.name}: ${(err as Error).message}`);
    }
    const net = ctx.settings?.serviceNetwork;
    if (net) await releaseAllocated(net, obj);
  },
};
