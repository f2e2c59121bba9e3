/** What the health tests expect of /livez, /readyz and /healthz. */

/** kube-apiserver 1.23's post-start hook checks, in the order its health endpoints list them. */
export const POST_START_HOOKS = [
  'start-kube-apiserver-admission-initializer',
  'generic-apiserver-start-informers',
  'priority-and-fairness-config-consumer',
  'priority-and-fairness-filter',
  'bootstrap-controller',
  'rbac/bootstrap-roles',
  'scheduling/bootstrap-system-priority-classes',
  'priority-and-fairness-config-producer',
  'start-cluster-authentication-info-controller',
].map((h) => `poststarthook/${h}`);

/** A verbose health answer whose checks all passed: a `[+]<check> ok` line each, then `end`. */
export const passedLines = (checks: string[], end: string): string => `${checks.map((c) => `[+]${c} ok\n`).join('')}${end}\n`;
