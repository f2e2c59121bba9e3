/**
 * The authorizer chain of --authorization-mode, in the order given, as kube-apiserver's authorizer config:
 * AlwaysAllow, AlwaysDeny, ABAC (--authorization-policy-file), Webhook (--authorization-webhook-*), RBAC, Node.
 */
import type { Registry } from '../../registry/registry.js';
import type { AccessAuthorizer } from '../../registry/kinds/authorization/attributes.js';
import type { RuleResolver } from '../../registry/kinds/rbac/resolver.js';
import { abacAuthorizer, loadPolicyFile } from './abac.js';
import { nodeAuthorizer } from './node.js';
import { rbacAuthorizer } from './rbac.js';
import { webhookAuthorizer } from './webhook.js';
import type { Dialer } from '../../util/dial.js';
import { alwaysAllowAuthorizer, alwaysDenyAuthorizer, unionAuthorizer } from './union.js';

export { alwaysAllowAuthorizer, alwaysDenyAuthorizer, unionAuthorizer } from './union.js';

export interface AuthorizerConfig {
  modes: readonly string[];
  policyFile?: string;
  webhook?: { configFile?: string; version: string; authorizedTTLMs: number; unauthorizedTTLMs: number; dial?: Dialer };
  registry: Registry;
  resolver: RuleResolver;
}

export interface AuthorizerChain {
  authorizer: AccessAuthorizer;
  /** Ends the watches the Node authorizer keeps. */
  stop(): void;
}

/** kube-apiserver's checks of the mode list against the mode options, with its messages. */
export function validateAuthorizationConfig(modes: readonly string[], policyFile: string | undefined, webhookConfigFile: string | undefined): void {
  if (modes.includes('ABAC') && !policyFile) throw new Error("authorization-mode ABAC's authorization policy file not passed");
  if (!modes.includes('ABAC') && policyFile) throw new Error('cannot specify --authorization-policy-file without mode ABAC');
  if (modes.includes('Webhook') && !webhookConfigFile) throw new Error("authorization-mode Webhook's authorization config file not passed");
  if (!modes.includes('Webhook') && webhookConfigFile) throw new Error('cannot specify --authorization-webhook-config-file without mode Webhook');
}

export async function buildAuthorizerChain(cfg: AuthorizerConfig): Promise<AuthorizerChain> {
  const chain: AccessAuthorizer[] = [];
  const stops: (() => void)[] = [];
  for (const mode of cfg.modes) {
    switch (mode) {
      case 'AlwaysAllow':
        chain.push(alwaysAllowAuthorizer);
        break;
      case 'AlwaysDeny':
        chain.push(alwaysDenyAuthorizer);
        break;
      case 'ABAC':
        chain.push(abacAuthorizer(await loadPolicyFile(cfg.policyFile ?? '')));
        break;
      case 'Webhook':
        chain.push(webhookAuthorizer({ ...cfg.webhook!, configFile: cfg.webhook?.configFile ?? '' }));
        break;
      case 'RBAC':
        chain.push(rbacAuthorizer(cfg.resolver));
        break;
      case 'Node': {
        const node = nodeAuthorizer(cfg.registry);
        stops.push(() => node.stop());
        chain.push(node);
        break;
      }
      default:
        throw new Error(`authorization-mode ${JSON.stringify(mode)} is not implemented yet`);
    }
  }
  const single = chain.length === 1 ? chain[0] : undefined;
  return { authorizer: single ?? unionAuthorizer(chain), stop: () => stops.forEach((s) => s()) };
}

/** An authorizer whose chain is set after construction (the chain needs the registry, made after the server). */
export interface LateAuthorizer extends AccessAuthorizer {
  set(authorizer: AccessAuthorizer): void;
}

export function lateAuthorizer(initial: AccessAuthorizer = alwaysDenyAuthorizer): LateAuthorizer {
  let current = initial;
  return {
    authorize: (user, attrs) => current.authorize(user, attrs),
    rulesFor: (user, namespace) => current.rulesFor?.(user, namespace) ?? { resourceRules: [], nonResourceRules: [], incomplete: true },
    set(a) {
      current = a;
    },
  };
}
