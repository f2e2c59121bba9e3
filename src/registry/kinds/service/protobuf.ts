/**
 * Protobuf descriptors of core/v1 Service and Endpoints (k8s.io/api/core/v1/generated.proto, Kubernetes
 * 1.23), in the form src/registry/protobuf.ts reads; fields in Go struct order, presence from the Go
 * fields' JSON tags. Plain data (no imports of the codec, which includes these lists).
 */
import type { MessageDescriptor } from '../../protobuf.js';

type Presence = 'omitempty' | 'always' | 'pointer';
const f = (no: number, json: string, type: string, presence: Presence, opts: { repeated?: boolean; map?: boolean } = {}) => ({ no, json, type, presence, ...opts });
const rep = { repeated: true };

const META = 'meta.v1.ObjectMeta';
const LIST_META = 'meta.v1.ListMeta';

export const SERVICE_PROTOBUF_MESSAGES: MessageDescriptor[] = [
  {
    name: 'core.v1.Service',
    fields: [f(1, 'metadata', META, 'omitempty'), f(2, 'spec', 'core.v1.ServiceSpec', 'omitempty'), f(3, 'status', 'core.v1.ServiceStatus', 'omitempty')],
  },
  { name: 'core.v1.ServiceList', fields: [f(1, 'metadata', LIST_META, 'omitempty'), f(2, 'items', 'core.v1.Service', 'always', rep)] },
  {
    name: 'core.v1.ServiceSpec',
    fields: [
      f(1, 'ports', 'core.v1.ServicePort', 'omitempty', rep),
      f(2, 'selector', 'string', 'omitempty', { map: true }),
      f(3, 'clusterIP', 'string', 'omitempty'),
      f(18, 'clusterIPs', 'string', 'omitempty', rep),
      f(4, 'type', 'string', 'omitempty'),
      f(5, 'externalIPs', 'string', 'omitempty', rep),
      f(7, 'sessionAffinity', 'string', 'omitempty'),
      f(8, 'loadBalancerIP', 'string', 'omitempty'),
      f(9, 'loadBalancerSourceRanges', 'string', 'omitempty', rep),
      f(10, 'externalName', 'string', 'omitempty'),
      f(11, 'externalTrafficPolicy', 'string', 'omitempty'),
      f(12, 'healthCheckNodePort', 'int32', 'omitempty'),
      f(13, 'publishNotReadyAddresses', 'bool', 'omitempty'),
      f(14, 'sessionAffinityConfig', 'core.v1.SessionAffinityConfig', 'pointer'),
      f(19, 'ipFamilies', 'string', 'omitempty', rep),
      f(17, 'ipFamilyPolicy', 'string', 'pointer'),
      f(20, 'allocateLoadBalancerNodePorts', 'bool', 'pointer'),
      f(21, 'loadBalancerClass', 'string', 'pointer'),
      f(22, 'internalTrafficPolicy', 'string', 'pointer'),
    ],
  },
  {
    name: 'core.v1.ServicePort',
    fields: [
      f(1, 'name', 'string', 'omitempty'),
      f(2, 'protocol', 'string', 'omitempty'),
      f(6, 'appProtocol', 'string', 'pointer'),
      f(3, 'port', 'int32', 'always'),
      f(4, 'targetPort', 'intstr.IntOrString', 'omitempty'),
      f(5, 'nodePort', 'int32', 'omitempty'),
    ],
  },
  { name: 'core.v1.SessionAffinityConfig', fields: [f(1, 'clientIP', 'core.v1.ClientIPConfig', 'pointer')] },
  { name: 'core.v1.ClientIPConfig', fields: [f(1, 'timeoutSeconds', 'int32', 'pointer')] },
  {
    name: 'core.v1.ServiceStatus',
    fields: [f(1, 'loadBalancer', 'core.v1.LoadBalancerStatus', 'omitempty'), f(2, 'conditions', 'meta.v1.Condition', 'omitempty', rep)],
  },
  { name: 'core.v1.LoadBalancerStatus', fields: [f(1, 'ingress', 'core.v1.LoadBalancerIngress', 'omitempty', rep)] },
  {
    name: 'core.v1.LoadBalancerIngress',
    fields: [f(1, 'ip', 'string', 'omitempty'), f(2, 'hostname', 'string', 'omitempty'), f(4, 'ports', 'core.v1.PortStatus', 'omitempty', rep)],
  },
  {
    name: 'core.v1.PortStatus',
    fields: [f(1, 'port', 'int32', 'always'), f(2, 'protocol', 'string', 'always'), f(3, 'error', 'string', 'pointer')],
  },
  {
    name: 'meta.v1.Condition',
    fields: [
      f(1, 'type', 'string', 'always'),
      f(2, 'status', 'string', 'always'),
      f(3, 'observedGeneration', 'int64', 'omitempty'),
      f(4, 'lastTransitionTime', 'meta.v1.Time', 'always'),
      f(5, 'reason', 'string', 'always'),
      f(6, 'message', 'string', 'always'),
    ],
  },
  { name: 'core.v1.Endpoints', fields: [f(1, 'metadata', META, 'omitempty'), f(2, 'subsets', 'core.v1.EndpointSubset', 'omitempty', rep)] },
  { name: 'core.v1.EndpointsList', fields: [f(1, 'metadata', LIST_META, 'omitempty'), f(2, 'items', 'core.v1.Endpoints', 'always', rep)] },
  {
    name: 'core.v1.EndpointSubset',
    fields: [
      f(1, 'addresses', 'core.v1.EndpointAddress', 'omitempty', rep),
      f(2, 'notReadyAddresses', 'core.v1.EndpointAddress', 'omitempty', rep),
      f(3, 'ports', 'core.v1.EndpointPort', 'omitempty', rep),
    ],
  },
  {
    name: 'core.v1.EndpointAddress',
    fields: [
      f(1, 'ip', 'string', 'always'),
      f(3, 'hostname', 'string', 'omitempty'),
      f(4, 'nodeName', 'string', 'pointer'),
      f(2, 'targetRef', 'core.v1.ObjectReference', 'pointer'),
    ],
  },
  {
    name: 'core.v1.EndpointPort',
    fields: [f(1, 'name', 'string', 'omitempty'), f(2, 'port', 'int32', 'always'), f(3, 'protocol', 'string', 'omitempty'), f(4, 'appProtocol', 'string', 'pointer')],
  },
];

export const SERVICE_PROTOBUF_KINDS = {
  Service: { message: 'core.v1.Service', apiVersions: ['v1'] },
  ServiceList: { message: 'core.v1.ServiceList', apiVersions: ['v1'] },
  Endpoints: { message: 'core.v1.Endpoints', apiVersions: ['v1'] },
  EndpointsList: { message: 'core.v1.EndpointsList', apiVersions: ['v1'] },
} as const;
