/** The kinds the server serves, and every schema they need (shared meta types and the kinds' own). */
import type { KindDecl } from '../kind.js';
import type { Definitions } from '../schema.js';
import { META_DEFINITIONS } from '../definitions/meta.js';
import { namespaceKind } from './namespace.js';
import { pvcKind } from './pvc.js';
import { configMapKind } from './configmap.js';
import { secretKind } from './secret.js';
import { serviceAccountKind } from './serviceaccount.js';
import { leaseKind } from './lease.js';
import { nodeKind } from './node.js';
import { podKind } from './pod/index.js';
import { eventKind, eventsV1Kind } from './event/index.js';
import { serviceKind } from './service/index.js';
import { endpointsKind } from './endpoints.js';
import { RBAC_KINDS } from './rbac/index.js';
import { AUTHORIZATION_KINDS } from './authorization/index.js';
import { AUTHENTICATION_KINDS } from './authentication/index.js';
import { FLOWCONTROL_KINDS } from './flowcontrol/index.js';
import { priorityClassKind } from './priorityclass/index.js';
import { limitRangeKind } from './limitrange/index.js';
import { storageClassKind } from './storageclass/index.js';
import { ADMISSION_REGISTRATION_KINDS } from './admissionregistration/index.js';
import { resourceQuotaKind } from './resourcequota/index.js';
import { csrKind } from './certificates/index.js';
import { runtimeClassKind } from './runtimeclass/index.js';
import { ingressClassKind, ingressKind } from './ingressclass/index.js';
import { podSecurityPolicyKind } from './podsecuritypolicy/index.js';

export { namespaceKind } from './namespace.js';
export { pvcKind } from './pvc.js';
export { configMapKind } from './configmap.js';
export { secretKind } from './secret.js';
export { serviceAccountKind } from './serviceaccount.js';
export { leaseKind } from './lease.js';
export { nodeKind } from './node.js';
export { podKind } from './pod/index.js';
export { eventKind, eventsV1Kind } from './event/index.js';
export { serviceKind } from './service/index.js';
export { endpointsKind } from './endpoints.js';
export { RBAC_KINDS } from './rbac/index.js';
export { AUTHORIZATION_KINDS } from './authorization/index.js';
export { AUTHENTICATION_KINDS } from './authentication/index.js';
export { FLOWCONTROL_KINDS } from './flowcontrol/index.js';
export { priorityClassKind } from './priorityclass/index.js';
export { limitRangeKind } from './limitrange/index.js';
export { storageClassKind } from './storageclass/index.js';
export { ADMISSION_REGISTRATION_KINDS } from './admissionregistration/index.js';
export { resourceQuotaKind } from './resourcequota/index.js';
export { csrKind } from './certificates/index.js';
export { runtimeClassKind } from './runtimeclass/index.js';
export { ingressClassKind, ingressKind } from './ingressclass/index.js';
export { podSecurityPolicyKind } from './podsecuritypolicy/index.js';

export const BUILTIN_KINDS: KindDecl[] = [namespaceKind, pvcKind, configMapKind, secretKind, serviceAccountKind, leaseKind, nodeKind, podKind, eventKind, eventsV1Kind, serviceKind, endpointsKind, ...RBAC_KINDS, ...AUTHORIZATION_KINDS, ...AUTHENTICATION_KINDS, ...FLOWCONTROL_KINDS, priorityClassKind, limitRangeKind, storageClassKind, ...ADMISSION_REGISTRATION_KINDS, resourceQuotaKind, csrKind, runtimeClassKind, ingressClassKind, ingressKind, podSecurityPolicyKind];

/** The definitions map of /openapi/v2: the meta types, then each kind's own. */
export const ALL_DEFINITIONS: Definitions = Object.assign({}, META_DEFINITIONS, ...BUILTIN_KINDS.map((k) => k.definitions)) as Definitions;
