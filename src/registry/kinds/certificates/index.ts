/**
 * CertificateSigningRequest (certificates.k8s.io/v1), as Kubernetes 1.23 serves it
 * (pkg/registry/certificates/certificates, pkg/apis/certificates/validation). 1.23 serves only v1: v1beta1
 * was removed in 1.22.
 *   - cluster-scoped, short name csr; field selector spec.signerName
 *   - create: status cleared; spec.username, uid, groups and extra set from the requesting user
 *   - the main resource changes neither spec nor status; the status subresource sets status.certificate
 *     and conditions other than Approved/Denied; the approval subresource sets the Approved/Denied
 *     conditions (admission checks who may: CertificateApproval, CertificateSigning)
 *   - validation: the request is a PEM "CERTIFICATE REQUEST" whose signature verifies, usages given,
 *     known and unique, signerName 'domain/path', expirationSeconds >= 600, conditions' rules, the
 *     certificate PEM CERTIFICATE blocks only; with Kubernetes' tolerance of what is already stored
 *   - condition defaults: status True; lastUpdateTime and lastTransitionTime filled in by the server
 *   - table: NAME AGE SIGNERNAME REQUESTOR REQUESTEDDURATION CONDITION
 */
import { X509Certificate } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import type { KObject, KindDecl, StrategyContext, SubresourceStrategy, TableColumn } from '../../kind.js';
import { AGE_COLUMN } from '../configmap.js';
import { humanDuration } from '../../printing.js';
import {
  duplicate,
  forbidden,
  GoLiteral,
  invalid,
  isDNS1123Label,
  isDNS1123Subdomain,
  notSupported,
  required,
  root,
  tooLong,
  type FieldError,
  type FieldPath,
} from '../../../util/validation.js';
import { parseCSR, type ParsedCSR } from './csr.js';
import { CSR_DEFINITIONS } from './definitions.js';

export const CERTIFICATES_GROUP = 'certificates.k8s.io';
const DEF = 'io.k8s.api.certificates.v1.CertificateSigningRequest';

export const SIGNER_KUBE_APISERVER_CLIENT = 'kubernetes.io/kube-apiserver-client';
export const SIGNER_KUBE_APISERVER_CLIENT_KUBELET = 'kubernetes.io/kube-apiserver-client-kubelet';
export const SIGNER_KUBELET_SERVING = 'kubernetes.io/kubelet-serving';
export const LEGACY_UNKNOWN_SIGNER = 'kubernetes.io/legacy-unknown';

export const USAGES = [
  'signing',
  'digital signature',
  'content commitment',
  'key encipherment',
  'key agreement',
  'data encipherment',
  'cert sign',
  'crl sign',
  'encipher only',
  'decipher only',
  'any',
  'server auth',
  'client auth',
  'code signing',
  'email protection',
  's/mime',
  'ipsec end system',
  'ipsec tunnel',
  'ipsec user',
  'timestamping',
  'ocsp signing',
  'microsoft sgc',
  'netscape sgc',
];
const USAGES_SORTED = [...USAGES].sort();
const TRUE_ONLY_CONDITIONS = ['Approved', 'Denied', 'Failed'];

type Json = Record<string, any>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const conditionsOf = (obj: KObject): Json[] => (Array.isArray(obj['status']?.conditions) ? (obj['status'].conditions as unknown[]).filter(isObject) : []);
const stringList = (v: unknown): string[] => (Array.isArray(v) ? v.filter((s): s is string => typeof s === 'string') : []);

/** The PEM text of a base64 []byte field ('' when absent or not base64). */
export function bytesField(v: unknown): string {
  return typeof v === 'string' ? Buffer.from(v, 'base64').toString('utf8') : '';
}

/** The CSR of an object's spec.request, parsed and its signature checked; throws with Go's message. */
export function csrOf(obj: KObject): ParsedCSR {
  return parseCSR(bytesField(obj['spec']?.request));
}

export function hasCondition(obj: KObject, type: string): boolean {
  return conditionsOf(obj).some((c) => c['type'] === type);
}

/** Go's %#v of a []byte, as field.Invalid prints the request. */
function goBytes(b64: unknown): GoLiteral {
  const bytes = typeof b64 === 'string' ? Buffer.from(b64, 'base64') : Buffer.alloc(0);
  return new GoLiteral(`[]byte{${[...bytes].map((x) => `0x${x.toString(16)}`).join(', ')}}`);
}

/** ValidateCertificateSigningRequestSignerName. */
function validateSignerName(path: FieldPath, signerName: string): FieldError[] {
  if (signerName === '') return [required(path, 'signerName must be provided')];
  const segments = signerName.split('/');
  if (segments.length !== 2) return [invalid(path, signerName, "must be a fully qualified domain and path of the form 'example.com/signer-name'")];
  const [domain, rest] = segments as [string, string];
  const errs: FieldError[] = [];
  if (domain.length > 253) errs.push(tooLong(path, domain, 253));
  const domainLabels = domain.split('.');
  for (const lbl of domainLabels) {
    const e = isDNS1123Label(lbl);
    if (e.length > 0) {
      for (const m of e) errs.push(invalid(path, domain, `validating label "${lbl}": ${m}`));
      break;
    }
  }
  if (domainLabels.length < 2) errs.push(invalid(path, domain, 'should be a domain with at least two segments separated by dots'));
  for (const lbl of rest.split('.')) {
    const e = isDNS1123Subdomain(lbl);
    if (e.length > 0) {
      for (const m of e) errs.push(invalid(path, rest, `validating label "${lbl}": ${m}`));
      break;
    }
  }
  const max = 253 + (253 + 63 + 1) + 1;
  if (signerName.length > max) errs.push(tooLong(path, signerName, max));
  return errs;
}

/** validateCertificate: '' when the PEM is acceptable (or empty), else the reason. */
function certificateProblem(pem: string): string {
  if (pem === '') return '';
  const blocks = [...pem.matchAll(/-----BEGIN ([A-Z0-9 ]+)-----([\s\S]*?)-----END \1-----/g)];
  if (blocks.length === 0) return 'must contain at least one CERTIFICATE PEM block';
  for (const b of blocks) {
    if (b[1] !== 'CERTIFICATE') return `only CERTIFICATE PEM blocks are allowed, found "${b[1]}"`;
    if (/^[A-Za-z-]+:/m.test(b[2]!)) return 'no PEM block headers are permitted';
    try {
      new X509Certificate(b[0]);
    } catch (err) {
      return `x509: malformed certificate: ${err instanceof Error ? err.message : String(err)}`;
    }
  }
  return '';
}

interface Options {
  allowSettingApprovalConditions: boolean;
  allowSettingCertificate: boolean;
  allowBothApprovedAndDenied: boolean;
  allowLegacySignerName: boolean;
  allowDuplicateConditionTypes: boolean;
  allowEmptyConditionType: boolean;
  allowArbitraryCertificate: boolean;
  allowUnknownUsages: boolean;
  allowDuplicateUsages: boolean;
}

const hasDuplicates = (list: unknown[]) => new Set(list).size !== list.length;

/** getValidationOptions: what the stored object already gets away with stays tolerated. */
function optionsFor(obj: KObject, old: KObject | undefined): Options {
  const oldConds = old ? conditionsOf(old) : [];
  const oldTypes = oldConds.map((c) => c['type']);
  const oldUsages = old ? stringList(old['spec']?.usages) : [];
  const cert = bytesField(obj['status']?.certificate);
  const oldCert = old ? bytesField(old['status']?.certificate) : '';
  return {
    allowSettingApprovalConditions: false,
    allowSettingCertificate: false,
    allowBothApprovedAndDenied: oldTypes.includes('Approved') && oldTypes.includes('Denied'),
    allowLegacySignerName: old?.['spec']?.signerName === LEGACY_UNKNOWN_SIGNER,
    allowDuplicateConditionTypes: hasDuplicates(oldTypes),
    allowEmptyConditionType: oldTypes.some((t) => !t),
    allowArbitraryCertificate: old !== undefined && (cert === oldCert || certificateProblem(oldCert) !== ''),
    allowUnknownUsages: oldUsages.some((u) => !USAGES.includes(u)),
    allowDuplicateUsages: hasDuplicates(oldUsages),
  };
}

function validateCSR(obj: KObject, o: Options): FieldError[] {
  const errs: FieldError[] = [];
  const spec: Json = isObject(obj['spec']) ? obj['spec'] : {};
  const specPath = root('spec');
  try {
    csrOf(obj);
  } catch (err) {
    errs.push(invalid(specPath.child('request'), goBytes(spec['request']), err instanceof Error ? err.message : String(err)));
  }
  const usages = stringList(spec['usages']);
  if (usages.length === 0) errs.push(required(specPath.child('usages'), 'usages must be provided'));
  if (!o.allowUnknownUsages) usages.forEach((u, i) => USAGES.includes(u) || errs.push(notSupported(specPath.child('usages').index(i), u, USAGES_SORTED)));
  if (!o.allowDuplicateUsages) {
    const seen = new Set<string>();
    usages.forEach((u, i) => {
      if (seen.has(u)) errs.push(duplicate(specPath.child('usages').index(i), u));
      seen.add(u);
    });
  }
  const signerName = typeof spec['signerName'] === 'string' ? spec['signerName'] : '';
  if (!o.allowLegacySignerName && signerName === LEGACY_UNKNOWN_SIGNER) {
    errs.push(invalid(specPath.child('signerName'), signerName, 'the legacy signerName is not allowed via this API version'));
  } else {
    errs.push(...validateSignerName(specPath.child('signerName'), signerName));
  }
  const exp: unknown = spec['expirationSeconds'];
  if (typeof exp === 'number' && exp < 600) errs.push(invalid(specPath.child('expirationSeconds'), exp, 'may not specify a duration less than 600 seconds (10 minutes)'));
  const condPath = root('status', 'conditions');
  const seenTypes = new Set<string>();
  let approved = false;
  let denied = false;
  conditionsOf(obj).forEach((c, i) => {
    const type = typeof c['type'] === 'string' ? c['type'] : '';
    if (!o.allowEmptyConditionType && type === '') errs.push(required(condPath.index(i).child('type'), ''));
    const allowed = TRUE_ONLY_CONDITIONS.includes(type) ? ['True'] : ['False', 'True', 'Unknown'];
    const status = typeof c['status'] === 'string' ? c['status'] : '';
    if (status === '') errs.push(required(condPath.index(i).child('status'), ''));
    else if (!allowed.includes(status)) errs.push(notSupported(condPath.index(i).child('status'), status, allowed));
    if (!o.allowBothApprovedAndDenied) {
      if (type === 'Approved') {
        approved = true;
        if (denied) errs.push(invalid(condPath.index(i).child('type'), type, 'Approved and Denied conditions are mutually exclusive'));
      } else if (type === 'Denied') {
        denied = true;
        if (approved) errs.push(invalid(condPath.index(i).child('type'), type, 'Approved and Denied conditions are mutually exclusive'));
      }
    }
    if (!o.allowDuplicateConditionTypes) {
      if (seenTypes.has(type)) errs.push(duplicate(condPath.index(i).child('type'), type));
      seenTypes.add(type);
    }
  });
  if (!o.allowArbitraryCertificate) {
    const problem = certificateProblem(bytesField(obj['status']?.certificate));
    if (problem !== '') errs.push(invalid(root('status', 'certificate'), '<certificate data>', problem));
  }
  return errs;
}

function validateCSRUpdate(obj: KObject, old: KObject, o: Options): FieldError[] {
  const errs = validateCSR(obj, o);
  const of = (x: KObject, t: string) => conditionsOf(x).filter((c) => c['type'] === t);
  for (const t of ['Approved', 'Denied', 'Failed']) {
    if (of(obj, t).length < of(old, t).length) errs.push(forbidden(root('status', 'conditions'), `updates may not remove a condition of type "${t}"`));
  }
  if (!o.allowSettingApprovalConditions) {
    for (const t of ['Approved', 'Denied']) {
      const before = of(old, t);
      const after = of(obj, t);
      if (after.length > before.length) errs.push(forbidden(root('status', 'conditions'), `updates may not add a condition of type "${t}"`));
      else if (after.length === before.length && !isDeepStrictEqual(before, after)) {
        errs.push(forbidden(root('status', 'conditions'), `updates may not modify a condition of type "${t}"`));
      }
    }
  }
  const cert = obj['status']?.certificate ?? '';
  const oldCert = old['status']?.certificate ?? '';
  if (cert !== oldCert) {
    if (!o.allowSettingCertificate) errs.push(forbidden(root('status', 'certificate'), 'updates may not set certificate content'));
    else if (oldCert !== '') errs.push(forbidden(root('status', 'certificate'), 'updates may not modify existing certificate content'));
  }
  return errs;
}

/** populateConditionTimestamps: missing times are now, or the transition time of the same type and status before. */
function populateConditionTimestamps(obj: KObject, old: KObject | undefined): void {
  const now = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
  const before = old ? conditionsOf(old) : [];
  for (const c of conditionsOf(obj)) {
    if (!c['lastUpdateTime']) c['lastUpdateTime'] = now;
    if (!c['lastTransitionTime']) {
      const same = before.find((b) => b['type'] === c['type'] && b['status'] === c['status'] && b['lastTransitionTime']);
      c['lastTransitionTime'] = same ? same['lastTransitionTime'] : now;
    }
  }
}

/** The subresources' strategies: each takes its part of the new object and keeps the rest of the old one. */
function subresource(take: (obj: KObject, old: KObject) => void, opts: Partial<Options>): SubresourceStrategy {
  return {
    prepareForUpdate(obj: KObject, old: KObject): void {
      take(obj, old);
      populateConditionTimestamps(obj, old);
    },
    validateUpdate: (obj, old) => validateCSRUpdate(obj, old, { ...optionsFor(obj, old), ...opts }),
  };
}

const statusStrategy = subresource(
  (obj, old) => {
    obj['spec'] = structuredClone(old['spec']);
  },
  { allowSettingCertificate: true },
);

const approvalStrategy = subresource(
  (obj, old) => {
    const conditions = obj['status']?.conditions;
    obj['spec'] = structuredClone(old['spec']);
    obj['status'] = { ...structuredClone(old['status'] ?? {}) };
    if (conditions !== undefined) obj['status'].conditions = conditions;
    else delete obj['status'].conditions;
  },
  { allowSettingApprovalConditions: true },
);

/** The CONDITION column: Denied, Approved or Pending, then ',Failed' and ',Issued' as they apply. */
export function csrCondition(obj: KObject): string {
  const types = new Set(conditionsOf(obj).map((c) => c['type']));
  let s = types.has('Denied') ? 'Denied' : types.has('Approved') ? 'Approved' : 'Pending';
  if (types.has('Failed')) s += ',Failed';
  if (typeof obj['status']?.certificate === 'string' && obj['status'].certificate !== '') s += ',Issued';
  return s;
}

const specProps = CSR_DEFINITIONS['io.k8s.api.certificates.v1.CertificateSigningRequestSpec']!.properties!;
const columns: TableColumn[] = [
  AGE_COLUMN,
  { name: 'SignerName', type: 'string', description: specProps['signerName']!.description!, priority: 0, cell: (o) => o['spec']?.signerName ?? '' },
  { name: 'Requestor', type: 'string', description: 'Name of the user who requested the CSR', priority: 0, cell: (o) => o['spec']?.username ?? '' },
  {
    name: 'RequestedDuration',
    type: 'string',
    description: specProps['expirationSeconds']!.description!,
    priority: 0,
    cell: (o) => (typeof o['spec']?.expirationSeconds === 'number' ? humanDuration(o['spec'].expirationSeconds * 1000) : '<none>'),
  },
  {
    name: 'Condition',
    type: 'string',
    description: CSR_DEFINITIONS['io.k8s.api.certificates.v1.CertificateSigningRequestStatus']!.properties!['conditions']!.description!,
    priority: 0,
    cell: (o) => csrCondition(o),
  },
];

function setRequestor(obj: KObject, ctx: StrategyContext): void {
  const spec: Json = isObject(obj['spec']) ? obj['spec'] : (obj['spec'] = {});
  delete spec['username'];
  delete spec['uid'];
  delete spec['groups'];
  delete spec['extra'];
  // The request's user; extra when the authenticator gave some.
  const user: { name: string; uid?: string; groups: string[]; extra?: Record<string, string[]> } | undefined = ctx.user;
  if (!user) return;
  if (user.name) spec['username'] = user.name;
  if (user.uid) spec['uid'] = user.uid;
  if (user.groups.length > 0) spec['groups'] = [...user.groups];
  if (user.extra && Object.keys(user.extra).length > 0) spec['extra'] = structuredClone(user.extra);
}

export const csrKind: KindDecl = {
  group: CERTIFICATES_GROUP,
  version: 'v1',
  kind: 'CertificateSigningRequest',
  listKind: 'CertificateSigningRequestList',
  resource: 'certificatesigningrequests',
  singular: 'certificatesigningrequest',
  shortNames: ['csr'],
  namespaced: false,
  // ValidateCertificateRequestName: any name the object-meta rules accept.
  nameValidator: () => [],
  definition: DEF,
  listDefinition: 'io.k8s.api.certificates.v1.CertificateSigningRequestList',
  definitions: CSR_DEFINITIONS,
  tracksGeneration: false,
  columns,
  fieldSelectors: { 'spec.signerName': (o) => o['spec']?.signerName ?? '' },
  subresources: { status: statusStrategy, approval: approvalStrategy },
  strategy: {
    prepareForCreate(obj, ctx) {
      delete obj['status'];
      setRequestor(obj, ctx);
    },
    prepareForUpdate(obj, old) {
      obj['spec'] = structuredClone(old['spec']);
      if (old['status'] !== undefined) obj['status'] = structuredClone(old['status']);
      else delete obj['status'];
    },
    default(obj) {
      for (const c of conditionsOf(obj)) if (c['status'] === undefined || c['status'] === '') c['status'] = 'True';
    },
    validate: (obj) => validateCSR(obj, optionsFor(obj, undefined)),
    validateUpdate: (obj, old) => validateCSRUpdate(obj, old, optionsFor(obj, old)),
    allowUnconditionalUpdate: true,
  },
};
