/**
 * The csrapproving controller, as kube-controller-manager 1.23's (pkg/controller/certificates/approver,
 * sarapprove.go): approves kubelet client certificate requests (signer
 * kubernetes.io/kube-apiserver-client-kubelet, a valid kubelet client request) when the requester may:
 *   - for its own node (spec.username equals the request's CN): 'create' on
 *     certificatesigningrequests/selfnodeclient — "Auto approving self kubelet client certificate after
 *     SubjectAccessReview.";
 *   - else 'create' on certificatesigningrequests/nodeclient — "Auto approving kubelet client certificate
 *     after SubjectAccessReview.".
 * The check is the server's authorizer asked about the requester recorded in the spec (a
 * SubjectAccessReview in Kubernetes). The approval is written through the approval subresource with reason
 * AutoApproved. Requests already approved, denied or issued, and other signers, are left alone; serving
 * certificates are never approved automatically.
 */
import { isStatusError } from '../../registry/errors.js';
import type { KObject } from '../../registry/kind.js';
import { resourceAttributes, type AccessAuthorizer } from '../../registry/kinds/authorization/attributes.js';
import { CERTIFICATES_GROUP, csrOf, hasCondition, SIGNER_KUBE_APISERVER_CLIENT_KUBELET } from '../../registry/kinds/certificates/index.js';
import type { Registry } from '../../registry/registry.js';
import { CERTIFICATE_CONTROLLER_USER, kubeletClientProblem, SkipUpdate } from './csr-signing.js';
import { getIfExists, runController, type Controller } from './runner.js';

const pending = (csr: KObject): boolean =>
  csr['spec']?.signerName === SIGNER_KUBE_APISERVER_CLIENT_KUBELET &&
  !hasCondition(csr, 'Approved') &&
  !hasCondition(csr, 'Denied') &&
  !(typeof csr['status']?.certificate === 'string' && csr['status'].certificate !== '');

const RECOGNIZERS = [
  { subresource: 'selfnodeclient', self: true, message: 'Auto approving self kubelet client certificate after SubjectAccessReview.' },
  { subresource: 'nodeclient', self: false, message: 'Auto approving kubelet client certificate after SubjectAccessReview.' },
];

export function startCsrApprovingController(registry: Registry, authorizer: () => AccessAuthorizer | undefined, log?: (m: string) => void): Controller {
  const csrs = registry.store(CERTIFICATES_GROUP, 'v1', 'certificatesigningrequests')!;
  const scope = { namespace: '', user: CERTIFICATE_CONTROLLER_USER };
  return runController({
    name: 'csrapproving controller',
    store: csrs,
    wants: pending,
    async sync(_namespace, name) {
      const csr = await getIfExists(csrs, scope, name);
      if (!csr || !pending(csr)) return null;
      const spec = csr['spec'] as Record<string, any>;
      const cr = csrOf(csr);
      if (kubeletClientProblem(cr, Array.isArray(spec['usages']) ? spec['usages'] : []) !== '') return null;
      const authz = authorizer();
      const user = {
        name: typeof spec['username'] === 'string' ? spec['username'] : '',
        ...(typeof spec['uid'] === 'string' ? { uid: spec['uid'] } : {}),
        groups: Array.isArray(spec['groups']) ? (spec['groups'] as string[]) : [],
        ...(spec['extra'] && typeof spec['extra'] === 'object' ? { extra: spec['extra'] as Record<string, string[]> } : {}),
      };
      for (const r of RECOGNIZERS) {
        if (r.self && user.name !== cr.commonName) continue;
        const attrs = resourceAttributes({ verb: 'create', apiGroup: CERTIFICATES_GROUP, apiVersion: '*', resource: 'certificatesigningrequests', subresource: r.subresource });
        const allowed = authz ? (await authz.authorize(user, attrs)).decision === 'allow' : true;
        if (!allowed) continue;
        try {
          await csrs.update(scope, name, (cur) => {
            if (!cur || !pending(cur)) throw new SkipUpdate();
            const next = structuredClone(cur);
            const status = (next['status'] ??= {});
            (status.conditions ??= []).push({ type: 'Approved', status: 'True', reason: 'AutoApproved', message: r.message });
            return next;
          }, { subresource: 'approval' });
        } catch (err) {
          if (err instanceof SkipUpdate || isStatusError(err, 'NotFound')) return null;
          if (isStatusError(err, 'Conflict')) return 100;
          throw err;
        }
        return null;
      }
      // Recognized but not authorized: Kubernetes leaves the request pending (an ignorable error).
      return null;
    },
    ...(log ? { log } : {}),
  });
}
