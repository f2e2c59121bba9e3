/**
 * IngressClass and Ingress (networking.k8s.io/v1), as Kubernetes 1.23 serves them
 * (pkg/registry/networking/ingressclass, ingress; validation from pkg/apis/networking/validation):
 *   - IngressClass: cluster-scoped; spec.controller required, a domain-prefixed path of at most 250
 *     characters, immutable; spec.parameters with kind and name, scope Cluster (the default) or Namespace
 *     (then with a namespace); table NAME CONTROLLER PARAMETERS AGE.
 *   - Ingress: namespaced, short name ing, status subresource; a default backend or rules; hosts DNS names
 *     (wildcards allowed, IPs not); HTTP paths with a pathType (Exact and Prefix paths absolute); backends a
 *     service (name, and port name or number) or a resource; ingressClassName a DNS subdomain and not
 *     together with the kubernetes.io/ingress.class annotation; table NAME CLASS HOSTS ADDRESS PORTS AGE.
 * The DefaultIngressClass admission plugin (registry/admission/default-ingress-class.ts) names the default
 * class in new Ingresses.
 */
import { isIP } from 'node:net';
import type { KObject, KindDecl, SubresourceStrategy, TableColumn } from '../../kind.js';
import { AGE_COLUMN, isObject } from '../configmap.js';
import {
  FIELD_IMMUTABLE_ERROR_MSG,
  invalid,
  isDNS1035Label,
  isDNS1123Subdomain,
  nameIsDNSSubdomain,
  notSupported,
  required,
  root,
  tooLong,
  type FieldError,
  type FieldPath,
} from '../../../util/validation.js';
import { isValidPortName } from '../pod/validation.js';
import { INGRESS_CLASS_DEFINITIONS } from './definitions.js';

export const NETWORKING_GROUP = 'networking.k8s.io';
export const DEFAULT_INGRESS_CLASS_ANNOTATION = 'ingressclass.kubernetes.io/is-default-class';
export const INGRESS_CLASS_ANNOTATION = 'kubernetes.io/ingress.class';
const CLASS_DEF = 'io.k8s.api.networking.v1.IngressClass';
const INGRESS_DEF = 'io.k8s.api.networking.v1.Ingress';
const MAX_CONTROLLER_LENGTH = 250;
const PATH_TYPES = ['Exact', 'ImplementationSpecific', 'Prefix'];
const SCOPES = ['Cluster', 'Namespace'];

type Json = Record<string, any>;
const obj = (v: unknown): Json => (isObject(v) ? v : {});
const list = (v: unknown): Json[] => (Array.isArray(v) ? v.filter(isObject) : []);
const str = (v: unknown): string => (typeof v === 'string' ? v : '');

const DOMAIN_PREFIXED_PATH = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/\S*$/;

// --- IngressClass -------------------------------------------------------------------------------------------

function validateParameters(p: Json, path: FieldPath): FieldError[] {
  const errs: FieldError[] = [];
  if (p['apiGroup'] !== undefined && p['apiGroup'] !== null) {
    for (const m of isDNS1123Subdomain(str(p['apiGroup']))) errs.push(invalid(path.child('apiGroup'), p['apiGroup'], m));
  }
  if (str(p['kind']) === '') errs.push(required(path.child('kind'), ''));
  else if (/[/%]/.test(str(p['kind']))) errs.push(invalid(path.child('kind'), p['kind'], "may not contain '/' or '%'"));
  if (str(p['name']) === '') errs.push(required(path.child('name'), ''));
  else if (/[/%]/.test(str(p['name']))) errs.push(invalid(path.child('name'), p['name'], "may not contain '/' or '%'"));
  const scope = str(p['scope']);
  if (p['scope'] === undefined || p['scope'] === null) errs.push(required(path.child('scope'), ''));
  else if (!SCOPES.includes(scope)) errs.push(notSupported(path.child('scope'), scope, SCOPES));
  const ns = p['namespace'];
  if (scope === 'Namespace' && (ns === undefined || ns === null)) errs.push(required(path.child('namespace'), '`parameters.scope` is set to "Namespace"'));
  if (scope === 'Cluster' && ns !== undefined && ns !== null) errs.push(invalid(path.child('namespace'), ns, '`parameters.scope` is set to "Cluster"'));
  return errs;
}

function validateIngressClass(o: KObject): FieldError[] {
  const errs: FieldError[] = [];
  const spec = obj(o['spec']);
  const controller = str(spec['controller']);
  const cpath = root('spec', 'controller');
  if (controller === '') errs.push(required(cpath, ''));
  else if (controller.length > MAX_CONTROLLER_LENGTH) errs.push(tooLong(cpath, controller, MAX_CONTROLLER_LENGTH));
  else if (!DOMAIN_PREFIXED_PATH.test(controller)) errs.push(invalid(cpath, controller, 'must be a domain-prefixed path (such as "acme.io/foo")'));
  if (isObject(spec['parameters'])) errs.push(...validateParameters(spec['parameters'], root('spec', 'parameters')));
  return errs;
}

const classColumns: TableColumn[] = [
  {
    name: 'Controller',
    type: 'string',
    // Read on first use: the schemas load then (lazy definitions, idle memory).
    get description() {
      return INGRESS_CLASS_DEFINITIONS['io.k8s.api.networking.v1.IngressClassSpec']!.properties!['controller']!.description!;
    },
    priority: 0,
    cell: (o) => str(obj(o['spec'])['controller']),
  },
  {
    name: 'Parameters',
    type: 'string',
    // Read on first use: the schemas load then (lazy definitions, idle memory).
    get description() {
      return INGRESS_CLASS_DEFINITIONS['io.k8s.api.networking.v1.IngressClassSpec']!.properties!['parameters']!.description!;
    },
    priority: 0,
    cell: (o) => {
      const p = obj(o['spec'])['parameters'];
      if (!isObject(p)) return '<none>';
      return `${str(p['kind'])}${typeof p['apiGroup'] === 'string' ? `.${p['apiGroup']}` : ''}/${str(p['name'])}`;
    },
  },
  AGE_COLUMN,
];

export const ingressClassKind: KindDecl = {
  group: NETWORKING_GROUP,
  version: 'v1',
  kind: 'IngressClass',
  listKind: 'IngressClassList',
  resource: 'ingressclasses',
  singular: 'ingressclass',
  namespaced: false,
  nameValidator: nameIsDNSSubdomain,
  definition: CLASS_DEF,
  listDefinition: 'io.k8s.api.networking.v1.IngressClassList',
  definitions: INGRESS_CLASS_DEFINITIONS,
  tracksGeneration: true,
  columns: classColumns,
  strategy: {
    default(o) {
      const p = obj(o['spec'])['parameters'];
      if (isObject(p) && (p['scope'] === undefined || p['scope'] === null)) p['scope'] = 'Cluster';
    },
    validate: (o) => validateIngressClass(o),
    validateUpdate: (o, old) => {
      const errs = validateIngressClass(o);
      const c = obj(o['spec'])['controller'];
      if (c !== obj(old['spec'])['controller']) errs.push(invalid(root('spec', 'controller'), c ?? '', FIELD_IMMUTABLE_ERROR_MSG));
      return errs;
    },
  },
};

// --- Ingress ------------------------------------------------------------------------------------------------

const WILDCARD_RE = /^\*\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const WILDCARD_MSG =
  "a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS subdomain, which must consist of lower case alphanumeric characters, '-' or '.' and end with an alphanumeric character (e.g. '*.example.com', regex used for validation is '\\*\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

function validateHost(host: string, path: FieldPath): FieldError[] {
  if (isIP(host) !== 0) return [invalid(path, host, 'must be a DNS name, not an IP address')];
  if (host.includes('*')) return WILDCARD_RE.test(host) && host.length <= 253 ? [] : [invalid(path, host, WILDCARD_MSG)];
  return isDNS1123Subdomain(host).map((m) => invalid(path, host, m));
}

function validateBackend(b: Json, path: FieldPath): FieldError[] {
  const service = b['service'];
  const resource = b['resource'];
  if (isObject(service) && isObject(resource)) return [invalid(path, '', 'cannot set both resource and service backends')];
  if (isObject(resource)) {
    const errs: FieldError[] = [];
    if (str(resource['kind']) === '') errs.push(required(path.child('resource', 'kind'), ''));
    if (str(resource['name']) === '') errs.push(required(path.child('resource', 'name'), ''));
    return errs;
  }
  if (!isObject(service)) return [invalid(path, '', 'resource or service backend is required')];
  const errs: FieldError[] = [];
  const name = str(service['name']);
  if (name === '') errs.push(required(path.child('service', 'name'), ''));
  else for (const m of isDNS1035Label(name)) errs.push(invalid(path.child('service', 'name'), name, m));
  const port = obj(service['port']);
  const ppath = path.child('service', 'port');
  const hasName = str(port['name']) !== '';
  const hasNumber = typeof port['number'] === 'number' && port['number'] !== 0;
  if (hasName && hasNumber) errs.push(invalid(ppath, '', 'cannot set both port name & port number'));
  else if (hasName) for (const m of isValidPortName(str(port['name']))) errs.push(invalid(ppath.child('name'), port['name'], m));
  else if (hasNumber) {
    const n = port['number'] as number;
    if (n < 1 || n > 65535) errs.push(invalid(ppath.child('number'), n, 'must be between 1 and 65535, inclusive'));
  } else errs.push(required(ppath, 'port name or number is required'));
  return errs;
}

const INVALID_PATH_SEQUENCES = ['//', '/./', '/../', '%2f', '%2F'];
const INVALID_PATH_SUFFIXES = ['/..', '/.'];

function validatePath(p: Json, path: FieldPath): FieldError[] {
  const errs: FieldError[] = [];
  const value = str(p['path']);
  const type = p['pathType'];
  if (type === undefined || type === null) errs.push(required(path.child('pathType'), 'pathType must be specified'));
  else if (!PATH_TYPES.includes(str(type))) errs.push(notSupported(path.child('pathType'), type, PATH_TYPES));
  else if (type === 'Exact' || type === 'Prefix') {
    if (!value.startsWith('/')) errs.push(invalid(path.child('path'), value, 'must be an absolute path'));
    for (const s of INVALID_PATH_SEQUENCES) if (value.includes(s)) errs.push(invalid(path.child('path'), value, `must not contain '${s}'`));
    for (const s of INVALID_PATH_SUFFIXES) if (value.endsWith(s)) errs.push(invalid(path.child('path'), value, `cannot end with '${s}'`));
  } else if (value !== '' && !value.startsWith('/')) {
    errs.push(invalid(path.child('path'), value, 'must be an absolute path'));
  }
  errs.push(...validateBackend(obj(p['backend']), path.child('backend')));
  return errs;
}

function validateIngress(o: KObject): FieldError[] {
  const errs: FieldError[] = [];
  const spec = obj(o['spec']);
  const sp = root('spec');
  const rules = list(spec['rules']);
  if (rules.length === 0 && !isObject(spec['defaultBackend'])) errs.push(invalid(sp.child('rules'), rules, 'either `defaultBackend` or `rules` must be specified'));
  if (isObject(spec['defaultBackend'])) errs.push(...validateBackend(spec['defaultBackend'], sp.child('defaultBackend')));
  rules.forEach((r, i) => {
    const rp = sp.child('rules').index(i);
    if (str(r['host']) !== '') errs.push(...validateHost(str(r['host']), rp.child('host')));
    if (isObject(r['http'])) {
      const paths = list(r['http']['paths']);
      if (paths.length === 0) errs.push(required(rp.child('http', 'paths'), ''));
      paths.forEach((p, j) => errs.push(...validatePath(p, rp.child('http', 'paths').index(j))));
    }
  });
  list(spec['tls']).forEach((t, i) => {
    const tp = sp.child('tls').index(i);
    (Array.isArray(t['hosts']) ? (t['hosts'] as unknown[]) : []).forEach((h, j) => errs.push(...validateHost(str(h), tp.child('hosts').index(j))));
    if (str(t['secretName']) !== '') for (const m of isDNS1123Subdomain(str(t['secretName']))) errs.push(invalid(tp.child('secretName'), t['secretName'], m));
  });
  const className = spec['ingressClassName'];
  if (className !== undefined && className !== null) {
    for (const m of isDNS1123Subdomain(str(className))) errs.push(invalid(sp.child('ingressClassName'), className, m));
    if (INGRESS_CLASS_ANNOTATION in obj(o.metadata?.annotations)) {
      errs.push(invalid(root('annotations').child(INGRESS_CLASS_ANNOTATION), obj(o.metadata?.annotations)[INGRESS_CLASS_ANNOTATION], 'can not be set when the class field is also set'));
    }
  }
  return errs;
}

function hosts(o: KObject): string {
  const rules = list(obj(o['spec'])['rules']);
  if (rules.length === 0) return '*';
  const names = rules.map((r) => (str(r['host']) === '' ? '*' : str(r['host'])));
  return names.length > 3 ? `${names.slice(0, 3).join(',')} + ${names.length - 3} more...` : names.join(',');
}

function addresses(o: KObject): string {
  const ingress = list(obj(obj(o['status'])['loadBalancer'])['ingress']);
  return ingress.map((i) => str(i['ip']) || str(i['hostname'])).filter((s) => s !== '').join(',');
}

const ingressColumns: TableColumn[] = [
  { name: 'Class', type: 'string', description: 'The name of the IngressClass resource that should be used', priority: 0, cell: (o) => str(obj(o['spec'])['ingressClassName']) || '<none>' },
  { name: 'Hosts', type: 'string', description: 'Hosts that incoming requests are matched against before the ingress rule', priority: 0, cell: hosts },
  { name: 'Address', type: 'string', description: 'Address is a list containing ingress points for the load-balancer', priority: 0, cell: addresses },
  { name: 'Ports', type: 'string', description: 'Ports of TLS configurations that open', priority: 0, cell: (o) => (list(obj(o['spec'])['tls']).length > 0 ? '80, 443' : '80') },
  AGE_COLUMN,
];

const ingressStatus: SubresourceStrategy = {
  prepareForUpdate(o, old) {
    o['spec'] = structuredClone(old['spec']);
  },
  validateUpdate(o) {
    const errs: FieldError[] = [];
    list(obj(obj(o['status'])['loadBalancer'])['ingress']).forEach((i, n) => {
      const p = root('status', 'loadBalancer', 'ingress').index(n);
      if (str(i['ip']) !== '' && isIP(str(i['ip'])) === 0) errs.push(invalid(p.child('ip'), i['ip'], 'must be a valid IP address'));
      if (str(i['hostname']) !== '') for (const m of isDNS1123Subdomain(str(i['hostname']))) errs.push(invalid(p.child('hostname'), i['hostname'], m));
    });
    return errs;
  },
};

export const ingressKind: KindDecl = {
  group: NETWORKING_GROUP,
  version: 'v1',
  kind: 'Ingress',
  listKind: 'IngressList',
  resource: 'ingresses',
  singular: 'ingress',
  shortNames: ['ing'],
  namespaced: true,
  nameValidator: nameIsDNSSubdomain,
  definition: INGRESS_DEF,
  listDefinition: 'io.k8s.api.networking.v1.IngressList',
  definitions: INGRESS_CLASS_DEFINITIONS,
  tracksGeneration: true,
  columns: ingressColumns,
  subresources: { status: ingressStatus },
  strategy: {
    prepareForCreate(o) {
      delete o['status'];
    },
    prepareForUpdate(o, old) {
      o['status'] = structuredClone(old['status']);
    },
    validate: (o) => validateIngress(o),
    validateUpdate: (o) => validateIngress(o),
  },
};
