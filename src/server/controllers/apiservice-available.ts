/**
 * The availability controller of the APIServices, as kube-aggregator 1.23's AvailableConditionController: sets
 * each APIService's Available condition, on start, every 30 seconds, when an APIService, Service or Endpoints
 * object is written, and when a proxied request could not reach its server:
 *   - local (no service): True, Local, 'Local APIServices are always available';
 *   - the Service is missing: False, ServiceNotFound, 'service/<name> in "<namespace>" is not present';
 *     it has no such port: False, ServicePortError; (with --enable-aggregator-routing, or a ClusterIP Service)
 *     no Endpoints: False, EndpointsNotFound; no address: False, MissingEndpoints;
 *   - GET /apis/<group>/<version> on the server (as system:kube-aggregator in system:masters, 5 s) fails or
 *     answers outside 2xx: False, FailedDiscoveryCheck, 'failing or missing response from <url>: <error>';
 *   - otherwise True, Passed, 'all checks passed'. The discovery document is kept for aggregated discovery,
 *     and the server's /openapi/v2 document for the merged /openapi/v2.
 */
import { request as httpsRequest } from 'node:https';
import { isStatusError } from '../../registry/errors.js';
import type { KObject } from '../../registry/kind.js';
import { APIREGISTRATION_GROUP, availableCondition, type APIServiceCondition } from '../../registry/kinds/apiregistration/index.js';
import { parseResourceList, ResolveError, type Aggregator, type ServiceTarget } from '../aggregator/index.js';
import type { Controller } from './runner.js';

const DISCOVERY_TIMEOUT_MS = 5000;

type Verdict = Pick<APIServiceCondition, 'status' | 'reason' | 'message'>;

function discoveryURL(t: ServiceTarget, path: string): string {
  const host = t.host.includes(':') ? `[${t.host}]` : t.host;
  return `https://${host}:${t.port}${path}`;
}

/** GETs a document of the server (as the aggregator); resolves to its body or rejects with the reason. */
function fetchDiscovery(aggregator: Aggregator, t: ServiceTarget, path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      {
        ...aggregator.tlsOptions(t),
        method: 'GET',
        path,
        headers: { accept: 'application/json', 'x-remote-user': 'system:kube-aggregator', 'x-remote-group': 'system:masters' },
        timeout: DISCOVERY_TIMEOUT_MS,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const code = res.statusCode ?? 0;
          if (code < 200 || code > 299) reject(new Error(`bad status from ${discoveryURL(t, path)}: ${code}`));
          else resolve(Buffer.concat(chunks).toString('utf8'));
        });
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`Get "${discoveryURL(t, path)}": context deadline exceeded`)));
    req.on('error', reject);
    req.end();
  });
}

async function check(aggregator: Aggregator, o: KObject): Promise<Verdict> {
  const spec = o['spec'] ?? {};
  if (!spec.service) return { status: 'True', reason: 'Local', message: 'Local APIServices are always available' };
  let target: ServiceTarget;
  try {
    await aggregator.checkService(o);
    target = await aggregator.resolve(o);
  } catch (err) {
    if (err instanceof ResolveError) return { status: 'False', reason: err.reason, message: err.message };
    return { status: 'Unknown', reason: 'ServiceAccessError', message: (err as Error).message };
  }
  const path = `/apis/${String(spec.group)}/${String(spec.version)}`;
  try {
    const body = await fetchDiscovery(aggregator, target, path);
    const resources = parseResourceList(body);
    if (resources) aggregator.remoteResources.set(o.metadata?.name ?? '', resources);
  } catch (err) {
    return { status: 'False', reason: 'FailedDiscoveryCheck', message: `failing or missing response from ${discoveryURL(target, path)}: ${(err as Error).message}` };
  }
  // The server's OpenAPI document, merged into /openapi/v2 (kept as it was when it can't be read now).
  try {
    const spec = JSON.parse(await fetchDiscovery(aggregator, target, '/openapi/v2')) as unknown;
    if (spec && typeof spec === 'object' && !Array.isArray(spec)) aggregator.setOpenAPI(o.metadata?.name ?? '', spec);
  } catch {
    // a server without /openapi/v2 adds nothing
  }
  return { status: 'True', reason: 'Passed', message: 'all checks passed' };
}

export function startAPIServiceAvailability(aggregator: Aggregator, opts: { intervalMs?: number; log?: (m: string) => void } = {}): Controller {
  const registry = aggregator.config.registry;
  const store = registry.store(APIREGISTRATION_GROUP, 'v1', 'apiservices')!;
  let stopped = false;
  let running: Promise<void> | undefined;
  let again = false;
  /** APIServices whose status this controller is writing. */
  const writing = new Set<string>();

  const syncOne = async (o: KObject): Promise<void> => {
    const verdict = await check(aggregator, o);
    const cur = availableCondition(o);
    if (cur && cur.status === verdict.status && cur.reason === verdict.reason && cur.message === verdict.message) return;
    const name = o.metadata?.name ?? '';
    writing.add(name);
    try {
      await store.update(
        { namespace: '', fieldManager: 'kube-apiserver' },
        name,
        (latest) => {
          if (!latest) throw new Error('gone');
          const next = structuredClone(latest);
          const conditions = ((next['status']?.conditions ?? []) as APIServiceCondition[]).filter((c) => c.type !== 'Available');
          const before = availableCondition(latest);
          const lastTransitionTime = before && before.status === verdict.status && before.lastTransitionTime ? before.lastTransitionTime : new Date().toISOString().replace(/\.\d+Z$/, 'Z');
          conditions.push({ type: 'Available', status: verdict.status, lastTransitionTime, reason: verdict.reason!, message: verdict.message! });
          next['status'] = { ...(next['status'] ?? {}), conditions };
          return next;
        },
        { subresource: 'status' },
      );
      if (verdict.status !== 'True' || verdict.reason !== 'Local') opts.log?.(`apiservice ${name}: Available=${verdict.status} (${verdict.reason}): ${verdict.message}`);
    } catch (err) {
      if (!stopped && !isStatusError(err, 'NotFound') && (err as Error).message !== 'gone') opts.log?.(`apiservice ${name}: ${(err as Error).message}`);
    } finally {
      writing.delete(name);
    }
  };

  const pass = async (): Promise<void> => {
    do {
      again = false;
      const items = await aggregator.resync();
      await Promise.all(items.filter(() => !stopped).map((o) => syncOne(o)));
    } while (again && !stopped);
  };
  const kick = (): void => {
    if (stopped) return;
    if (running) {
      again = true;
      return;
    }
    running = pass()
      .catch((err: unknown) => {
        if (!stopped) opts.log?.(`apiservice availability: ${(err as Error).message}`);
      })
      .finally(() => (running = undefined));
  };

  const unobserve = [
    registry.store('', 'v1', 'services')!.observeWrites(() => kick()),
    registry.store('', 'v1', 'endpoints')!.observeWrites(() => kick()),
    store.observeWrites((name) => {
      // Its own status writes need no new pass; other writes do.
      if (!writing.has(name)) kick();
    }),
  ];
  aggregator.onProxyFailure = () => kick();
  const timer = setInterval(kick, opts.intervalMs ?? 30_000);
  timer.unref();
  kick();
  return {
    stop() {
      stopped = true;
      clearInterval(timer);
      for (const u of unobserve) u();
      aggregator.onProxyFailure = undefined;
    },
  };
}
