/**
 * The CertificateSigningRequest admission plugins, as Kubernetes 1.23's (plugin/pkg/admission/certificates):
 *   - CertificateApproval: an update of certificatesigningrequests/approval needs the 'approve' verb on
 *     the signer (signers of certificates.k8s.io, named by signerName or '<domain>/*');
 *   - CertificateSigning: an update of certificatesigningrequests/status that changes status.certificate
 *     needs the 'sign' verb on the signer;
 *   - CertificateSubjectRestriction: a create for the kubernetes.io/kube-apiserver-client signer may not
 *     ask for the system:masters group (an O of the subject).
 * Refusals are 403 Forbidden, worded as Kubernetes words them.
 */
import { apiErrors } from '../errors.js';
import type { AccessAuthorizer } from '../kinds/authorization/attributes.js';
import { resourceAttributes } from '../kinds/authorization/attributes.js';
import { CERTIFICATES_GROUP, csrOf, SIGNER_KUBE_APISERVER_CLIENT } from '../kinds/certificates/index.js';
import type { Admission, AdmissionAttributes } from '../store.js';

const isCSRKind = (d: { group: string; resource: string }) => d.group === CERTIFICATES_GROUP && d.resource === 'certificatesigningrequests';
const isCSR = (a: AdmissionAttributes) => isCSRKind(a.decl);

function refuse(a: AdmissionAttributes, message: string): Error {
  return apiErrors.forbidden({ group: a.decl.group, resource: a.decl.resource }, a.name, message);
}

/** certificates.IsAuthorizedForSignerName: the verb on the signer's name, or on '<domain>/*'. */
export async function authorizedForSigner(authz: AccessAuthorizer | undefined, user: AdmissionAttributes['user'], verb: string, signerName: string): Promise<boolean> {
  if (!authz) return true;
  const attrs = (name: string) => resourceAttributes({ verb, apiGroup: CERTIFICATES_GROUP, apiVersion: '*', resource: 'signers', name });
  if ((await authz.authorize(user, attrs(signerName))).decision === 'allow') return true;
  const slash = signerName.indexOf('/');
  if (slash < 0) return false;
  return (await authz.authorize(user, attrs(`${signerName.slice(0, slash)}/*`))).decision === 'allow';
}

const signerOf = (a: AdmissionAttributes): string => (a.object?.['spec']?.signerName as string | undefined) ?? '';

export function certificateApproval(authz: () => AccessAuthorizer | undefined): Admission {
  return {
    handles: (d, op) => op === 'UPDATE' && isCSRKind(d),
    async validate(a) {
      if (!isCSR(a) || a.operation !== 'UPDATE' || a.subresource !== 'approval') return;
      const signer = signerOf(a);
      if (!(await authorizedForSigner(authz(), a.user, 'approve', signer))) throw refuse(a, `user not permitted to approve requests with signerName "${signer}"`);
    },
  };
}

export function certificateSigning(authz: () => AccessAuthorizer | undefined): Admission {
  return {
    handles: (d, op) => op === 'UPDATE' && isCSRKind(d),
    async validate(a) {
      if (!isCSR(a) || a.operation !== 'UPDATE' || a.subresource !== 'status') return;
      if ((a.oldObject?.['status']?.certificate ?? '') === (a.object?.['status']?.certificate ?? '')) return;
      const signer = signerOf(a);
      if (!(await authorizedForSigner(authz(), a.user, 'sign', signer))) throw refuse(a, `user not permitted to sign requests with signerName "${signer}"`);
    },
  };
}

export function certificateSubjectRestriction(): Admission {
  return {
    handles: (d, op) => op === 'CREATE' && isCSRKind(d),
    async validate(a) {
      if (!isCSR(a) || a.operation !== 'CREATE' || a.subresource !== '' || !a.object) return;
      if (signerOf(a) !== SIGNER_KUBE_APISERVER_CLIENT) return;
      let orgs: string[];
      try {
        orgs = csrOf(a.object).organizations;
      } catch (err) {
        throw refuse(a, `failed to parse CSR: ${err instanceof Error ? err.message : String(err)}`);
      }
      if (orgs.includes('system:masters')) throw refuse(a, `use of ${SIGNER_KUBE_APISERVER_CLIENT} signer with system:masters group is not allowed`);
    },
  };
}
