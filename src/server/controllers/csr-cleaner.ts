/**
 * The csrcleaner controller, as kube-controller-manager 1.23's (pkg/controller/certificates/cleaner): once
 * at start and then every hour, deletes the CertificateSigningRequests that are done with:
 *   - issued, once the certificate has expired, or an hour after its approval;
 *   - denied or failed, an hour after that condition was last updated;
 *   - pending, 24 hours after they were created.
 */
import { X509Certificate } from 'node:crypto';
import { isStatusError } from '../../registry/errors.js';
import type { KObject } from '../../registry/kind.js';
import { bytesField, CERTIFICATES_GROUP } from '../../registry/kinds/certificates/index.js';
import type { Registry } from '../../registry/registry.js';
import { CERTIFICATE_CONTROLLER_USER } from './csr-signing.js';
import type { Controller } from './runner.js';

const HOUR = 3600_000;
const APPROVED_EXPIRATION = HOUR;
const DENIED_EXPIRATION = HOUR;
const FAILED_EXPIRATION = HOUR;
const PENDING_EXPIRATION = 24 * HOUR;

type Json = Record<string, any>;

const conditionTime = (csr: KObject, type: string): number | undefined => {
  const c = ((csr['status']?.conditions ?? []) as Json[]).find((x) => x['type'] === type);
  if (!c) return undefined;
  const t = Date.parse(String(c['lastUpdateTime'] ?? ''));
  return Number.isNaN(t) ? undefined : t;
};

/** Why the request may go, or '' when it stays. */
export function csrCleanupReason(csr: KObject, now = Date.now()): string {
  const pem = bytesField(csr['status']?.certificate);
  if (pem !== '') {
    try {
      if (Date.parse(new X509Certificate(pem).validTo) <= now) return 'its certificate has expired';
    } catch {
      // not a certificate: judged by its conditions below
    }
    const approved = conditionTime(csr, 'Approved');
    if (approved !== undefined && now - approved > APPROVED_EXPIRATION) return 'it was issued more than an hour ago';
    return '';
  }
  const denied = conditionTime(csr, 'Denied');
  if (denied !== undefined) return now - denied > DENIED_EXPIRATION ? 'it was denied more than an hour ago' : '';
  const failed = conditionTime(csr, 'Failed');
  if (failed !== undefined) return now - failed > FAILED_EXPIRATION ? 'it failed more than an hour ago' : '';
  const approved = conditionTime(csr, 'Approved');
  if (approved !== undefined) return '';
  const created = Date.parse(String(csr.metadata?.creationTimestamp ?? ''));
  return !Number.isNaN(created) && now - created > PENDING_EXPIRATION ? 'it has been pending for more than 24 hours' : '';
}

export function startCsrCleaner(registry: Registry, log?: (m: string) => void, intervalMs = HOUR): Controller {
  const csrs = registry.store(CERTIFICATES_GROUP, 'v1', 'certificatesigningrequests')!;
  const scope = { namespace: '', user: CERTIFICATE_CONTROLLER_USER };
  let stopped = false;
  const pass = async (): Promise<void> => {
    const list = await csrs.list(scope, {});
    for (const csr of (list['items'] ?? []) as KObject[]) {
      if (stopped) return;
      const why = csrCleanupReason(csr);
      if (why === '') continue;
      const name = csr.metadata?.name ?? '';
      try {
        await csrs.delete(scope, name, { preconditions: { uid: csr.metadata?.uid as string } });
        log?.(`csrcleaner: deleted certificatesigningrequest ${name}: ${why}`);
      } catch (err) {
        if (!isStatusError(err, 'NotFound') && !isStatusError(err, 'Conflict')) log?.(`csrcleaner: deleting ${name}: ${(err as Error).message}`);
      }
    }
  };
  const run = () => void pass().catch((err: unknown) => stopped || log?.(`csrcleaner: ${(err as Error).message}`));
  const first = setTimeout(run, 0);
  const timer = setInterval(run, intervalMs);
  first.unref();
  timer.unref();
  return {
    stop() {
      stopped = true;
      clearTimeout(first);
      clearInterval(timer);
    },
  };
}
