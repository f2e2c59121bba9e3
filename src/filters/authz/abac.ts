/**
 * --authorization-mode=ABAC with --authorization-policy-file, as Kubernetes' pkg/auth/authorizer/abac: one JSON
 * policy per line (blank lines and lines starting with '#' skipped), abac.authorization.kubernetes.io/v1beta1
 * Policy objects or unversioned v0 policies (converted as Kubernetes converts them). A request is allowed
 * when a policy's subject, verb (readonly policies allow only get, list and watch) and resource or path match.
 */
import { readFile } from 'node:fs/promises';
import type { AccessAttributes, AccessAuthorizer, AccessUser, RulesResult } from '../../registry/kinds/authorization/attributes.js';

export interface AbacPolicy {
  user: string;
  group: string;
  readonly: boolean;
  apiGroup: string;
  resource: string;
  namespace: string;
  nonResourcePath: string;
}

const V1BETA1 = 'abac.authorization.kubernetes.io/v1beta1';
const str = (v: unknown): string => (typeof v === 'string' ? v : '');

/** One policy line; throws on JSON or shape errors. */
export function parsePolicyLine(line: string): AbacPolicy {
  const obj = JSON.parse(line) as Record<string, unknown>;
  if (typeof obj !== 'object' || obj === null || Array.isArray(obj)) throw new Error('a policy must be a JSON object');
  const apiVersion = str(obj['apiVersion']);
  if (apiVersion === V1BETA1) {
    if (obj['kind'] !== 'Policy') throw new Error(`unexpected kind ${JSON.stringify(obj['kind'])}, want "Policy"`);
    const spec = (obj['spec'] ?? {}) as Record<string, unknown>;
    // In v1beta1, a user or group of "*" stands for every authenticated subject.
    const star = spec['user'] === '*' || spec['group'] === '*';
    return {
      user: star ? '' : str(spec['user']),
      group: star ? 'system:authenticated' : str(spec['group']),
      readonly: spec['readonly'] === true,
      apiGroup: str(spec['apiGroup']),
      resource: str(spec['resource']),
      namespace: str(spec['namespace']),
      nonResourcePath: str(spec['nonResourcePath']),
    };
  }
  if (apiVersion !== '') throw new Error(`unknown policy apiVersion ${JSON.stringify(apiVersion)}`);
  // v0: unversioned; converted as abac/v0's conversion does.
  let user = str(obj['user']);
  let group = str(obj['group']);
  const namespace = str(obj['namespace']);
  const resource = str(obj['resource']);
  if (user === '' && group === '') group = 'system:authenticated';
  if (user === '*' || group === '*') {
    group = 'system:authenticated';
    user = '';
  }
  return {
    user,
    group,
    readonly: obj['readonly'] === true,
    apiGroup: '*',
    resource: resource || '*',
    namespace: namespace || '*',
    nonResourcePath: namespace === '' && resource === '' ? '*' : '',
  };
}

export function parsePolicyFile(text: string, path: string): AbacPolicy[] {
  const out: AbacPolicy[] = [];
  text.split('\n').forEach((raw, i) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    try {
      out.push(parsePolicyLine(line));
    } catch (err) {
      throw new Error(`--authorization-policy-file ${path}, line ${i + 1}: ${(err as Error).message}`, { cause: err });
    }
  });
  return out;
}

function subjectMatches(p: AbacPolicy, user: AccessUser | undefined): boolean {
  if (!user) return false;
  let matched = false;
  if (p.user !== '') {
    if (p.user === '*') matched = true;
    else if (p.user === user.name) matched = true;
    else return false;
  }
  if (p.group !== '') {
    if (p.group === '*') matched = true;
    else if (user.groups.includes(p.group)) matched = true;
    else return false;
  }
  return matched;
}

const READ_ONLY = new Set(['get', 'list', 'watch']);

function matches(p: AbacPolicy, user: AccessUser | undefined, a: AccessAttributes): boolean {
  if (!subjectMatches(p, user)) return false;
  if (!READ_ONLY.has(a.verb) && p.readonly) return false;
  if (a.isResourceRequest) {
    return (
      (p.namespace === '*' || p.namespace === a.namespace) &&
      (p.resource === '*' || p.resource === a.resource) &&
      (p.apiGroup === '*' || p.apiGroup === a.apiGroup)
    );
  }
  const np = p.nonResourcePath;
  return np === '*' || np === a.path || (np.endsWith('*') && a.path.startsWith(np.replace(/\*+$/, '')));
}

export function abacAuthorizer(policies: readonly AbacPolicy[]): AccessAuthorizer {
  return {
    authorize(user, attrs) {
      return policies.some((p) => matches(p, user, attrs)) ? { decision: 'allow', reason: '' } : { decision: 'noOpinion', reason: 'No policy matched.' };
    },
    rulesFor(user, namespace): RulesResult {
      const out: RulesResult = { resourceRules: [], nonResourceRules: [], incomplete: false };
      for (const p of policies) {
        if (!subjectMatches(p, user) || !(p.namespace === '*' || p.namespace === namespace)) continue;
        const verbs = p.readonly ? ['get', 'list', 'watch'] : ['*'];
        if (p.resource) out.resourceRules.push({ verbs, apiGroups: [p.apiGroup], resources: [p.resource], resourceNames: [] });
        if (p.nonResourcePath) out.nonResourceRules.push({ verbs, nonResourceURLs: [p.nonResourcePath] });
      }
      return out;
    },
  };
}

export async function loadPolicyFile(path: string): Promise<AbacPolicy[]> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (e) {
    throw new Error(`--authorization-policy-file ${path}: cannot be read: ${(e as Error).message}`, { cause: e });
  }
  return parsePolicyFile(text, path);
}
