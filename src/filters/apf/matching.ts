/**
 * FlowSchema matching, as Kubernetes 1.23's apiserver/pkg/util/flowcontrol/rule.go: a FlowSchema matches
 * a request when one of its rules does; a rule matches when one of its subjects matches the user and one
 * of its resource or non-resource rules matches the request. Schemas are compiled once per configuration
 * change into plain predicates so that classifying a request allocates nothing.
 */
import type { RequestInfo } from '../requestinfo.js';

type Json = Record<string, any>;

export interface RequestUser {
  name: string;
  groups: readonly string[];
}

export type RequestMatcher = (user: RequestUser, info: RequestInfo) => boolean;

const SERVICE_ACCOUNT_PREFIX = 'system:serviceaccount:';
const list = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);
const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A set test where '*' matches everything. */
function memberOf(values: string[]): (v: string) => boolean {
  if (values.includes('*')) return () => true;
  if (values.length === 1) {
    const only = values[0];
    return (v) => v === only;
  }
  const set = new Set(values);
  return (v) => set.has(v);
}

function subjectMatcher(s: Json): ((u: RequestUser) => boolean) | undefined {
  switch (s['kind']) {
    case 'User': {
      const name = isObj(s['user']) ? String(s['user']['name']) : '';
      return name === '*' ? () => true : (u) => u.name === name;
    }
    case 'Group': {
      const name = isObj(s['group']) ? String(s['group']['name']) : '';
      return name === '*' ? () => true : (u) => u.groups.includes(name);
    }
    case 'ServiceAccount': {
      if (!isObj(s['serviceAccount'])) return undefined;
      const ns = String(s['serviceAccount']['namespace']);
      const name = String(s['serviceAccount']['name']);
      const prefix = `${SERVICE_ACCOUNT_PREFIX}${ns}:`;
      return name === '*'
        ? (u) => u.name.startsWith(prefix) && !u.name.includes(':', prefix.length)
        : (u) => u.name === prefix + name;
    }
    default:
      return undefined;
  }
}

function resourceRuleMatcher(r: Json): (info: RequestInfo) => boolean {
  const verb = memberOf(list(r['verbs']));
  const group = memberOf(list(r['apiGroups']));
  const resources = list(r['resources']);
  const resource = memberOf(resources);
  const clusterScope = r['clusterScope'] === true;
  const namespace = memberOf(list(r['namespaces']));
  return (info) => {
    if (!info.isResourceRequest || !verb(info.verb) || !group(info.apiGroup)) return false;
    if (!resource(info.resource) && !(info.subresource !== '' && resource(`${info.resource}/${info.subresource}`))) return false;
    return info.namespace === '' ? clusterScope : namespace(info.namespace);
  };
}

/** nonResourceURLs: '*', an exact path, or 'prefix/*' matching the prefix itself and everything below it. */
function nonResourceRuleMatcher(r: Json): (info: RequestInfo) => boolean {
  const verb = memberOf(list(r['verbs']));
  const urls = list(r['nonResourceURLs']);
  const any = urls.includes('*');
  const exact = new Set(urls.filter((u) => !u.endsWith('*')));
  const prefixes = urls.filter((u) => u.endsWith('/*')).map((u) => u.slice(0, -1));
  return (info) => {
    if (info.isResourceRequest || !verb(info.verb)) return false;
    if (any || exact.has(info.path)) return true;
    return prefixes.some((p) => info.path.startsWith(p) || info.path === p.slice(0, -1));
  };
}

/** The predicate of a FlowSchema's spec.rules (none: matches nothing). */
export function compileFlowSchemaRules(rules: unknown): RequestMatcher {
  const compiled = (Array.isArray(rules) ? rules : []).filter(isObj).map((rule) => {
    const subjects = (Array.isArray(rule['subjects']) ? rule['subjects'] : []).filter(isObj).map(subjectMatcher).filter((m) => m !== undefined);
    const targets = [
      ...(Array.isArray(rule['resourceRules']) ? rule['resourceRules'] : []).filter(isObj).map(resourceRuleMatcher),
      ...(Array.isArray(rule['nonResourceRules']) ? rule['nonResourceRules'] : []).filter(isObj).map(nonResourceRuleMatcher),
    ];
    return { subjects, targets };
  });
  return (user, info) => {
    for (const rule of compiled) {
      let subject = false;
      for (const s of rule.subjects) {
        if (s(user)) {
          subject = true;
          break;
        }
      }
      if (!subject) continue;
      for (const t of rule.targets) if (t(info)) return true;
    }
    return false;
  };
}
