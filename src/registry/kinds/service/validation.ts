/**
 * Service and Endpoints validation as Kubernetes 1.23 words it (pkg/apis/core/validation/validation.go):
 * ValidateService, ValidateServiceUpdate (cluster IPs and IP families may not change once set, except to
 * add or release the secondary one), ValidateServiceStatusUpdate, ValidateServiceClusterIPsRelatedFields
 * (also run by the allocator before it allocates), ValidateEndpoints and ValidateNonSpecialIP. Object
 * metadata is validated by the generic store.
 */
import { isIP } from 'node:net';
import type { KObject } from '../../kind.js';
import { isValidPortName } from '../pod/validation.js';
import {
  duplicate,
  forbidden,
  GoLiteral,
  invalid,
  isDNS1123Label,
  isDNS1123Subdomain,
  isQualifiedName,
  notSupported,
  required,
  root,
  validateLabels,
  type FieldError,
  type FieldPath,
} from '../../../util/validation.js';
import { familyOf, parseIP } from '../../allocators/ip.js';

type Json = Record<string, any>;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const objects = (v: unknown): Json[] => (Array.isArray(v) ? v.map((x) => (isObject(x) ? x : {})) : []);
const strings = (v: unknown): string[] => (Array.isArray(v) ? v.map((x) => (typeof x === 'string' ? x : String(x))) : []);

export const CLUSTER_IP_NONE = 'None';
export const SERVICE_TYPES = ['ClusterIP', 'ExternalName', 'LoadBalancer', 'NodePort'] as const;
const PROTOCOLS = ['SCTP', 'TCP', 'UDP'];
const IP_FAMILIES = ['IPv4', 'IPv6'];
const IP_FAMILY_POLICIES = ['PreferDualStack', 'RequireDualStack', 'SingleStack'];
const MAX_CLIENT_IP_AFFINITY_SECONDS = 86400;
/** ports.KubeletPort: a LoadBalancer may not expose it. */
const KUBELET_PORT = 10250;
const INVALID_IP_MSG = 'must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)';

/** A Go *int32 or *string value in an error (fmt prints the pointer's address; we print the value). */
const ptr = (v: unknown) => v;

export function isHeadless(svc: KObject): boolean {
  const ips = strings(svc.spec?.clusterIPs);
  return ips.length === 1 && ips[0] === CLUSTER_IP_NONE;
}

/** apiservice.NeedsHealthCheck: a LoadBalancer with externalTrafficPolicy Local. */
export function needsHealthCheck(svc: KObject): boolean {
  return svc.spec?.type === 'LoadBalancer' && svc.spec?.externalTrafficPolicy === 'Local';
}

function isValidPortNum(port: unknown): string[] {
  return typeof port === 'number' && Number.isInteger(port) && port >= 1 && port <= 65535 ? [] : ['must be between 1 and 65535, inclusive'];
}

/** ValidatePortNumOrName of an IntOrString. */
function validatePortNumOrName(port: unknown, path: FieldPath): FieldError[] {
  if (typeof port === 'number') return isValidPortNum(port).map((m) => invalid(path, port, m));
  if (typeof port === 'string') {
    if (port === '') return [required(path, '')];
    return isValidPortName(port).map((m) => invalid(path, port, m));
  }
  return [invalid(path, port, 'must contain an int or string')];
}

function validateDNS1123Label(value: string, path: FieldPath): FieldError[] {
  return isDNS1123Label(value).map((m) => invalid(path, value, m));
}

/**
 * ValidateNonSpecialIP: Endpoints and external IPs may not be unspecified, loopback, link-local or
 * link-local multicast addresses.
 */
export function validateNonSpecialIP(ip: string, path: FieldPath): FieldError[] {
  const p = parseIP(ip);
  if (!p) return [invalid(path, ip, 'must be a valid IP address')];
  const errs: FieldError[] = [];
  const v = p.value;
  const v4 = p.family === 'IPv4';
  if (v === 0n) errs.push(invalid(path, ip, `may not be unspecified (${ip})`));
  if (v4 ? v >> 24n === 127n : v === 1n) errs.push(invalid(path, ip, 'may not be in the loopback range (127.0.0.0/8, ::1/128)'));
  if (v4 ? v >> 16n === 0xa9fen : v >> 118n === 0x3fan) errs.push(invalid(path, ip, 'may not be in the link-local range (169.254.0.0/16, fe80::/10)'));
  if (v4 ? v >> 8n === 0xe00000n : v >> 112n === 0xff02n) {
    errs.push(invalid(path, ip, 'may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)'));
  }
  return errs;
}

function validateServicePort(sp: Json, requireName: boolean, names: Set<string>, path: FieldPath): FieldError[] {
  const errs: FieldError[] = [];
  const name = typeof sp.name === 'string' ? sp.name : '';
  if (requireName && name === '') errs.push(required(path.child('name'), ''));
  else if (name !== '') {
    errs.push(...validateDNS1123Label(name, path.child('name')));
    if (names.has(name)) errs.push(duplicate(path.child('name'), name));
    else names.add(name);
  }
  for (const m of isValidPortNum(sp.port ?? 0)) errs.push(invalid(path.child('port'), sp.port ?? 0, m));
  if (!sp.protocol) errs.push(required(path.child('protocol'), ''));
  else if (!PROTOCOLS.includes(sp.protocol)) errs.push(notSupported(path.child('protocol'), sp.protocol, PROTOCOLS));
  errs.push(...validatePortNumOrName(sp.targetPort ?? 0, path.child('targetPort')));
  if (typeof sp.appProtocol === 'string') {
    for (const m of isQualifiedName(sp.appProtocol)) errs.push(invalid(path.child('appProtocol'), sp.appProtocol, m));
  }
  return errs;
}

function validateClientIPAffinityConfig(config: unknown, path: FieldPath): FieldError[] {
  const when = 'when session affinity type is ClientIP';
  if (!isObject(config)) return [required(path, when)];
  if (!isObject(config.clientIP)) return [required(path.child('clientIP'), when)];
  const t: unknown = config.clientIP.timeoutSeconds;
  const tPath = path.child('clientIP', 'timeoutSeconds');
  if (t === undefined || t === null) return [required(tPath, when)];
  if (typeof t !== 'number' || t <= 0 || t > MAX_CLIENT_IP_AFFINITY_SECONDS) {
    return [invalid(tPath, ptr(t), `must be greater than 0 and less than ${MAX_CLIENT_IP_AFFINITY_SECONDS}`)];
  }
  return [];
}

/** ValidateServiceClusterIPsRelatedFields: clusterIP/clusterIPs in sync, valid addresses, families, policy. */
export function validateServiceClusterIPsRelatedFields(svc: KObject): FieldError[] {
  const spec: Json = isObject(svc.spec) ? svc.spec : {};
  const errs: FieldError[] = [];
  const ipsPath = root('spec', 'clusterIPs');
  const famPath = root('spec', 'ipFamilies');
  const clusterIP = typeof spec.clusterIP === 'string' ? spec.clusterIP : '';
  const ips = strings(spec.clusterIPs);
  const families = strings(spec.ipFamilies);
  if (clusterIP !== '') {
    if (ips.length === 0) errs.push(required(ipsPath, ''));
    else if (ips[0] !== clusterIP) errs.push(invalid(ipsPath, ips, 'first value must match `clusterIP`'));
  } else if (ips.length !== 0) {
    errs.push(invalid(ipsPath, ips, 'must be empty when `clusterIP` is not specified'));
  }
  const seen = new Set<string>();
  families.forEach((f, i) => {
    if (!IP_FAMILIES.includes(f)) errs.push(notSupported(famPath.index(i), f, IP_FAMILIES));
    if (seen.has(f)) errs.push(duplicate(famPath.index(i), f));
    seen.add(f);
  });
  if (spec.ipFamilyPolicy !== undefined && spec.ipFamilyPolicy !== null && !IP_FAMILY_POLICIES.includes(spec.ipFamilyPolicy)) {
    errs.push(notSupported(root('spec', 'ipFamilyPolicy'), ptr(spec.ipFamilyPolicy), IP_FAMILY_POLICIES));
  }
  let badIPs = false;
  ips.forEach((ip, i) => {
    if (i === 0 && ip === CLUSTER_IP_NONE) {
      if (ips.length > 1) {
        badIPs = true;
        errs.push(invalid(ipsPath, ips, "'None' must be the first and only value"));
      }
      return;
    }
    if (isIP(ip) === 0) {
      badIPs = true;
      errs.push(invalid(ipsPath.index(i), ip, INVALID_IP_MSG));
    }
  });
  if (ips.length > 2) errs.push(invalid(ipsPath, ips, 'may only hold up to 2 values'));
  if (badIPs) return errs;
  if (ips.length > 1 && !(ips.length === 2 && familyOf(ips[0]!) !== familyOf(ips[1]!))) {
    errs.push(invalid(ipsPath, ips, 'may specify no more than one IP for each IP family'));
  }
  if (!isHeadless(svc) && ips.length > 0 && families.length > 0) {
    ips.forEach((ip, i) => {
      if (i >= families.length) return;
      const fam = familyOf(ip);
      if (families[i] === 'IPv4' && fam === 'IPv6') {
        errs.push(invalid(ipsPath.index(i), ip, `expected an IPv4 value as indicated by \`ipFamilies[${i}]\``));
      }
      if (families[i] === 'IPv6' && fam !== 'IPv6') {
        errs.push(invalid(ipsPath.index(i), ip, `expected an IPv6 value as indicated by \`ipFamilies[${i}]\``));
      }
    });
  }
  return errs;
}

function validateLoadBalancerClass(svc: KObject, old: KObject | null): FieldError[] {
  const errs: FieldError[] = [];
  const path = root('spec', 'loadBalancerClass');
  const cls: unknown = svc.spec?.loadBalancerClass;
  const isLB = svc.spec?.type === 'LoadBalancer';
  if (old && old.spec?.type === 'LoadBalancer' && isLB && (old.spec?.loadBalancerClass ?? null) !== (cls ?? null)) {
    errs.push(invalid(path, ptr(cls ?? null), 'may not change once set'));
  }
  if (cls !== undefined && cls !== null) {
    if (isLB) errs.push(...isQualifiedName(typeof cls === 'string' ? cls : JSON.stringify(cls)).map((m) => invalid(path, cls, m)));
    else errs.push(forbidden(path, "may only be used when `type` is 'LoadBalancer'"));
  }
  return errs;
}

function validateTypeSpecific(svc: KObject, spec: Json): FieldError[] {
  const errs: FieldError[] = [];
  const specPath = root('spec');
  const headless = isHeadless(svc);
  switch (spec.type) {
    case 'LoadBalancer':
      if (headless) errs.push(invalid(specPath.child('clusterIPs').index(0), CLUSTER_IP_NONE, "may not be set to 'None' for LoadBalancer services"));
      objects(spec.ports).forEach((p, i) => {
        if (p.port === KUBELET_PORT) {
          errs.push(invalid(specPath.child('ports').index(i), p.port, `may not expose port ${KUBELET_PORT} externally since it is used by kubelet`));
        }
      });
      break;
    case 'NodePort':
      if (headless) errs.push(invalid(specPath.child('clusterIPs').index(0), CLUSTER_IP_NONE, "may not be set to 'None' for NodePort services"));
      break;
    case 'ExternalName': {
      if (strings(spec.clusterIPs).length > 0) errs.push(forbidden(specPath.child('clusterIPs'), 'may not be set for ExternalName services'));
      if (strings(spec.ipFamilies).length > 0) errs.push(forbidden(specPath.child('ipFamilies'), 'may not be set for ExternalName services'));
      if (spec.ipFamilyPolicy !== undefined && spec.ipFamilyPolicy !== null) {
        errs.push(forbidden(specPath.child('ipFamilyPolicy'), 'may not be set for ExternalName services'));
      }
      const cname = String(spec.externalName ?? '').replace(/\.$/, '');
      if (cname !== '') errs.push(...isDNS1123Subdomain(cname).map((m) => invalid(specPath.child('externalName'), cname, m)));
      else errs.push(required(specPath.child('externalName'), ''));
      break;
    }
  }
  return errs;
}

function validatePortsAndNodePorts(spec: Json): FieldError[] {
  const errs: FieldError[] = [];
  const portsPath = root('spec', 'ports');
  const ports = objects(spec.ports);
  const names = new Set<string>();
  ports.forEach((p, i) => errs.push(...validateServicePort(p, ports.length > 1, names, portsPath.index(i))));
  if (spec.type === 'ClusterIP') {
    ports.forEach((p, i) => {
      if (p.nodePort) errs.push(forbidden(portsPath.index(i).child('nodePort'), "may not be used when `type` is 'ClusterIP'"));
    });
  }
  const nodePorts = new Set<string>();
  ports.forEach((p, i) => {
    if (!p.nodePort) return;
    const key = `${p.protocol}/${p.nodePort}`;
    if (nodePorts.has(key)) errs.push(duplicate(portsPath.index(i).child('nodePort'), p.nodePort));
    nodePorts.add(key);
  });
  const seen = new Set<string>();
  ports.forEach((p, i) => {
    const key = `${p.protocol}/${p.port}`;
    if (seen.has(key)) {
      errs.push(duplicate(portsPath.index(i), new GoLiteral(`core.ServicePort{Name:"", Protocol:"${p.protocol}", AppProtocol:(*string)(nil), Port:${p.port}, TargetPort:intstr.IntOrString{Type:0, IntVal:0, StrVal:""}, NodePort:0}`)));
    }
    seen.add(key);
  });
  return errs;
}

function validateTrafficFields(svc: KObject, spec: Json): FieldError[] {
  const errs: FieldError[] = [];
  const etp: unknown = spec.externalTrafficPolicy;
  if (etp !== undefined && etp !== '' && etp !== 'Cluster' && etp !== 'Local') {
    errs.push(invalid(root('spec', 'externalTrafficPolicy'), etp, 'ExternalTrafficPolicy must be empty, Cluster or Local'));
  }
  const hc = typeof spec.healthCheckNodePort === 'number' ? spec.healthCheckNodePort : 0;
  if (hc < 0) errs.push(invalid(root('spec', 'healthCheckNodePort'), hc, 'HealthCheckNodePort must be not less than 0'));
  if (spec.type !== 'LoadBalancer' && spec.type !== 'NodePort' && etp !== undefined && etp !== '') {
    errs.push(invalid(root('spec', 'externalTrafficPolicy'), etp, 'ExternalTrafficPolicy can only be set on NodePort and LoadBalancer service'));
  }
  if (!needsHealthCheck(svc) && hc !== 0) {
    errs.push(invalid(root('spec', 'healthCheckNodePort'), hc, 'HealthCheckNodePort can only be set on LoadBalancer service with ExternalTrafficPolicy=Local'));
  }
  const itp: unknown = spec.internalTrafficPolicy;
  if (itp === undefined || itp === null) {
    if (spec.type === 'NodePort' || spec.type === 'LoadBalancer' || spec.type === 'ClusterIP') errs.push(required(root('spec', 'internalTrafficPolicy'), ''));
  } else if (itp !== 'Cluster' && itp !== 'Local') {
    errs.push(notSupported(root('spec', 'internalTrafficPolicy'), itp, ['Cluster', 'Local']));
  }
  return errs;
}

/** ValidateService, without the object metadata. */
export function validateService(svc: KObject, old: KObject | null = null): FieldError[] {
  const spec: Json = isObject(svc.spec) ? svc.spec : {};
  const specPath = root('spec');
  const errs: FieldError[] = [];
  if (objects(spec.ports).length === 0 && !isHeadless(svc) && spec.type !== 'ExternalName') errs.push(required(specPath.child('ports'), ''));
  errs.push(...validateTypeSpecific(svc, spec));
  errs.push(...validatePortsAndNodePorts(spec));
  if (spec.selector !== undefined && spec.selector !== null) errs.push(...validateLabels(spec.selector, specPath.child('selector')));
  const affinity: unknown = spec.sessionAffinity;
  if (!affinity) errs.push(required(specPath.child('sessionAffinity'), ''));
  else if (affinity !== 'ClientIP' && affinity !== 'None') errs.push(notSupported(specPath.child('sessionAffinity'), affinity, ['ClientIP', 'None']));
  if (affinity === 'ClientIP') errs.push(...validateClientIPAffinityConfig(spec.sessionAffinityConfig, specPath.child('sessionAffinityConfig')));
  else if (affinity === 'None' && spec.sessionAffinityConfig !== undefined && spec.sessionAffinityConfig !== null) {
    errs.push(forbidden(specPath.child('sessionAffinityConfig'), 'must not be set when session affinity is None'));
  }
  errs.push(...validateServiceClusterIPsRelatedFields(svc));
  strings(spec.externalIPs).forEach((ip, i) => {
    const path = specPath.child('externalIPs').index(i);
    if (isIP(ip) === 0) errs.push(invalid(path, ip, INVALID_IP_MSG));
    else errs.push(...validateNonSpecialIP(ip, path));
  });
  if (!spec.type) errs.push(required(specPath.child('type'), ''));
  else if (!(SERVICE_TYPES as readonly string[]).includes(spec.type)) errs.push(notSupported(specPath.child('type'), spec.type, SERVICE_TYPES));
  const ranges = strings(spec.loadBalancerSourceRanges);
  if (ranges.length > 0) {
    const path = specPath.child('LoadBalancerSourceRanges');
    if (spec.type !== 'LoadBalancer') errs.push(forbidden(path, "may only be used when `type` is 'LoadBalancer'"));
    ranges.forEach((r, i) => {
      if (!isCIDRText(r.trim())) errs.push(invalid(path.index(i), r.trim(), 'must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)'));
    });
  }
  if (spec.allocateLoadBalancerNodePorts !== undefined && spec.allocateLoadBalancerNodePorts !== null && spec.type !== 'LoadBalancer') {
    errs.push(forbidden(specPath.child('allocateLoadBalancerNodePorts'), "may only be used when `type` is 'LoadBalancer'"));
  }
  if (spec.type === 'LoadBalancer' && (spec.allocateLoadBalancerNodePorts === undefined || spec.allocateLoadBalancerNodePorts === null)) {
    errs.push(required(root('allocateLoadBalancerNodePorts'), ''));
  }
  errs.push(...validateLoadBalancerClass(svc, old));
  errs.push(...validateTrafficFields(svc, spec));
  return errs;
}

function isCIDRText(text: string): boolean {
  const slash = text.indexOf('/');
  if (slash < 0) return false;
  const ip = text.slice(0, slash);
  const prefix = text.slice(slash + 1);
  const v = isIP(ip);
  return v !== 0 && /^\d+$/.test(prefix) && Number(prefix) <= (v === 4 ? 32 : 128);
}

function validateUpgradeDowngradeClusterIPs(old: KObject, svc: KObject): FieldError[] {
  if (svc.spec?.type === 'ExternalName' || old.spec?.type === 'ExternalName') return [];
  if (isHeadless(old) && isHeadless(svc)) return [];
  const errs: FieldError[] = [];
  const path = root('spec', 'clusterIPs');
  const oldIPs = strings(old.spec?.clusterIPs);
  const ips = strings(svc.spec?.clusterIPs);
  if (oldIPs.length === ips.length) {
    oldIPs.forEach((ip, i) => {
      if (ip !== ips[i]) errs.push(invalid(path.index(i), ips, 'may not change once set'));
    });
  } else if (oldIPs.length > ips.length) {
    if (ips.length === 0) errs.push(invalid(path.index(0), ips, 'primary clusterIP can not be unset'));
    if (oldIPs.length > 0 && ips.length > 0 && ips[0] !== oldIPs[0]) errs.push(invalid(path.index(0), ips, 'may not change once set'));
    if (ips.length === 1 && svc.spec?.ipFamilyPolicy !== 'SingleStack') {
      errs.push(invalid(path.index(0), ips, "`ipFamilyPolicy` must be set to 'SingleStack' when releasing the secondary clusterIP"));
    }
  } else if (oldIPs.length > 0 && ips[0] !== oldIPs[0]) {
    errs.push(invalid(path.index(0), ips, 'may not change once set'));
  }
  return errs;
}

function validateUpgradeDowngradeIPFamilies(old: KObject, svc: KObject): FieldError[] {
  if (svc.spec?.type === 'ExternalName' || old.spec?.type === 'ExternalName') return [];
  if (isHeadless(old) !== isHeadless(svc) || isHeadless(svc)) return [];
  const errs: FieldError[] = [];
  const path = root('spec', 'ipFamilies');
  const oldFams = strings(old.spec?.ipFamilies);
  const fams = strings(svc.spec?.ipFamilies);
  const ips = strings(svc.spec?.clusterIPs);
  if (oldFams.length === fams.length) {
    oldFams.forEach((f, i) => {
      if (f !== fams[i]) errs.push(invalid(path.index(0), fams, 'may not change once set'));
    });
  } else if (oldFams.length > fams.length) {
    if (ips.length === 0) errs.push(invalid(path.index(0), fams, 'primary ipFamily can not be unset'));
    if (fams.length > 0 && fams[0] !== oldFams[0]) errs.push(invalid(path.index(0), ips, 'may not change once set'));
    if (fams.length === 1 && svc.spec?.ipFamilyPolicy !== 'SingleStack') {
      errs.push(invalid(root('spec', 'clusterIPs').index(0), ips, "`ipFamilyPolicy` must be set to 'SingleStack' when releasing the secondary ipFamily"));
    }
  } else if (oldFams.length > 0 && fams.length > 0 && fams[0] !== oldFams[0]) {
    errs.push(invalid(path.index(0), ips, 'may not change once set'));
  }
  return errs;
}

/** ValidateServiceUpdate, without the object metadata. */
export function validateServiceUpdate(svc: KObject, old: KObject): FieldError[] {
  return [...validateUpgradeDowngradeClusterIPs(old, svc), ...validateUpgradeDowngradeIPFamilies(old, svc), ...validateService(svc, old)];
}

/** ValidateServiceStatusUpdate, without the object metadata: the load balancer's ingress points. */
export function validateServiceStatusUpdate(svc: KObject): FieldError[] {
  const errs: FieldError[] = [];
  objects(svc.status?.loadBalancer?.ingress).forEach((ing, i) => {
    const path = root('status', 'loadBalancer', 'ingress').index(i);
    if (typeof ing.ip === 'string' && ing.ip !== '' && isIP(ing.ip) === 0) errs.push(invalid(path.child('ip'), ing.ip, 'must be a valid IP address'));
    if (typeof ing.hostname === 'string' && ing.hostname !== '') {
      errs.push(...isDNS1123Subdomain(ing.hostname).map((m) => invalid(path.child('hostname'), ing.hostname, m)));
      if (isIP(ing.hostname) !== 0) errs.push(invalid(path.child('hostname'), ing.hostname, 'must be a DNS name, not an IP address'));
    }
  });
  return errs;
}

// ---- Endpoints ------------------------------------------------------------------------------------------

function validateEndpointAddress(addr: Json, path: FieldPath): FieldError[] {
  const errs: FieldError[] = [];
  const ip = typeof addr.ip === 'string' ? addr.ip : '';
  if (isIP(ip) === 0) errs.push(invalid(path.child('ip'), ip, INVALID_IP_MSG));
  if (typeof addr.hostname === 'string' && addr.hostname !== '') errs.push(...validateDNS1123Label(addr.hostname, path.child('hostname')));
  if (typeof addr.nodeName === 'string') {
    errs.push(...isDNS1123Subdomain(addr.nodeName).map((m) => invalid(path.child('nodeName'), addr.nodeName, m)));
  }
  errs.push(...validateNonSpecialIP(ip, path.child('ip')));
  return errs;
}

function validateEndpointPort(port: Json, requireName: boolean, path: FieldPath): FieldError[] {
  const errs: FieldError[] = [];
  const name = typeof port.name === 'string' ? port.name : '';
  if (requireName && name === '') errs.push(required(path.child('name'), ''));
  else if (name !== '') errs.push(...validateDNS1123Label(name, path.child('name')));
  for (const m of isValidPortNum(port.port ?? 0)) errs.push(invalid(path.child('port'), port.port ?? 0, m));
  if (!port.protocol) errs.push(required(path.child('protocol'), ''));
  else if (!PROTOCOLS.includes(port.protocol)) errs.push(notSupported(path.child('protocol'), port.protocol, PROTOCOLS));
  if (typeof port.appProtocol === 'string') {
    for (const m of isQualifiedName(port.appProtocol)) errs.push(invalid(path.child('appProtocol'), port.appProtocol, m));
  }
  return errs;
}

/** ValidateEndpoints, without the object metadata. */
export function validateEndpoints(ep: KObject): FieldError[] {
  const errs: FieldError[] = [];
  objects(ep.subsets).forEach((ss, i) => {
    const path = root('subsets').index(i);
    const addrs = objects(ss.addresses);
    const notReady = objects(ss.notReadyAddresses);
    if (addrs.length === 0 && notReady.length === 0) errs.push(required(path, 'must specify `addresses` or `notReadyAddresses`'));
    addrs.forEach((a, k) => errs.push(...validateEndpointAddress(a, path.child('addresses').index(k))));
    notReady.forEach((a, k) => errs.push(...validateEndpointAddress(a, path.child('notReadyAddresses').index(k))));
    const ports = objects(ss.ports);
    ports.forEach((p, k) => errs.push(...validateEndpointPort(p, ports.length > 1, path.child('ports').index(k))));
  });
  return errs;
}
