/**
 * The Service and Endpoints tables as Kubernetes 1.23's printers make them (pkg/printers/internalversion/
 * printers.go printService and printEndpoints): NAME TYPE CLUSTER-IP EXTERNAL-IP PORT(S) AGE, wide SELECTOR;
 * NAME ENDPOINTS AGE.
 */
import type { KObject, TableColumn } from '../../kind.js';
import { AGE_COLUMN } from '../configmap.js';
import { compareBytes } from '../../../util/validation.js';
import { SERVICE_DEFINITIONS } from './definitions.js';

type Json = Record<string, any>;
const list = (v: unknown): Json[] => (Array.isArray(v) ? (v as Json[]) : []);

// Column descriptions are read on first use (getters): the lazy schemas load then (idle memory).
const specDoc = (field: string): string => SERVICE_DEFINITIONS['io.k8s.api.core.v1.ServiceSpec']?.properties?.[field]?.description ?? '';

/** loadBalancerStatusStringer: ingress IPs or host names; without -o wide, longer than 16 is cut to 13 + '...'. */
function loadBalancerStatus(svc: KObject, wide: boolean): string {
  const text = list(svc.status?.loadBalancer?.ingress)
    .map((i) => (i.ip ? String(i.ip) : i.hostname ? String(i.hostname) : ''))
    .filter((s) => s !== '')
    .join(',');
  return !wide && text.length > 16 ? `${text.slice(0, 13)}...` : text;
}

/** getServiceExternalIP. */
export function serviceExternalIP(svc: KObject, wide = false): string {
  const external = list(svc.spec?.externalIPs).map(String);
  switch (svc.spec?.type) {
    case 'ClusterIP':
    case 'NodePort':
      return external.length > 0 ? external.join(',') : '<none>';
    case 'LoadBalancer': {
      const lb = loadBalancerStatus(svc, wide);
      if (external.length > 0) return [...(lb ? lb.split(',') : []), ...external].join(',');
      return lb || '<pending>';
    }
    case 'ExternalName':
      return String(svc.spec?.externalName ?? '');
  }
  return '<unknown>';
}

/** makePortString: port/protocol, or port:nodePort/protocol. */
export function servicePorts(svc: KObject): string {
  const ports = list(svc.spec?.ports);
  if (ports.length === 0) return '<none>';
  return ports.map((p) => (p.nodePort > 0 ? `${p.port}:${p.nodePort}/${p.protocol}` : `${p.port}/${p.protocol}`)).join(',');
}

/** labels.FormatLabels of the selector. */
function formatSelector(sel: unknown): string {
  if (typeof sel !== 'object' || sel === null) return '<none>';
  const keys = Object.keys(sel).sort(compareBytes);
  return keys.length === 0 ? '<none>' : keys.map((k) => `${k}=${(sel as Record<string, string>)[k]}`).join(',');
}

export const SERVICE_COLUMNS: TableColumn[] = [
  { name: 'Type', type: 'string', get description() { return specDoc('type'); }, priority: 0, cell: (o) => String(o.spec?.type ?? '') },
  { name: 'Cluster-IP', type: 'string', get description() { return specDoc('clusterIP'); }, priority: 0, cell: (o) => (o.spec?.clusterIP ? String(o.spec.clusterIP) : '<none>') },
  { name: 'External-IP', type: 'string', get description() { return specDoc('externalIPs'); }, priority: 0, cell: (o) => serviceExternalIP(o) },
  { name: 'Port(s)', type: 'string', get description() { return specDoc('ports'); }, priority: 0, cell: (o) => servicePorts(o) },
  AGE_COLUMN,
  { name: 'Selector', type: 'string', get description() { return specDoc('selector'); }, priority: 1, cell: (o) => formatSelector(o.spec?.selector) },
];

/** formatEndpoints: at most three ip:port pairs, then '+ N more...'; '<none>' without subsets. */
export function formatEndpoints(ep: KObject): string {
  const subsets = list(ep.subsets);
  if (subsets.length === 0) return '<none>';
  const out: string[] = [];
  const max = 3;
  let count = 0;
  const add = (text: string) => {
    if (out.length < max) out.push(text);
    count++;
  };
  for (const ss of subsets) {
    const addrs = list(ss.addresses);
    const ports = list(ss.ports);
    if (ports.length === 0) for (const a of addrs) add(String(a.ip));
    else for (const p of ports) for (const a of addrs) add(String(a.ip).includes(':') ? `[${a.ip}]:${p.port}` : `${a.ip}:${p.port}`);
  }
  const text = out.join(',');
  return count > max ? `${text} + ${count - max} more...` : text;
}

export const ENDPOINTS_COLUMNS: TableColumn[] = [
  {
    name: 'Endpoints',
    type: 'string',
    get description() {
      return SERVICE_DEFINITIONS['io.k8s.api.core.v1.Endpoints']?.properties?.['subsets']?.description ?? '';
    },
    priority: 0,
    cell: (o) => formatEndpoints(o),
  },
  AGE_COLUMN,
];
