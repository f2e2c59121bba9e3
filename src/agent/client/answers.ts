// Partial reads of API answers (RequestOptions.answer): the agent's pod status PATCH needs only the
// answer's resourceVersion and status, so a protobuf answer is not decoded whole (its spec and
// managedFields are most of it): only the Pod message's metadata and status are taken out of it
// (util/protobuf.ts messageFieldBytes), only resourceVersion out of the metadata, and the status is
// decoded when it is first asked for.
import { decodeEnvelope, decodeMessage, decodeObject, messageFieldBytes } from '../../util/protobuf.js';
import type { Json } from './client.js';

export interface StatusAnswer {
  resourceVersion: string | undefined;
  /** Whether the answer has a status. */
  hasStatus: boolean;
  /** The answer's status (as the full decode gives it), decoded on the first call; undefined when the answer has none. */
  status: () => Json | undefined;
}

/** An answer's resourceVersion and status (RequestOptions.answer for a PATCH of pods/<name>/status). */
export function readStatusAnswer(body: Buffer, protobuf: boolean): StatusAnswer {
  if (protobuf) {
    const env = decodeEnvelope(body);
    if (env.contentEncoding === '' && env.apiVersion === 'v1' && env.kind === 'Pod') return podAnswer(env.raw);
  }
  const pod = (protobuf ? decodeObject(body) : body.length === 0 ? {} : JSON.parse(body.toString('utf8'))) as Json;
  const meta = pod.metadata as Json | undefined;
  const rv = meta?.resourceVersion;
  const status = typeof pod.status === 'object' && pod.status !== null ? (pod.status as Json) : undefined;
  return { resourceVersion: typeof rv === 'string' ? rv : undefined, hasStatus: status !== undefined, status: () => status };
}

function podAnswer(raw: Uint8Array): StatusAnswer {
  const pod = messageFieldBytes('core.v1.Pod', raw, ['metadata', 'status']);
  const meta = pod.get('metadata');
  const rv = meta && messageFieldBytes('meta.v1.ObjectMeta', meta, ['resourceVersion']).get('resourceVersion');
  // an empty string is no resourceVersion (the encoder writes every string; the decoder leaves empty ones out)
  const resourceVersion = rv !== undefined && rv.length > 0 ? rv.toString('utf8') : undefined;
  const statusBytes = pod.get('status');
  let status: Json | undefined;
  let decoded = false;
  return {
    resourceVersion,
    hasStatus: statusBytes !== undefined,
    status: () => {
      if (!decoded) {
        decoded = true;
        if (statusBytes !== undefined) status = decodeMessage('core.v1.PodStatus', statusBytes);
      }
      return status;
    },
  };
}
