/**
 * Protobuf descriptors of scheduling.k8s.io/v1 PriorityClass, core/v1 LimitRange and storage.k8s.io/v1
 * StorageClass (the generated.proto files of Kubernetes 1.23), in the form src/registry/protobuf.ts reads;
 * presence follows the Go fields' JSON tags. Plain data.
 */
import type { MessageDescriptor } from '../../protobuf.js';

type Presence = 'omitempty' | 'always' | 'pointer';
const f = (no: number, json: string, type: string, presence: Presence, opts: { repeated?: boolean; map?: boolean } = {}) => ({ no, json, type, presence, ...opts });
const rep = { repeated: true };
const map = { map: true };
const META = 'meta.v1.ObjectMeta';
const LIST_META = 'meta.v1.ListMeta';
const QUANTITY = 'resource.Quantity';

export const ADMISSION_KINDS_PROTOBUF_MESSAGES: MessageDescriptor[] = [
  {
    name: 'scheduling.v1.PriorityClass',
    fields: [
      f(1, 'metadata', META, 'omitempty'),
      f(2, 'value', 'int32', 'always'),
      f(3, 'globalDefault', 'bool', 'omitempty'),
      f(4, 'description', 'string', 'omitempty'),
      f(5, 'preemptionPolicy', 'string', 'pointer'),
    ],
  },
  { name: 'scheduling.v1.PriorityClassList', fields: [f(1, 'metadata', LIST_META, 'omitempty'), f(2, 'items', 'scheduling.v1.PriorityClass', 'always', rep)] },
  {
    name: 'core.v1.LimitRangeItem',
    fields: [
      f(1, 'type', 'string', 'always'),
      f(2, 'max', QUANTITY, 'omitempty', map),
      f(3, 'min', QUANTITY, 'omitempty', map),
      f(4, 'default', QUANTITY, 'omitempty', map),
      f(5, 'defaultRequest', QUANTITY, 'omitempty', map),
      f(6, 'maxLimitRequestRatio', QUANTITY, 'omitempty', map),
    ],
  },
  { name: 'core.v1.LimitRangeSpec', fields: [f(1, 'limits', 'core.v1.LimitRangeItem', 'always', rep)] },
  { name: 'core.v1.LimitRange', fields: [f(1, 'metadata', META, 'omitempty'), f(2, 'spec', 'core.v1.LimitRangeSpec', 'omitempty')] },
  { name: 'core.v1.LimitRangeList', fields: [f(1, 'metadata', LIST_META, 'omitempty'), f(2, 'items', 'core.v1.LimitRange', 'always', rep)] },
  { name: 'core.v1.TopologySelectorLabelRequirement', fields: [f(1, 'key', 'string', 'always'), f(2, 'values', 'string', 'always', rep)] },
  { name: 'core.v1.TopologySelectorTerm', fields: [f(1, 'matchLabelExpressions', 'core.v1.TopologySelectorLabelRequirement', 'omitempty', rep)] },
  {
    name: 'storage.v1.StorageClass',
    fields: [
      f(1, 'metadata', META, 'omitempty'),
      f(2, 'provisioner', 'string', 'always'),
      f(3, 'parameters', 'string', 'omitempty', map),
      f(4, 'reclaimPolicy', 'string', 'pointer'),
      f(5, 'mountOptions', 'string', 'omitempty', rep),
      f(6, 'allowVolumeExpansion', 'bool', 'pointer'),
      f(7, 'volumeBindingMode', 'string', 'pointer'),
      f(8, 'allowedTopologies', 'core.v1.TopologySelectorTerm', 'omitempty', rep),
    ],
  },
  { name: 'storage.v1.StorageClassList', fields: [f(1, 'metadata', LIST_META, 'omitempty'), f(2, 'items', 'storage.v1.StorageClass', 'always', rep)] },
];

const kinds = (message: string, apiVersion: string) => ({ message, apiVersions: [apiVersion] });
export const ADMISSION_KINDS_PROTOBUF_KINDS = {
  PriorityClass: kinds('scheduling.v1.PriorityClass', 'scheduling.k8s.io/v1'),
  PriorityClassList: kinds('scheduling.v1.PriorityClassList', 'scheduling.k8s.io/v1'),
  LimitRange: kinds('core.v1.LimitRange', 'v1'),
  LimitRangeList: kinds('core.v1.LimitRangeList', 'v1'),
  StorageClass: kinds('storage.v1.StorageClass', 'storage.k8s.io/v1'),
  StorageClassList: kinds('storage.v1.StorageClassList', 'storage.k8s.io/v1'),
};
