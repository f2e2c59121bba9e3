/**
 * APIService (apiregistration.k8s.io/v1), as kube-aggregator 1.23 serves it (pkg/registry/apiservice):
 *   - cluster-scoped; the name is `<version>.<group>`; status is written only through apiservices/status;
 *   - defaults: spec.service.port 443;
 *   - validation (ValidateAPIService): the name, group (a DNS subdomain) and version (a DNS label),
 *     groupPriorityMinimum in 1..20000, versionPriority in 1..1000, a service with namespace and name and a
 *     valid port, no caBundle or insecureSkipTLSVerify on a local APIService (no service), and not both;
 *   - table: NAME SERVICE AVAILABLE AGE, SERVICE 'Local' or namespace/name, AVAILABLE the Available
 *     condition's status, with its reason when not True.
 * The aggregation layer (src/server/aggregator) reads these objects: it registers the local ones, proxies the
 * others' group versions, and keeps their Available condition.
 */
import type { KObject, KindDecl, TableColumn } from '../../kind.js';
import { AGE_COLUMN, isObject } from '../configmap.js';
import { forbidden, invalid, isDNS1123Label, isDNS1123Subdomain, required, root, type FieldError } from '../../../util/validation.js';
import { APIREGISTRATION_DEFINITIONS } from './definitions.js';

export const APIREGISTRATION_GROUP = 'apiregistration.k8s.io';
const P = 'io.k8s.kube-aggregator.pkg.apis.apiregistration.v1.';

export interface APIServiceCondition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  lastTransitionTime?: string;
  reason?: string;
  message?: string;
}

/** The Available condition of an APIService, or undefined. */
export function availableCondition(obj: KObject): APIServiceCondition | undefined {
  const conditions: unknown = obj['status']?.conditions;
  return Array.isArray(conditions) ? (conditions as APIServiceCondition[]).find((c) => c?.type === 'Available') : undefined;
}

function validateAPIService(obj: KObject): FieldError[] {
  const errs: FieldError[] = [];
  const spec: Record<string, any> = isObject(obj['spec']) ? obj['spec'] : {};
  const group = typeof spec['group'] === 'string' ? spec['group'] : '';
  const version = typeof spec['version'] === 'string' ? spec['version'] : '';
  const name = obj.metadata?.name ?? '';
  if (name !== `${version}.${group}`) errs.push(invalid(root('metadata', 'name'), name, 'must be `spec.version+"."+spec.group`'));
  if (group !== '') for (const m of isDNS1123Subdomain(group)) errs.push(invalid(root('spec', 'group'), group, m));
  if (version === '') errs.push(required(root('spec', 'version')));
  else for (const m of isDNS1123Label(version)) errs.push(invalid(root('spec', 'version'), version, m));
  const gpm = spec['groupPriorityMinimum'];
  if (typeof gpm !== 'number' || gpm <= 0 || gpm > 20000) errs.push(invalid(root('spec', 'groupPriorityMinimum'), gpm ?? 0, 'must be positive and less than 20000'));
  const vp = spec['versionPriority'];
  if (typeof vp !== 'number' || vp <= 0 || vp > 1000) errs.push(invalid(root('spec', 'versionPriority'), vp ?? 0, 'must be positive and less than 1000'));
  const svc: unknown = spec['service'];
  const caBundle = typeof spec['caBundle'] === 'string' ? spec['caBundle'] : '';
  if (!isObject(svc)) {
    if (caBundle !== '') errs.push(invalid(root('spec', 'caBundle'), `${caBundle.length} bytes`, 'local APIServices may not have a caBundle'));
    if (spec['insecureSkipTLSVerify'] === true) errs.push(invalid(root('spec', 'insecureSkipTLSVerify'), true, 'local APIServices may not have insecureSkipTLSVerify'));
  } else {
    if (!svc['namespace']) errs.push(required(root('spec', 'service', 'namespace')));
    if (!svc['name']) errs.push(required(root('spec', 'service', 'name')));
    const port = svc['port'];
    if (port !== undefined && (typeof port !== 'number' || !Number.isInteger(port) || port < 1 || port > 65535)) {
      errs.push(invalid(root('spec', 'service', 'port'), port, 'must be between 1 and 65535, inclusive'));
    }
  }
  if (spec['insecureSkipTLSVerify'] === true && caBundle !== '') {
    errs.push(forbidden(root('spec', 'insecureSkipTLSVerify'), 'may not be true if caBundle is present'));
  }
  return errs;
}

/** The name is checked as a path segment (IsValidPathSegmentName); that it is version.group, by validation. */
function pathSegmentName(name: string, prefix: boolean): string[] {
  if (!prefix && (name === '.' || name === '..')) return [`may not be '${name}'`];
  for (const bad of ['/', '%']) if (name.includes(bad)) return [`may not contain '${bad}'`];
  return [];
}

const columns: TableColumn[] = [
  {
    name: 'Service',
    type: 'string',
    description: 'The reference to the service that hosts this API endpoint.',
    priority: 0,
    cell: (obj) => {
      const svc: unknown = obj['spec']?.service;
      return isObject(svc) ? `${String(svc['namespace'] ?? '')}/${String(svc['name'] ?? '')}` : 'Local';
    },
  },
  {
    name: 'Available',
    type: 'string',
    description: 'Whether this service is available.',
    priority: 0,
    cell: (obj) => {
      const c = availableCondition(obj);
      if (!c) return 'Unknown';
      return c.status === 'True' ? 'True' : `${c.status} (${c.reason ?? ''})`;
    },
  },
  AGE_COLUMN,
];

export const apiServiceKind: KindDecl = {
  group: APIREGISTRATION_GROUP,
  version: 'v1',
  kind: 'APIService',
  listKind: 'APIServiceList',
  resource: 'apiservices',
  singular: 'apiservice',
  categories: ['api-extensions'],
  namespaced: false,
  nameValidator: pathSegmentName,
  definition: `${P}APIService`,
  listDefinition: `${P}APIServiceList`,
  definitions: APIREGISTRATION_DEFINITIONS,
  tracksGeneration: false,
  columns,
  subresources: {
    status: {
      prepareForUpdate(obj, old) {
        obj['spec'] = structuredClone(old['spec']);
      },
      validateUpdate: (obj) => validateAPIService(obj),
    },
  },
  strategy: {
    prepareForCreate(obj) {
      obj['status'] = {};
    },
    prepareForUpdate(obj, old) {
      obj['status'] = structuredClone(old['status'] ?? {});
    },
    default(obj) {
      const svc: unknown = obj['spec']?.service;
      if (isObject(svc) && svc['port'] === undefined) svc['port'] = 443;
    },
    validate: (obj) => validateAPIService(obj),
    validateUpdate: (obj) => validateAPIService(obj),
  },
};
