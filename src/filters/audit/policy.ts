/**
 * The audit policy (--audit-policy-file): loading and validating an audit.k8s.io/v1 or v1beta1 Policy
 * (audit.orch.io accepted as an alias), and evaluating it as Kubernetes' policy checker does: the first
 * matching rule decides the level, its omitStages joined with the policy's, and omitManagedFields (the
 * rule's when set, else the policy's). No rule matching means level None.
 */
import { readFile } from 'node:fs/promises';
import { yaml } from '../../util/yaml.js';
import type { UserInfo } from '../../endpoints/http.js';
import type { RequestInfo } from '../../endpoints/requestinfo.js';
import { aggregateMessage, invalid, isDNS1123Subdomain, notSupported, required, root, type FieldError, type FieldPath } from '../../util/validation.js';
import { AUDIT_GROUP, AUDIT_GROUP_ALIAS, LEVELS, STAGES, type Level, type Stage } from './types.js';

export interface GroupResources {
  group: string;
  resources: string[];
  resourceNames: string[];
}

export interface PolicyRule {
  level: Level;
  users: string[];
  userGroups: string[];
  verbs: string[];
  resources: GroupResources[];
  namespaces: string[];
  nonResourceURLs: string[];
  omitStages: Stage[];
  omitManagedFields?: boolean;
}

export interface Policy {
  rules: PolicyRule[];
  omitStages: Stage[];
  omitManagedFields: boolean;
}

/** What the policy decides for one request. */
export interface RequestAuditConfig {
  level: Level;
  omitStages: readonly Stage[];
  omitManagedFields: boolean;
}

/** The request attributes rules match on (Kubernetes' authorizer.Attributes). */
export interface PolicyAttributes {
  user: UserInfo | undefined;
  info: RequestInfo;
}

const VERSIONS = ['v1', 'v1beta1'];

function strings(v: unknown, what: string): string[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v) || v.some((s) => typeof s !== 'string')) throw new Error(`${what} must be a list of strings`);
  return v as string[];
}

function decodeRule(r: unknown, i: number): PolicyRule {
  if (r === null || typeof r !== 'object' || Array.isArray(r)) throw new Error(`rules[${i}] must be an object`);
  const o = r as Record<string, unknown>;
  const resources = o.resources ?? [];
  if (!Array.isArray(resources)) throw new Error(`rules[${i}].resources must be a list`);
  const omf = o.omitManagedFields;
  if (omf !== undefined && omf !== null && typeof omf !== 'boolean') throw new Error(`rules[${i}].omitManagedFields must be a boolean`);
  return {
    level: (typeof o.level === 'string' ? o.level : '') as Level,
    users: strings(o.users, `rules[${i}].users`),
    userGroups: strings(o.userGroups, `rules[${i}].userGroups`),
    verbs: strings(o.verbs, `rules[${i}].verbs`),
    resources: resources.map((g: unknown, j) => {
      const gr = (g ?? {}) as Record<string, unknown>;
      return {
        group: typeof gr.group === 'string' ? gr.group : '',
        resources: strings(gr.resources, `rules[${i}].resources[${j}].resources`),
        resourceNames: strings(gr.resourceNames, `rules[${i}].resources[${j}].resourceNames`),
      };
    }),
    namespaces: strings(o.namespaces, `rules[${i}].namespaces`),
    nonResourceURLs: strings(o.nonResourceURLs, `rules[${i}].nonResourceURLs`),
    omitStages: strings(o.omitStages, `rules[${i}].omitStages`) as Stage[],
    ...(typeof omf === 'boolean' ? { omitManagedFields: omf } : {}),
  };
}

function validateRule(rule: PolicyRule, path: FieldPath): FieldError[] {
  const errs: FieldError[] = [];
  const level = path.child('level');
  if ((rule.level as string) === '') errs.push(required(level, ''));
  else if (!LEVELS.includes(rule.level)) errs.push(notSupported(level, rule.level, LEVELS));
  rule.nonResourceURLs.forEach((url, i) => {
    if (url === '*') return;
    if (!url.startsWith('/')) errs.push(invalid(path.child('nonResourceURLs').index(i), url, "non-resource URL rules must begin with a '/' character"));
    if (url !== '' && url.slice(0, -1).includes('*')) {
      errs.push(invalid(path.child('nonResourceURLs').index(i), url, "non-resource URL wildcards '*' must be the final character of the rule"));
    }
  });
  for (const gr of rule.resources) {
    if (gr.group !== '') {
      const msgs = isDNS1123Subdomain(gr.group);
      if (msgs.length > 0) errs.push(invalid(path.child('resources').child('group'), gr.group, msgs.join(',')));
    }
    if (gr.resourceNames.length > 0 && gr.resources.length === 0) {
      errs.push(invalid(path.child('resources').child('resourceNames'), gr.resourceNames, 'using resourceNames requires at least one resource'));
    }
  }
  rule.omitStages.forEach((s, i) => {
    if (!STAGES.includes(s)) errs.push(invalid(path.child('omitStages').index(i), s, `allowed stages are ${STAGES.join(',')}`));
  });
  if (rule.nonResourceURLs.length > 0 && (rule.resources.length > 0 || rule.namespaces.length > 0)) {
    errs.push(invalid(path.child('nonResourceURLs'), rule.nonResourceURLs, 'rules cannot apply to both regular resources and non-resource URLs'));
  }
  return errs;
}

/** Parses and validates a policy document (YAML or JSON); throws with Kubernetes' messages. */
export function parsePolicy(text: string): Policy {
  let doc: unknown;
  try {
    doc = yaml().parse(text);
  } catch (e) {
    throw new Error(`failed decoding: ${(e as Error).message}`, { cause: e });
  }
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) throw new Error('failed decoding: the policy must be an object');
  const o = doc as Record<string, unknown>;
  if (typeof o.apiVersion !== 'string' || o.apiVersion === '') throw new Error(`failed decoding: Object 'apiVersion' is missing in '${JSON.stringify(o)}'`);
  if (typeof o.kind !== 'string' || o.kind === '') throw new Error(`failed decoding: Object 'Kind' is missing in '${JSON.stringify(o)}'`);
  const [group, version] = o.apiVersion.split('/');
  if ((group !== AUDIT_GROUP && group !== AUDIT_GROUP_ALIAS) || !VERSIONS.includes(version ?? '') || o.kind !== 'Policy') {
    throw new Error(`failed decoding: no kind "${o.kind}" is registered for version "${o.apiVersion}"`);
  }
  let policy: Policy;
  try {
    const rules = o.rules ?? [];
    if (!Array.isArray(rules)) throw new Error('rules must be a list');
    const omf = o.omitManagedFields;
    if (omf !== undefined && omf !== null && typeof omf !== 'boolean') throw new Error('omitManagedFields must be a boolean');
    policy = {
      rules: rules.map((r, i) => decodeRule(r, i)),
      omitStages: strings(o.omitStages, 'omitStages') as Stage[],
      omitManagedFields: omf === true,
    };
  } catch (e) {
    throw new Error(`failed decoding: ${(e as Error).message}`, { cause: e });
  }
  const errs = policy.rules.flatMap((r, i) => validateRule(r, root('rules').index(i)));
  if (errs.length > 0) throw new Error(aggregateMessage(errs));
  if (policy.rules.length === 0) throw new Error('loaded illegal policy with 0 rules');
  return policy;
}

/** Reads --audit-policy-file; errors read as kube-apiserver's ("loading audit policy file: ..."). */
export async function loadPolicyFile(path: string): Promise<Policy> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (e) {
    throw new Error(`loading audit policy file: failed to read file path "${path}": ${(e as Error).message}`, { cause: e });
  }
  try {
    return parsePolicy(text);
  } catch (e) {
    throw new Error(`loading audit policy file: ${(e as Error).message}: from file ${path}`, { cause: e });
  }
}

// ---- evaluation --------------------------------------------------------------------------------------

function pathMatches(path: string, spec: string): boolean {
  if (spec === '*' || spec === path) return true;
  return spec.endsWith('*') && path.startsWith(spec.replace(/\*+$/, ''));
}

function resourceMatches(rule: PolicyRule, info: RequestInfo): boolean {
  if (!info.isResourceRequest) return false;
  if (rule.namespaces.length > 0 && !rule.namespaces.includes(info.namespace)) return false;
  if (rule.resources.length === 0) return true;
  const combined = info.subresource !== '' ? `${info.resource}/${info.subresource}` : info.resource;
  for (const gr of rule.resources) {
    if (gr.group !== info.apiGroup) continue;
    if (gr.resources.length === 0) return true;
    if (gr.resourceNames.length > 0 && !gr.resourceNames.includes(info.name)) continue;
    for (const res of gr.resources) {
      if (res === combined || res === '*') return true;
      if (info.subresource !== '' && res.startsWith('*/') && info.subresource === res.slice(2)) return true;
      if (res.endsWith('/*') && info.resource === res.slice(0, -2)) return true;
    }
  }
  return false;
}

function ruleMatches(rule: PolicyRule, attrs: PolicyAttributes): boolean {
  const { user, info } = attrs;
  if (rule.users.length > 0 && (!user || !rule.users.includes(user.name))) return false;
  if (rule.userGroups.length > 0 && (!user || !user.groups.some((g) => rule.userGroups.includes(g)))) return false;
  if (rule.verbs.length > 0 && !rule.verbs.includes(info.verb)) return false;
  if (rule.namespaces.length > 0 || rule.resources.length > 0) return resourceMatches(rule, info);
  if (rule.nonResourceURLs.length > 0) return !info.isResourceRequest && rule.nonResourceURLs.some((spec) => pathMatches(info.path, spec));
  return true;
}

export type PolicyEvaluator = (attrs: PolicyAttributes) => RequestAuditConfig;

/** The policy as a function of request attributes (rules in order, first match wins). */
export function policyEvaluator(policy: Policy): PolicyEvaluator {
  const rules = policy.rules.map((rule) => ({
    rule,
    config: {
      level: rule.level,
      omitStages: [...new Set([...policy.omitStages, ...rule.omitStages])],
      omitManagedFields: rule.omitManagedFields ?? policy.omitManagedFields,
    } satisfies RequestAuditConfig,
  }));
  const fallback: RequestAuditConfig = { level: 'None', omitStages: policy.omitStages, omitManagedFields: policy.omitManagedFields };
  return (attrs) => {
    for (const r of rules) if (ruleMatches(r.rule, attrs)) return r.config;
    return fallback;
  };
}
