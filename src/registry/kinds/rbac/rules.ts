/**
 * Policy rules, as Kubernetes' rbac helpers: whether a rule allows a request (RuleAllows), whether a set of
 * rules covers another (Covers, for escalation checks), and the compact text of rules in error messages.
 * Pure functions over rbac/v1 PolicyRule JSON.
 */
import { goQuote } from '../../../util/validation.js';
import type { AccessAttributes } from '../authorization/attributes.js';

export interface PolicyRule {
  verbs: string[];
  apiGroups?: string[];
  resources?: string[];
  resourceNames?: string[];
  nonResourceURLs?: string[];
}

const ALL = '*';

const has = (list: readonly string[] | undefined, v: string): boolean => (list ?? []).includes(v);
const hasAll = (set: readonly string[] | undefined, want: readonly string[] | undefined): boolean => (want ?? []).every((w) => has(set, w));

export function verbMatches(rule: PolicyRule, verb: string): boolean {
  return rule.verbs.some((v) => v === ALL || v === verb);
}

export function apiGroupMatches(rule: PolicyRule, group: string): boolean {
  return (rule.apiGroups ?? []).some((g) => g === ALL || g === group);
}

/** `combined` is resource or resource/subresource; a rule's `*` and `*\/subresource` match too. */
export function resourceMatches(rule: PolicyRule, combined: string, subresource: string): boolean {
  for (const r of rule.resources ?? []) {
    if (r === ALL || r === combined) return true;
    if (subresource !== '' && r === `*/${subresource}`) return true;
  }
  return false;
}

export function resourceNameMatches(rule: PolicyRule, name: string): boolean {
  const names = rule.resourceNames ?? [];
  return names.length === 0 || names.includes(name);
}

/** A rule URL `*` matches every path; one ending in `*` matches by prefix. */
export function nonResourceURLMatches(rule: PolicyRule, path: string): boolean {
  for (const u of rule.nonResourceURLs ?? []) {
    if (u === ALL || u === path) return true;
    if (u.endsWith('*') && path.startsWith(u.slice(0, -1))) return true;
  }
  return false;
}

/** RuleAllows: whether one rule allows the request. */
export function ruleAllows(attrs: AccessAttributes, rule: PolicyRule): boolean {
  if (attrs.isResourceRequest) {
    const combined = attrs.subresource ? `${attrs.resource}/${attrs.subresource}` : attrs.resource;
    return (
      verbMatches(rule, attrs.verb) &&
      apiGroupMatches(rule, attrs.apiGroup) &&
      resourceMatches(rule, combined, attrs.subresource) &&
      resourceNameMatches(rule, attrs.name)
    );
  }
  return verbMatches(rule, attrs.verb) && nonResourceURLMatches(rule, attrs.path);
}

export function rulesAllow(attrs: AccessAttributes, rules: readonly PolicyRule[]): boolean {
  return rules.some((r) => ruleAllows(attrs, r));
}

// ---- covering (escalation checks) --------------------------------------------------------------------

/** BreakdownRule: one rule per group × resource × verb (× name), and per URL × verb. */
export function breakdownRule(rule: PolicyRule): PolicyRule[] {
  const out: PolicyRule[] = [];
  for (const group of rule.apiGroups ?? []) {
    for (const resource of rule.resources ?? []) {
      for (const verb of rule.verbs) {
        const names = rule.resourceNames ?? [];
        if (names.length > 0) {
          for (const n of names) out.push({ apiGroups: [group], resources: [resource], verbs: [verb], resourceNames: [n] });
        } else {
          out.push({ apiGroups: [group], resources: [resource], verbs: [verb] });
        }
      }
    }
  }
  for (const url of rule.nonResourceURLs ?? []) for (const verb of rule.verbs) out.push({ nonResourceURLs: [url], verbs: [verb] });
  return out;
}

function resourceCoversAll(set: readonly string[] | undefined, want: readonly string[] | undefined): boolean {
  if (has(set, ALL)) return true;
  return (want ?? []).every((r) => {
    if (has(set, r)) return true;
    const slash = r.indexOf('/');
    return slash >= 0 && has(set, `*/${r.slice(slash + 1)}`);
  });
}

function nonResourceURLsCoversAll(set: readonly string[] | undefined, want: readonly string[] | undefined): boolean {
  return (want ?? []).every((w) => (set ?? []).some((o) => o === ALL || o === w || (o.endsWith('*') && w.startsWith(o.slice(0, -1)))));
}

function ruleCovers(owner: PolicyRule, sub: PolicyRule): boolean {
  const verbs = has(owner.verbs, ALL) || hasAll(owner.verbs, sub.verbs);
  const groups = has(owner.apiGroups, ALL) || hasAll(owner.apiGroups, sub.apiGroups);
  const resources = resourceCoversAll(owner.resources, sub.resources);
  const urls = nonResourceURLsCoversAll(owner.nonResourceURLs, sub.nonResourceURLs);
  const ownerNames = owner.resourceNames ?? [];
  const subNames = sub.resourceNames ?? [];
  const names = subNames.length === 0 ? ownerNames.length === 0 : ownerNames.length === 0 || hasAll(ownerNames, subNames);
  return verbs && groups && resources && names && urls;
}

/** Covers: whether `owner` rules cover every part of `servant` rules, and the parts they do not. */
export function covers(owner: readonly PolicyRule[], servant: readonly PolicyRule[]): { covered: boolean; missing: PolicyRule[] } {
  const missing: PolicyRule[] = [];
  for (const rule of servant) {
    for (const part of breakdownRule(rule)) if (!owner.some((o) => ruleCovers(o, part))) missing.push(part);
  }
  return { covered: missing.length === 0, missing };
}

/** CompactRules: simple rules (one group, one resource, at most one name) of the same target merge their verbs. */
export function compactRules(rules: readonly PolicyRule[]): PolicyRule[] {
  const out: PolicyRule[] = [];
  const simple = new Map<string, PolicyRule>();
  for (const r of rules) {
    const names = r.resourceNames ?? [];
    const isSimple = names.length <= 1 && (r.nonResourceURLs ?? []).length === 0 && r.apiGroups?.length === 1 && r.resources?.length === 1;
    if (!isSimple) {
      out.push(r);
      continue;
    }
    const key = JSON.stringify([r.apiGroups![0], r.resources![0], names.length > 0, names[0] ?? '']);
    const existing = simple.get(key);
    if (existing) existing.verbs.push(...r.verbs);
    else simple.set(key, { ...structuredClone(r), verbs: [...r.verbs] });
  }
  return [...out, ...simple.values()];
}

const quoteList = (l: readonly string[]): string => `[${l.map(goQuote).join(' ')}]`;

/** CompactString: `{APIGroups:[""], Resources:["pods"], Verbs:["get"]}`, fields present only when set. */
export function compactString(r: PolicyRule): string {
  const parts: string[] = [];
  if (r.apiGroups?.length) parts.push(`APIGroups:${quoteList(r.apiGroups)}`);
  if (r.resources?.length) parts.push(`Resources:${quoteList(r.resources)}`);
  if (r.nonResourceURLs?.length) parts.push(`NonResourceURLs:${quoteList(r.nonResourceURLs)}`);
  if (r.resourceNames?.length) parts.push(`ResourceNames:${quoteList(r.resourceNames)}`);
  if (r.verbs.length) parts.push(`Verbs:${quoteList(r.verbs)}`);
  return `{${parts.join(', ')}}`;
}

/** Go's %q of a []string. */
export { quoteList as goQuoteList };
