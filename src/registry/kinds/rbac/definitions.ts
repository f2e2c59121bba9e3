/** The rbac.authorization.k8s.io/v1 schemas, as Kubernetes 1.23 publishes them in /openapi/v2. */
import { ref, type Definitions, type Schema } from '../../schema.js';
import { API_VERSION_PROPERTY, KIND_PROPERTY, LIST_META_REF, META_NAMES, OBJECT_META_REF } from '../../definitions/meta.js';

const RBAC = 'io.k8s.api.rbac.v1.';
export const RBAC_NAMES = {
  Role: `${RBAC}Role`,
  RoleList: `${RBAC}RoleList`,
  ClusterRole: `${RBAC}ClusterRole`,
  ClusterRoleList: `${RBAC}ClusterRoleList`,
  RoleBinding: `${RBAC}RoleBinding`,
  RoleBindingList: `${RBAC}RoleBindingList`,
  ClusterRoleBinding: `${RBAC}ClusterRoleBinding`,
  ClusterRoleBindingList: `${RBAC}ClusterRoleBindingList`,
  PolicyRule: `${RBAC}PolicyRule`,
  AggregationRule: `${RBAC}AggregationRule`,
  RoleRef: `${RBAC}RoleRef`,
  Subject: `${RBAC}Subject`,
};

const GROUP = 'rbac.authorization.k8s.io';
const gvk = (kind: string) => [{ group: GROUP, kind, version: 'v1' }];
const strings = (description: string): Schema => ({ description, items: { type: 'string' }, type: 'array' });

const RULES_DOC = 'Rules holds all the PolicyRules for this Role';

function listOf(item: string, kind: string, description: string, itemsDoc: string): Schema {
  return {
    description,
    properties: {
      apiVersion: API_VERSION_PROPERTY,
      items: { description: itemsDoc, items: ref(item), type: 'array' },
      kind: KIND_PROPERTY,
      metadata: LIST_META_REF,
    },
    required: ['items'],
    type: 'object',
    'x-kubernetes-group-version-kind': gvk(kind),
  };
}

function binding(kind: string, description: string, roleRefDoc: string): Schema {
  return {
    description,
    properties: {
      apiVersion: API_VERSION_PROPERTY,
      kind: KIND_PROPERTY,
      metadata: OBJECT_META_REF,
      roleRef: ref(RBAC_NAMES.RoleRef, roleRefDoc),
      subjects: { description: 'Subjects holds references to the objects the role applies to.', items: ref(RBAC_NAMES.Subject), type: 'array' },
    },
    required: ['roleRef'],
    type: 'object',
    'x-kubernetes-group-version-kind': gvk(kind),
  };
}

export const RBAC_DEFINITIONS: Definitions = {
  [RBAC_NAMES.PolicyRule]: {
    description:
      'PolicyRule holds information that describes a policy rule, but does not contain information about who the rule applies to or which namespace the rule applies to.',
    properties: {
      apiGroups: strings(
        'APIGroups is the name of the APIGroup that contains the resources.  If multiple API groups are specified, any action requested against one of the enumerated resources in any API group will be allowed.',
      ),
      nonResourceURLs: strings(
        'NonResourceURLs is a set of partial urls that a user should have access to.  *s are allowed, but only as the full, final step in the path Since non-resource URLs are not namespaced, this field is only applicable for ClusterRoles referenced from a ClusterRoleBinding. Rules can either apply to API resources (such as "pods" or "secrets") or non-resource URL paths (such as "/api"),  but not both.',
      ),
      resourceNames: strings('ResourceNames is an optional white list of names that the rule applies to.  An empty set means that everything is allowed.'),
      resources: strings("Resources is a list of resources this rule applies to. '*' represents all resources."),
      verbs: strings("Verbs is a list of Verbs that apply to ALL the ResourceKinds contained in this rule. '*' represents all verbs."),
    },
    required: ['verbs'],
    type: 'object',
  },
  [RBAC_NAMES.AggregationRule]: {
    description: 'AggregationRule describes how to locate ClusterRoles to aggregate into the ClusterRole',
    properties: {
      clusterRoleSelectors: {
        description:
          "ClusterRoleSelectors holds a list of selectors which will be used to find ClusterRoles and create the rules. If any of the selectors match, then the ClusterRole's permissions will be added",
        items: ref(META_NAMES.LabelSelector),
        type: 'array',
      },
    },
    type: 'object',
  },
  [RBAC_NAMES.RoleRef]: {
    description: 'RoleRef contains information that points to the role being used',
    properties: {
      apiGroup: { description: 'APIGroup is the group for the resource being referenced', type: 'string' },
      kind: { description: 'Kind is the type of resource being referenced', type: 'string' },
      name: { description: 'Name is the name of resource being referenced', type: 'string' },
    },
    required: ['apiGroup', 'kind', 'name'],
    type: 'object',
    'x-kubernetes-map-type': 'atomic',
  },
  [RBAC_NAMES.Subject]: {
    description:
      'Subject contains a reference to the object or user identities a role binding applies to.  This can either hold a direct API object reference, or a value for non-objects such as user and group names.',
    properties: {
      apiGroup: {
        description:
          'APIGroup holds the API group of the referenced subject. Defaults to "" for ServiceAccount subjects. Defaults to "rbac.authorization.k8s.io" for User and Group subjects.',
        type: 'string',
      },
      kind: {
        description:
          'Kind of object being referenced. Values defined by this API group are "User", "Group", and "ServiceAccount". If the Authorizer does not recognized the kind value, the Authorizer should report an error.',
        type: 'string',
      },
      name: { description: 'Name of the object being referenced.', type: 'string' },
      namespace: {
        description:
          'Namespace of the referenced object.  If the object kind is non-namespace, such as "User" or "Group", and this value is not empty the Authorizer should report an error.',
        type: 'string',
      },
    },
    required: ['kind', 'name'],
    type: 'object',
    'x-kubernetes-map-type': 'atomic',
  },
  [RBAC_NAMES.Role]: {
    description: 'Role is a namespaced, logical grouping of PolicyRules that can be referenced as a unit by a RoleBinding.',
    properties: {
      apiVersion: API_VERSION_PROPERTY,
      kind: KIND_PROPERTY,
      metadata: OBJECT_META_REF,
      rules: { description: RULES_DOC, items: ref(RBAC_NAMES.PolicyRule), type: 'array' },
    },
    type: 'object',
    'x-kubernetes-group-version-kind': gvk('Role'),
  },
  [RBAC_NAMES.RoleList]: listOf(RBAC_NAMES.Role, 'RoleList', 'RoleList is a collection of Roles', 'Items is a list of Roles'),
  [RBAC_NAMES.ClusterRole]: {
    description: 'ClusterRole is a cluster level, logical grouping of PolicyRules that can be referenced as a unit by a RoleBinding or ClusterRoleBinding.',
    properties: {
      aggregationRule: ref(
        RBAC_NAMES.AggregationRule,
        'AggregationRule is an optional field that describes how to build the Rules for this ClusterRole. If AggregationRule is set, then the Rules are controller managed and direct changes to Rules will be stomped by the controller.',
      ),
      apiVersion: API_VERSION_PROPERTY,
      kind: KIND_PROPERTY,
      metadata: OBJECT_META_REF,
      rules: { description: 'Rules holds all the PolicyRules for this ClusterRole', items: ref(RBAC_NAMES.PolicyRule), type: 'array' },
    },
    type: 'object',
    'x-kubernetes-group-version-kind': gvk('ClusterRole'),
  },
  [RBAC_NAMES.ClusterRoleList]: listOf(RBAC_NAMES.ClusterRole, 'ClusterRoleList', 'ClusterRoleList is a collection of ClusterRoles', 'Items is a list of ClusterRoles'),
  [RBAC_NAMES.RoleBinding]: binding(
    'RoleBinding',
    'RoleBinding references a role, but does not contain it.  It can reference a Role in the same namespace or a ClusterRole in the global namespace. It adds who information via Subjects and namespace information by which namespace it exists in.  RoleBindings in a given namespace only have effect in that namespace.',
    'RoleRef can reference a Role in the current namespace or a ClusterRole in the global namespace. If the RoleRef cannot be resolved, the Authorizer must return an error.',
  ),
  [RBAC_NAMES.RoleBindingList]: listOf(RBAC_NAMES.RoleBinding, 'RoleBindingList', 'RoleBindingList is a collection of RoleBindings', 'Items is a list of RoleBindings'),
  [RBAC_NAMES.ClusterRoleBinding]: binding(
    'ClusterRoleBinding',
    'ClusterRoleBinding references a ClusterRole, but not contain it.  It can reference a ClusterRole in the global namespace, and adds who information via Subject.',
    'RoleRef can only reference a ClusterRole in the global namespace. If the RoleRef cannot be resolved, the Authorizer must return an error.',
  ),
  [RBAC_NAMES.ClusterRoleBindingList]: listOf(
    RBAC_NAMES.ClusterRoleBinding,
    'ClusterRoleBindingList',
    'ClusterRoleBindingList is a collection of ClusterRoleBindings',
    'Items is a list of ClusterRoleBindings',
  ),
};
