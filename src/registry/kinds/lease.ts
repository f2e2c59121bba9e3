/**
 * Lease (coordination.k8s.io/v1), as Kubernetes 1.23 serves it:
 *   - strategy: pkg/registry/coordination/lease/strategy.go (nothing dropped or kept; a PUT of a missing
 *     lease creates it; an update must name a resourceVersion)
 *   - validation: ValidateLease, ValidateLeaseUpdate, ValidateLeaseSpec (pkg/apis/coordination/validation):
 *     leaseDurationSeconds > 0, leaseTransitions >= 0 (with Kubernetes' own wording)
 *   - table: printLease (pkg/printers/internalversion/printers.go): NAME HOLDER AGE
 *   - field selectors: metadata.name and metadata.namespace only
 *
 * acquireTime and renewTime are MicroTime (RFC 3339 with microseconds).
 */
import type { KObject, KindDecl, TableColumn } from '../kind.js';
import { ref, type Definitions } from '../schema.js';
import { API_VERSION_PROPERTY, KIND_PROPERTY, LIST_META_REF, META_NAMES, OBJECT_META_REF } from '../definitions/meta.js';
import { AGE_COLUMN, isObject } from './configmap.js';
import { invalid, nameIsDNSSubdomain, root, type FieldError, type NameValidator } from '../../util/validation.js';

export const leaseNameValidator: NameValidator = nameIsDNSSubdomain;

// ---------------------------------------------------------------------------------------------------
// Schemas
// ---------------------------------------------------------------------------------------------------

const COORDINATION = 'io.k8s.api.coordination.v1.';
const LEASE = `${COORDINATION}Lease`;
const LEASE_SPEC = `${COORDINATION}LeaseSpec`;
const LEASE_LIST = `${COORDINATION}LeaseList`;
const GROUP = 'coordination.k8s.io';

export const LEASE_DEFINITIONS: Definitions = {
  [LEASE]: {
    description: 'Lease defines a lease concept.',
    properties: {
      apiVersion: API_VERSION_PROPERTY,
      kind: KIND_PROPERTY,
      metadata: OBJECT_META_REF,
      spec: ref(
        LEASE_SPEC,
        'Specification of the Lease. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#spec-and-status',
      ),
    },
    type: 'object',
    'x-kubernetes-group-version-kind': [{ group: GROUP, kind: 'Lease', version: 'v1' }],
  },
  [LEASE_SPEC]: {
    description: 'LeaseSpec is a specification of a Lease.',
    properties: {
      acquireTime: ref(META_NAMES.MicroTime, 'acquireTime is a time when the current lease was acquired.'),
      holderIdentity: { description: 'holderIdentity contains the identity of the holder of a current lease.', type: 'string' },
      leaseDurationSeconds: {
        description:
          'leaseDurationSeconds is a duration that candidates for a lease need to wait to force acquire it. This is measure against time of last observed RenewTime.',
        format: 'int32',
        type: 'integer',
      },
      leaseTransitions: { description: 'leaseTransitions is the number of transitions of a lease between holders.', format: 'int32', type: 'integer' },
      renewTime: ref(META_NAMES.MicroTime, 'renewTime is a time when the current holder of a lease has last updated the lease.'),
    },
    type: 'object',
  },
  [LEASE_LIST]: {
    description: 'LeaseList is a list of Lease objects.',
    properties: {
      apiVersion: API_VERSION_PROPERTY,
      items: { description: 'Items is a list of schema objects.', items: ref(LEASE), type: 'array' },
      kind: KIND_PROPERTY,
      metadata: LIST_META_REF,
    },
    required: ['items'],
    type: 'object',
    'x-kubernetes-group-version-kind': [{ group: GROUP, kind: 'LeaseList', version: 'v1' }],
  },
};

// ---------------------------------------------------------------------------------------------------
// Validation, table and the kind
// ---------------------------------------------------------------------------------------------------

/** ValidateLeaseSpec: the pointers are printed as the values they point to. */
export function validateLeaseSpec(obj: KObject): FieldError[] {
  const spec = isObject(obj.spec) ? obj.spec : {};
  const path = root('spec');
  const errs: FieldError[] = [];
  const duration: unknown = spec['leaseDurationSeconds'];
  if (typeof duration === 'number' && duration <= 0) errs.push(invalid(path.child('leaseDurationSeconds'), duration, 'must be greater than 0'));
  const transitions: unknown = spec['leaseTransitions'];
  // sic: Kubernetes' wording
  if (typeof transitions === 'number' && transitions < 0) errs.push(invalid(path.child('leaseTransitions'), transitions, 'must to greater or equal than 0'));
  return errs;
}

const columns: TableColumn[] = [
  {
    name: 'Holder',
    type: 'string',
    description: LEASE_DEFINITIONS[LEASE_SPEC]!.properties!['holderIdentity']!.description!,
    priority: 0,
    cell: (obj) => (isObject(obj.spec) && typeof obj.spec['holderIdentity'] === 'string' ? obj.spec['holderIdentity'] : ''),
  },
  AGE_COLUMN,
];

export const leaseKind: KindDecl = {
  group: GROUP,
  version: 'v1',
  kind: 'Lease',
  listKind: 'LeaseList',
  resource: 'leases',
  singular: 'lease',
  namespaced: true,
  nameValidator: leaseNameValidator,
  definition: LEASE,
  listDefinition: LEASE_LIST,
  definitions: LEASE_DEFINITIONS,
  tracksGeneration: false,
  columns,
  strategy: {
    allowCreateOnUpdate: true,
    allowUnconditionalUpdate: false,
    /** The spec is a struct: Go always has one. */
    default(obj: KObject): void {
      if (!isObject(obj.spec)) obj.spec = {};
    },
    validate(obj: KObject): FieldError[] {
      return validateLeaseSpec(obj);
    },
    validateUpdate(obj: KObject): FieldError[] {
      return validateLeaseSpec(obj);
    },
  },
};
