/**
 * The OpenAPI definitions of flowcontrol.apiserver.k8s.io v1beta1 and v1beta2 (FlowSchema,
 * PriorityLevelConfiguration and their parts), as Kubernetes 1.23 declares them (the two versions have
 * the same fields). Written out here: @kubernetes/client-node only has the later v1beta3 and v1 shapes.
 */
import { ref, type Definitions, type Schema } from '../../schema.js';
import { API_VERSION_PROPERTY, KIND_PROPERTY, LIST_META_REF, META_NAMES, OBJECT_META_REF } from '../../definitions/meta.js';

export const FLOWCONTROL_GROUP = 'flowcontrol.apiserver.k8s.io';

/** The definition names of one version. */
export function flowcontrolNames(version: string) {
  const p = `io.k8s.api.flowcontrol.${version}.`;
  return {
    FlowSchema: `${p}FlowSchema`,
    FlowSchemaList: `${p}FlowSchemaList`,
    FlowSchemaSpec: `${p}FlowSchemaSpec`,
    FlowSchemaStatus: `${p}FlowSchemaStatus`,
    FlowSchemaCondition: `${p}FlowSchemaCondition`,
    FlowDistinguisherMethod: `${p}FlowDistinguisherMethod`,
    PriorityLevelConfigurationReference: `${p}PriorityLevelConfigurationReference`,
    PolicyRulesWithSubjects: `${p}PolicyRulesWithSubjects`,
    Subject: `${p}Subject`,
    UserSubject: `${p}UserSubject`,
    GroupSubject: `${p}GroupSubject`,
    ServiceAccountSubject: `${p}ServiceAccountSubject`,
    ResourcePolicyRule: `${p}ResourcePolicyRule`,
    NonResourcePolicyRule: `${p}NonResourcePolicyRule`,
    PriorityLevelConfiguration: `${p}PriorityLevelConfiguration`,
    PriorityLevelConfigurationList: `${p}PriorityLevelConfigurationList`,
    PriorityLevelConfigurationSpec: `${p}PriorityLevelConfigurationSpec`,
    PriorityLevelConfigurationStatus: `${p}PriorityLevelConfigurationStatus`,
    PriorityLevelConfigurationCondition: `${p}PriorityLevelConfigurationCondition`,
    LimitedPriorityLevelConfiguration: `${p}LimitedPriorityLevelConfiguration`,
    LimitResponse: `${p}LimitResponse`,
    QueuingConfiguration: `${p}QueuingConfiguration`,
  };
}

const str = (description: string): Schema => ({ description, type: 'string' });
const int = (description: string): Schema => ({ description, format: 'int32', type: 'integer' });
const strings = (description: string, set = true): Schema =>
  set ? { description, items: { type: 'string' }, type: 'array', 'x-kubernetes-list-type': 'set' } : { description, items: { type: 'string' }, type: 'array' };
const atomicList = (item: string, description: string): Schema => ({ description, items: ref(item), type: 'array', 'x-kubernetes-list-type': 'atomic' });
const obj = (description: string, properties: Record<string, Schema>, required?: string[]): Schema => ({
  description,
  properties,
  ...(required ? { required } : {}),
  type: 'object',
});

function condition(description: string): Schema {
  return obj(description, {
    lastTransitionTime: ref(META_NAMES.Time, '`lastTransitionTime` is the last time the condition transitioned from one status to another.'),
    message: str('`message` is a human-readable message indicating details about last transition.'),
    reason: str("`reason` is a unique, one-word, CamelCase reason for the condition's last transition."),
    status: str('`status` is the status of the condition. Can be True, False, Unknown. Required.'),
    type: str('`type` is the type of the condition. Required.'),
  });
}

function topLevel(kind: string, version: string, description: string, spec: string, status: string): Schema {
  return {
    description,
    properties: {
      apiVersion: API_VERSION_PROPERTY,
      kind: KIND_PROPERTY,
      metadata: OBJECT_META_REF,
      spec: ref(spec, `\`spec\` is the specification of the desired behavior of a ${kind}.`),
      status: ref(status, `\`status\` is the current status of a ${kind}.`),
    },
    type: 'object',
    'x-kubernetes-group-version-kind': [{ group: FLOWCONTROL_GROUP, kind, version }],
  };
}

function list(kind: string, version: string, item: string): Schema {
  return {
    description: `${kind} is a list of ${kind.replace(/List$/, '')} objects.`,
    properties: {
      apiVersion: API_VERSION_PROPERTY,
      items: { description: `\`items\` is a list of ${kind.replace(/List$/, '')}s.`, items: ref(item), type: 'array' },
      kind: KIND_PROPERTY,
      metadata: LIST_META_REF,
    },
    required: ['items'],
    type: 'object',
    'x-kubernetes-group-version-kind': [{ group: FLOWCONTROL_GROUP, kind, version }],
  };
}

export function flowcontrolDefinitions(version: string): Definitions {
  const N = flowcontrolNames(version);
  return {
    [N.FlowSchema]: topLevel(
      'FlowSchema',
      version,
      'FlowSchema defines the schema of a group of flows. Note that a flow is made up of a set of inbound API requests with similar attributes and is identified by a pair of strings: the name of the FlowSchema and a "flow distinguisher".',
      N.FlowSchemaSpec,
      N.FlowSchemaStatus,
    ),
    [N.FlowSchemaList]: list('FlowSchemaList', version, N.FlowSchema),
    [N.FlowSchemaSpec]: obj(
      'FlowSchemaSpec describes how the FlowSchema\'s specification looks like.',
      {
        distinguisherMethod: ref(
          N.FlowDistinguisherMethod,
          '`distinguisherMethod` defines how to compute the flow distinguisher for requests that match this schema. `nil` specifies that the distinguisher is disabled and thus will always be the empty string.',
        ),
        matchingPrecedence: int(
          '`matchingPrecedence` is used to choose among the FlowSchemas that match a given request. The chosen FlowSchema is among those with the numerically lowest (which we take to be logically highest) MatchingPrecedence.  Each MatchingPrecedence value must be ranged in [1,10000]. Note that if the precedence is not specified, it will be set to 1000 as default.',
        ),
        priorityLevelConfiguration: ref(
          N.PriorityLevelConfigurationReference,
          '`priorityLevelConfiguration` should reference a PriorityLevelConfiguration in the cluster. If the reference cannot be resolved, the FlowSchema will be ignored and marked as invalid in its status. Required.',
        ),
        rules: atomicList(
          N.PolicyRulesWithSubjects,
          '`rules` describes which requests will match this flow schema. This FlowSchema matches a request if and only if at least one member of rules matches the request. if it is an empty slice, there will be no requests matching the FlowSchema.',
        ),
      },
      ['priorityLevelConfiguration'],
    ),
    [N.FlowSchemaStatus]: obj('FlowSchemaStatus represents the current state of a FlowSchema.', {
      conditions: {
        description: '`conditions` is a list of the current states of FlowSchema.',
        items: ref(N.FlowSchemaCondition),
        type: 'array',
        'x-kubernetes-list-map-keys': ['type'],
        'x-kubernetes-list-type': 'map',
      },
    }),
    [N.FlowSchemaCondition]: condition('FlowSchemaCondition describes conditions for a FlowSchema.'),
    [N.FlowDistinguisherMethod]: obj(
      'FlowDistinguisherMethod specifies the method of a flow distinguisher.',
      { type: str('`type` is the type of flow distinguisher method The supported types are "ByUser" and "ByNamespace". Required.') },
      ['type'],
    ),
    [N.PriorityLevelConfigurationReference]: obj(
      'PriorityLevelConfigurationReference contains information that points to the "request-priority" being used.',
      { name: str('`name` is the name of the priority level configuration being referenced Required.') },
      ['name'],
    ),
    [N.PolicyRulesWithSubjects]: obj(
      'PolicyRulesWithSubjects prescribes a test that applies to a request to an apiserver. The test considers the subject making the request, the verb being requested, and the resource to be acted upon. This PolicyRulesWithSubjects matches a request if and only if both (a) at least one member of subjects matches the request and (b) at least one member of resourceRules or nonResourceRules matches the request.',
      {
        nonResourceRules: atomicList(
          N.NonResourcePolicyRule,
          '`nonResourceRules` is a list of NonResourcePolicyRules that identify matching requests according to their verb and the target non-resource URL.',
        ),
        resourceRules: atomicList(
          N.ResourcePolicyRule,
          '`resourceRules` is a slice of ResourcePolicyRules that identify matching requests according to their verb and the target resource. At least one of `resourceRules` and `nonResourceRules` has to be non-empty.',
        ),
        subjects: atomicList(
          N.Subject,
          'subjects is the list of normal user, serviceaccount, or group that this rule cares about. There must be at least one member in this slice. A slice that includes both the system:authenticated and system:unauthenticated user groups matches every request. Required.',
        ),
      },
      ['subjects'],
    ),
    [N.Subject]: {
      ...obj(
        'Subject matches the originator of a request, as identified by the request authentication system. There are three ways of matching an originator; by user, group, or service account.',
        {
          group: ref(N.GroupSubject, '`group` matches based on user group name.'),
          kind: str('`kind` indicates which one of the other fields is non-empty. Required'),
          serviceAccount: ref(N.ServiceAccountSubject, '`serviceAccount` matches ServiceAccounts.'),
          user: ref(N.UserSubject, '`user` matches based on username.'),
        },
        ['kind'],
      ),
      'x-kubernetes-unions': [{ discriminator: 'kind', 'fields-to-discriminateBy': { group: 'Group', serviceAccount: 'ServiceAccount', user: 'User' } }],
    },
    [N.UserSubject]: obj('UserSubject holds detailed information for user-kind subject.', { name: str('`name` is the username that matches, or "*" to match all usernames. Required.') }, ['name']),
    [N.GroupSubject]: obj(
      'GroupSubject holds detailed information for group-kind subject.',
      { name: str('name is the user group that matches, or "*" to match all user groups. See https://github.com/kubernetes/apiserver/blob/master/pkg/authentication/user/user.go for some well-known group names. Required.') },
      ['name'],
    ),
    [N.ServiceAccountSubject]: obj(
      'ServiceAccountSubject holds detailed information for service-account-kind subject.',
      {
        name: str('`name` is the name of matching ServiceAccount objects, or "*" to match regardless of name. Required.'),
        namespace: str('`namespace` is the namespace of matching ServiceAccount objects. Required.'),
      },
      ['namespace', 'name'],
    ),
    [N.ResourcePolicyRule]: obj(
      'ResourcePolicyRule is a predicate that matches some resource requests, testing the request\'s verb and the target resource. A ResourcePolicyRule matches a resource request if and only if: (a) at least one member of verbs matches the request, (b) at least one member of apiGroups matches the request, (c) at least one member of resources matches the request, and (d) either (d1) the request does not specify a namespace (i.e., `Namespace==""`) and clusterScope is true or (d2) the request specifies a namespace and least one member of namespaces matches the request\'s namespace.',
      {
        apiGroups: strings('`apiGroups` is a list of matching API groups and may not be empty. "*" matches all API groups and, if present, must be the only entry. Required.'),
        clusterScope: {
          description: '`clusterScope` indicates whether to match requests that do not specify a namespace (which happens either because the resource is not namespaced or the request targets all namespaces). If this field is omitted or false then the `namespaces` field must contain a non-empty list.',
          type: 'boolean',
        },
        namespaces: strings('`namespaces` is a list of target namespaces that restricts matches.  A request that specifies a target namespace matches only if either (a) this list contains that target namespace or (b) this list contains "*".'),
        resources: strings('`resources` is a list of matching resources (i.e., lowercase and plural) with, if desired, subresource.  For example, [ "services", "nodes/status" ].  This list may not be empty. "*" matches all resources and, if present, must be the only entry. Required.'),
        verbs: strings('`verbs` is a list of matching verbs and may not be empty. "*" matches all verbs and, if present, must be the only entry. Required.'),
      },
      ['verbs', 'apiGroups', 'resources'],
    ),
    [N.NonResourcePolicyRule]: obj(
      'NonResourcePolicyRule is a predicate that matches non-resource requests according to their verb and the target non-resource URL. A NonResourcePolicyRule matches a request if and only if both (a) at least one member of verbs matches the request and (b) at least one member of nonResourceURLs matches the request.',
      {
        nonResourceURLs: strings('`nonResourceURLs` is a set of url prefixes that a user should have access to and may not be empty. For example:\n  - "/healthz" is legal\n  - "/hea*" is illegal\n  - "/hea" is legal but matches nothing\n  - "/hea/*" also matches nothing\n  - "/healthz/*" matches all per-component health checks.\n"*" matches all non-resource urls. if it is present, it must be the only entry. Required.'),
        verbs: strings('`verbs` is a list of matching verbs and may not be empty. "*" matches all verbs. If it is present, it must be the only entry. Required.'),
      },
      ['verbs', 'nonResourceURLs'],
    ),
    [N.PriorityLevelConfiguration]: topLevel(
      'PriorityLevelConfiguration',
      version,
      'PriorityLevelConfiguration represents the configuration of a priority level.',
      N.PriorityLevelConfigurationSpec,
      N.PriorityLevelConfigurationStatus,
    ),
    [N.PriorityLevelConfigurationList]: list('PriorityLevelConfigurationList', version, N.PriorityLevelConfiguration),
    [N.PriorityLevelConfigurationSpec]: {
      ...obj(
        "PriorityLevelConfigurationSpec specifies the configuration of a priority level.",
        {
          limited: ref(
            N.LimitedPriorityLevelConfiguration,
            '`limited` specifies how requests are handled for a Limited priority level. This field must be non-empty if and only if `type` is `"Limited"`.',
          ),
          type: str(
            '`type` indicates whether this priority level is subject to limitation on request execution.  A value of `"Exempt"` means that requests of this priority level are not subject to a limit (and thus are never queued) and do not detract from the capacity made available to other priority levels.  A value of `"Limited"` means that (a) requests of this priority level _are_ subject to limits and (b) some of the server\'s limited capacity is made available exclusively to this priority level. Required.',
          ),
        },
        ['type'],
      ),
      'x-kubernetes-unions': [{ discriminator: 'type', 'fields-to-discriminateBy': { limited: 'Limited' } }],
    },
    [N.PriorityLevelConfigurationStatus]: obj('PriorityLevelConfigurationStatus represents the current state of a "request-priority".', {
      conditions: {
        description: '`conditions` is the current state of "request-priority".',
        items: ref(N.PriorityLevelConfigurationCondition),
        type: 'array',
        'x-kubernetes-list-map-keys': ['type'],
        'x-kubernetes-list-type': 'map',
      },
    }),
    [N.PriorityLevelConfigurationCondition]: condition('PriorityLevelConfigurationCondition defines the condition of priority level.'),
    [N.LimitedPriorityLevelConfiguration]: obj(
      'LimitedPriorityLevelConfiguration specifies how to handle requests that are subject to limits. It addresses two issues:\n * How are requests for this priority level limited?\n * What should be done with requests that exceed the limit?',
      {
        assuredConcurrencyShares: int(
          "`assuredConcurrencyShares` (ACS) configures the execution limit, which is a limit on the number of requests of this priority level that may be exeucting at a given time.  ACS must be a positive number. The server's concurrency limit (SCL) is divided among the concurrency-controlled priority levels in proportion to their assured concurrency shares. This produces the assured concurrency value (ACV) --- the number of requests that may be executing at a time --- for each such priority level:\n\n            ACV(l) = ceil( SCL * ACS(l) / ( sum[priority levels k] ACS(k) ) )\n\nbigger numbers of ACS mean more reserved concurrent requests (at the expense of every other PL). This field has a default value of 30.",
        ),
        limitResponse: ref(N.LimitResponse, '`limitResponse` indicates what to do with requests that can not be executed right now'),
      },
    ),
    [N.LimitResponse]: {
      ...obj(
        'LimitResponse defines how to handle requests that can not be executed right now.',
        {
          queuing: ref(N.QueuingConfiguration, '`queuing` holds the configuration parameters for queuing. This field may be non-empty only if `type` is `"Queue"`.'),
          type: str(
            '`type` is "Queue" or "Reject". "Queue" means that requests that can not be executed upon arrival are held in a queue until they can be executed or a queuing limit is reached. "Reject" means that requests that can not be executed upon arrival are rejected. Required.',
          ),
        },
        ['type'],
      ),
      'x-kubernetes-unions': [{ discriminator: 'type', 'fields-to-discriminateBy': { queuing: 'Queuing' } }],
    },
    [N.QueuingConfiguration]: obj('QueuingConfiguration holds the configuration parameters for queuing', {
      handSize: int(
        "`handSize` is a small positive number that configures the shuffle sharding of requests into queues.  When enqueuing a request at this priority level the request's flow identifier (a string pair) is hashed and the hash value is used to shuffle the list of queues and deal a hand of the size specified here.  The request is put into one of the shortest queues in that hand. `handSize` must be no larger than `queues`, and should be significantly smaller (so that a few heavy flows do not saturate most of the queues).  See the user-facing documentation for more extensive guidance on setting this field.  This field has a default value of 8.",
      ),
      queueLengthLimit: int(
        '`queueLengthLimit` is the maximum number of requests allowed to be waiting in a given queue of this priority level at a time; excess requests are rejected.  This value must be positive.  If not specified, it will be defaulted to 50.',
      ),
      queues: int(
        '`queues` is the number of queues for this priority level. The queues exist independently at each apiserver. The value must be positive.  Setting it to 1 effectively precludes shufflesharding and thus makes the distinguisher method of associated flow schemas irrelevant.  This field has a default value of 64.',
      ),
    }),
  };
}
