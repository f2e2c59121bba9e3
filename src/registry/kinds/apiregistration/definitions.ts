// The OpenAPI definitions of APIService (apiregistration.k8s.io/v1, Kubernetes 1.23 fields; descriptions from
// @kubernetes/client-node's models), written out by hand: scripts/gen-definitions.mjs does not cover this group.
import type { Definitions } from '../../schema.js';

const GVK = (kind: string) => [{ group: 'apiregistration.k8s.io', kind, version: 'v1' }];
const P = 'io.k8s.kube-aggregator.pkg.apis.apiregistration.v1.';

export const APIREGISTRATION_DEFINITIONS: Definitions = {
  [`${P}APIService`]: {
    description: 'APIService represents a server for a particular GroupVersion. Name must be "version.group".',
    properties: {
      apiVersion: {
        description:
          'APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources',
        type: 'string',
      },
      kind: {
        description:
          'Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds',
        type: 'string',
      },
      metadata: { $ref: '#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta', description: "Standard object's metadata." },
      spec: { $ref: `#/definitions/${P}APIServiceSpec`, description: 'Spec contains information for locating and communicating with a server' },
      status: { $ref: `#/definitions/${P}APIServiceStatus`, description: 'Status contains derived information about an API server' },
    },
    type: 'object',
    'x-kubernetes-group-version-kind': GVK('APIService'),
  },
  [`${P}APIServiceCondition`]: {
    description: 'APIServiceCondition describes the state of an APIService at a particular point',
    properties: {
      lastTransitionTime: { $ref: '#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.Time', description: 'Last time the condition transitioned from one status to another.' },
      message: { description: 'Human-readable message indicating details about last transition.', type: 'string' },
      reason: { description: "Unique, one-word, CamelCase reason for the condition's last transition.", type: 'string' },
      status: { description: 'Status is the status of the condition. Can be True, False, Unknown.', type: 'string' },
      type: { description: 'Type is the type of the condition.', type: 'string' },
    },
    required: ['type', 'status'],
    type: 'object',
  },
  [`${P}APIServiceList`]: {
    description: 'APIServiceList is a list of APIService objects.',
    properties: {
      apiVersion: { description: 'APIVersion defines the versioned schema of this representation of an object.', type: 'string' },
      items: { items: { $ref: `#/definitions/${P}APIService` }, type: 'array' },
      kind: { description: 'Kind is a string value representing the REST resource this object represents.', type: 'string' },
      metadata: { $ref: '#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta', description: "Standard list metadata." },
    },
    required: ['items'],
    type: 'object',
    'x-kubernetes-group-version-kind': GVK('APIServiceList'),
  },
  [`${P}APIServiceSpec`]: {
    description:
      'APIServiceSpec contains information for locating and communicating with a server. Only https is supported, though you are able to disable certificate verification.',
    properties: {
      caBundle: {
        description: "CABundle is a PEM encoded CA bundle which will be used to validate an API server's serving certificate. If unspecified, system trust roots on the apiserver are used.",
        format: 'byte',
        type: 'string',
        'x-kubernetes-list-type': 'atomic',
      },
      group: { description: 'Group is the API group name this server hosts', type: 'string' },
      groupPriorityMinimum: {
        description:
          'GroupPriorityMinimum is the priority this group should have at least. Higher priority means that the group is preferred by clients over lower priority ones.',
        format: 'int32',
        type: 'integer',
      },
      insecureSkipTLSVerify: {
        description: 'InsecureSkipTLSVerify disables TLS certificate verification when communicating with this server. This is strongly discouraged.  You should use the CABundle instead.',
        type: 'boolean',
      },
      service: {
        $ref: `#/definitions/${P}ServiceReference`,
        description:
          'Service is a reference to the service for this API server.  It must communicate on port 443. If the Service is nil, that means the handling for the API groupversion is handled locally on this server. The call will simply delegate to the normal handler chain to be fulfilled.',
      },
      version: { description: 'Version is the API version this server hosts.  For example, "v1"', type: 'string' },
      versionPriority: {
        description: 'VersionPriority controls the ordering of this API version inside of its group.  Must be greater than zero.',
        format: 'int32',
        type: 'integer',
      },
    },
    required: ['groupPriorityMinimum', 'versionPriority'],
    type: 'object',
  },
  [`${P}APIServiceStatus`]: {
    description: 'APIServiceStatus contains derived information about an API server',
    properties: {
      conditions: {
        description: 'Current service state of apiService.',
        items: { $ref: `#/definitions/${P}APIServiceCondition` },
        type: 'array',
        'x-kubernetes-list-map-keys': ['type'],
        'x-kubernetes-list-type': 'map',
        'x-kubernetes-patch-merge-key': 'type',
        'x-kubernetes-patch-strategy': 'merge',
      },
    },
    type: 'object',
  },
  [`${P}ServiceReference`]: {
    description: 'ServiceReference holds a reference to Service.legacy.k8s.io',
    properties: {
      name: { description: 'Name is the name of the service', type: 'string' },
      namespace: { description: 'Namespace is the namespace of the service', type: 'string' },
      port: {
        description: 'If specified, the port on the service that hosting webhook. Default to 443 for backward compatibility. `port` should be a valid port number (1-65535, inclusive).',
        format: 'int32',
        type: 'integer',
      },
    },
    type: 'object',
  },
};
