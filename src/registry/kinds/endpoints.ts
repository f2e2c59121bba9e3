/**
 * Endpoints (core/v1, namespaced), as Kubernetes 1.23 serves it:
 *   - strategy: pkg/registry/core/endpoint/strategy.go (no status; create on update and unconditional
 *     updates allowed; canonicalized by RepackSubsets)
 *   - defaulting: SetDefaults_Endpoints (port protocol TCP)
 *   - validation: ValidateEndpointsCreate/Update (service/validation.ts)
 *   - table: printEndpoints: NAME ENDPOINTS AGE
 *   - field selectors: metadata.name and metadata.namespace only
 */
import type { KObject, KindDecl } from '../kind.js';
import { compareBytes, nameIsDNSSubdomain, type FieldError } from '../../util/validation.js';
import { ENDPOINTS_COLUMNS } from './service/table.js';
import { validateEndpoints } from './service/validation.js';

type Json = Record<string, any>;
const objects = (v: unknown): Json[] => (Array.isArray(v) ? (v as unknown[]).filter((x): x is Json => typeof x === 'object' && x !== null) : []);

/** SetDefaults_EndpointPort: TCP. */
export function setDefaultsEndpoints(obj: KObject): void {
  for (const ss of objects(obj.subsets)) for (const p of objects(ss.ports)) if (!p.protocol) p.protocol = 'TCP';
}

const portKey = (p: Json) => `${p.name ?? ''}\0${p.port ?? 0}\0${p.protocol ?? ''}\0${p.appProtocol ?? ''}`;
const addrKey = (a: Json) => `${a.ip ?? ''}\0${a.targetRef?.uid ?? ''}`;

/**
 * RepackSubsets: addresses that share the same set of ports are grouped into one subset (ready addresses
 * before not-ready ones win), addresses and ports sorted, subsets sorted by their first address.
 */
export function repackSubsets(subsets: unknown): Json[] | undefined {
  const list = objects(subsets);
  if (list.length === 0) return Array.isArray(subsets) ? [] : undefined;
  const groups = new Map<string, { ports: Json[]; ready: Map<string, Json>; notReady: Map<string, Json> }>();
  for (const ss of list) {
    const ports = objects(ss.ports).sort((a, b) => compareBytes(portKey(a), portKey(b)));
    const key = ports.map(portKey).join('\n');
    let g = groups.get(key);
    if (!g) groups.set(key, (g = { ports, ready: new Map(), notReady: new Map() }));
    for (const a of objects(ss.addresses)) {
      g.ready.set(addrKey(a), a);
      g.notReady.delete(addrKey(a));
    }
    for (const a of objects(ss.notReadyAddresses)) if (!g.ready.has(addrKey(a))) g.notReady.set(addrKey(a), a);
  }
  const sorted = (m: Map<string, Json>) => [...m.entries()].sort(([a], [b]) => compareBytes(a, b)).map(([, v]) => v);
  const out: Json[] = [];
  for (const g of groups.values()) {
    const ss: Json = {};
    if (g.ready.size > 0) ss.addresses = sorted(g.ready);
    if (g.notReady.size > 0) ss.notReadyAddresses = sorted(g.notReady);
    if (g.ports.length > 0) ss.ports = g.ports;
    out.push(ss);
  }
  const first = (ss: Json) => addrKey(objects(ss.addresses)[0] ?? objects(ss.notReadyAddresses)[0] ?? {});
  return out.sort((a, b) => compareBytes(first(a), first(b)));
}

export const endpointsKind: KindDecl = {
  group: '',
  version: 'v1',
  kind: 'Endpoints',
  listKind: 'EndpointsList',
  resource: 'endpoints',
  singular: 'endpoints',
  shortNames: ['ep'],
  namespaced: true,
  nameValidator: nameIsDNSSubdomain,
  definition: 'io.k8s.api.core.v1.Endpoints',
  listDefinition: 'io.k8s.api.core.v1.EndpointsList',
  definitions: {},
  tracksGeneration: false,
  columns: ENDPOINTS_COLUMNS,
  strategy: {
    allowCreateOnUpdate: true,
    allowUnconditionalUpdate: true,
    default(obj: KObject): void {
      setDefaultsEndpoints(obj);
    },
    validate(obj: KObject): FieldError[] {
      return validateEndpoints(obj);
    },
    validateUpdate(obj: KObject): FieldError[] {
      return validateEndpoints(obj);
    },
    canonicalize(obj: KObject): void {
      const packed = repackSubsets(obj.subsets);
      if (packed === undefined || packed.length === 0) delete obj.subsets;
      else obj.subsets = packed;
    },
  },
};
