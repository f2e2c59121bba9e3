// Making sure a container's image is on the node before it is created (kubelet's
// pkg/kubelet/images EnsureImageExists), for runtimes with an image service:
//   - imagePullPolicy (defaulted as the API server does: Always for `:latest` or no tag, else
//     IfNotPresent) decides whether to pull; Never with a missing image is ErrImageNeverPull;
//   - a failed pull is ErrImagePull with the runtime's reason, and starts a back-off (10 s doubling
//     to 5 min) per pod and image during which the container waits as ImagePullBackOff;
//   - pulls run one at a time when serialized (--serialize-image-pulls) and are rate limited by a
//     token bucket (--registry-qps, --registry-burst; qps 0: unlimited): as kubelet's throttled
//     image service, a pull finding no token fails at once with 'pull QPS exceeded' (ErrImagePull,
//     then the back-off) instead of waiting;
//   - credentials: the pod's imagePullSecrets, then the credential provider plugins
//     (credentialprovider/); none: an anonymous pull; else each login in turn until one works.
// Events are reported through the caller's callback, worded as kubelet words them.
import { Backoff, formatDuration, KUBELET_BACKOFF, type BackoffOptions } from './backoff.js';
import { repositoryOf, secretsKeyring, unionKeyring, type AuthConfig, type DockerKeyring } from './credentialprovider/keyring.js';
import type { ImageService, PodSandboxConfig } from './runtime/runtime.js';
import type { Container, Pod } from './types.js';

export type PullPolicy = 'Always' | 'IfNotPresent' | 'Never';

export type ImageEvent = (type: 'Normal' | 'Warning', reason: string, message: string) => void;

export type EnsureResult =
  | { ok: true; imageRef: string }
  | { ok: false; reason: 'ErrImagePull' | 'ImagePullBackOff' | 'ErrImageNeverPull'; message: string; retryAfterMs?: number };

export interface ImagePullerOptions {
  images: ImageService;
  /** --serialize-image-pulls (default true). */
  serialize?: boolean;
  /** --registry-qps (default 5; 0: unlimited) and --registry-burst (default 10). */
  qps?: number;
  burst?: number;
  backoff?: BackoffOptions;
  now?: () => number;
  /** The agent's own credentials (the credential provider plugins); tried after the pod's pull secrets. */
  keyring?: DockerKeyring;
  /** The Secrets named by the pod's imagePullSecrets that could be read. */
  pullSecrets?: (pod: Pod) => Promise<Record<string, unknown>[]>;
}

/** The API server's default pull policy for an image reference. */
export function defaultPullPolicy(image: string): PullPolicy {
  if (image.includes('@')) return 'IfNotPresent';
  const lastSlash = image.lastIndexOf('/');
  const colon = image.indexOf(':', lastSlash + 1);
  const tag = colon < 0 ? '' : image.slice(colon + 1);
  return tag === '' || tag === 'latest' ? 'Always' : 'IfNotPresent';
}

export function pullPolicyOf(c: Container): PullPolicy {
  const p = c.imagePullPolicy;
  return p === 'Always' || p === 'IfNotPresent' || p === 'Never' ? p : defaultPullPolicy(c.image);
}

/** A token bucket holding `burst` tokens, refilled at `qps` per second. */
class TokenBucket {
  private tokens: number;
  private last: number;
  constructor(
    private readonly qps: number,
    private readonly burst: number,
    private readonly now: () => number,
  ) {
    this.tokens = burst;
    this.last = now();
  }

  /** Takes a token if one is free now (client-go's TryAccept: no waiting). */
  tryTake(): boolean {
    const t = this.now();
    this.tokens = Math.min(this.burst, this.tokens + ((t - this.last) / 1000) * this.qps);
    this.last = t;
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }
}

export class ImagePuller {
  private readonly backoff: Backoff;
  private readonly now: () => number;
  private readonly bucket: TokenBucket | undefined;
  private queue: Promise<unknown> = Promise.resolve();
  /** When the last pull of each pod/image key failed (ms). */
  private readonly lastFailure = new Map<string, number>();

  constructor(private readonly o: ImagePullerOptions) {
    this.now = o.now ?? Date.now;
    this.backoff = new Backoff({ ...(o.backoff ?? KUBELET_BACKOFF), now: this.now });
    const qps = o.qps ?? 5;
    this.bucket = qps > 0 ? new TokenBucket(qps, Math.max(1, o.burst ?? 10), this.now) : undefined;
  }

  /** Ensures the image of container `c` of `pod` is present per its pull policy. */
  async ensure(pod: Pod, c: Container, sandboxConfig: PodSandboxConfig | undefined, event: ImageEvent): Promise<EnsureResult> {
    const image = c.image;
    const policy = pullPolicyOf(c);
    const present = policy === 'Always' ? undefined : await this.o.images.imageStatus(image);
    if (present) {
      event('Normal', 'Pulled', `Container image "${image}" already present on machine`);
      return { ok: true, imageRef: present.id };
    }
    if (policy === 'Never') {
      const message = `Container image "${image}" is not present with pull policy of Never`;
      event('Warning', 'ErrImageNeverPull', message);
      return { ok: false, reason: 'ErrImageNeverPull', message };
    }
    const key = `${pod.metadata.uid}/${image}`;
    const b = this.backoff.inBackoff(key, this.lastFailure.get(key) ?? 0);
    if (b.wait) {
      const message = `Back-off pulling image "${image}"`;
      event('Normal', 'BackOff', message);
      return { ok: false, reason: 'ImagePullBackOff', message, retryAfterMs: b.remainingMs };
    }
    event('Normal', 'Pulling', `Pulling image "${image}"`);
    const started = this.now();
    try {
      const credentials = await this.credentialsFor(pod, image);
      const imageRef = await this.serialized(async () => {
        // kubelet's throttled image service refuses a pull beyond the rate (ErrImagePull, then the back-off)
        if (this.bucket && !this.bucket.tryTake()) throw new Error('pull QPS exceeded');
        return this.pullWith(image, sandboxConfig, credentials);
      });
      this.lastFailure.delete(key);
      event('Normal', 'Pulled', `Successfully pulled image "${image}" in ${formatDuration(this.now() - started)}`);
      return { ok: true, imageRef };
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      event('Warning', 'Failed', `Failed to pull image "${image}": ${message}`);
      const failedAt = this.now();
      this.lastFailure.set(key, failedAt);
      this.backoff.next(key, failedAt);
      // Synced again soon, the container then shows ImagePullBackOff until the back-off ends.
      return { ok: false, reason: 'ErrImagePull', message, retryAfterMs: 1000 };
    }
  }

  /** The logins for the image's repository: the pod's pull secrets first, then the agent's keyring. */
  private async credentialsFor(pod: Pod, image: string): Promise<AuthConfig[]> {
    if (!this.o.keyring && !this.o.pullSecrets) return [];
    const secrets = this.o.pullSecrets ? await this.o.pullSecrets(pod) : [];
    return unionKeyring(secretsKeyring(secrets), this.o.keyring).lookup(repositoryOf(image));
  }

  /** Anonymously without credentials, else with each in turn until one works (kubelet's PullImage). */
  private async pullWith(image: string, sandboxConfig: PodSandboxConfig | undefined, credentials: AuthConfig[]): Promise<string> {
    if (credentials.length === 0) return this.o.images.pullImage(image, sandboxConfig);
    const messages: string[] = [];
    for (const auth of credentials) {
      try {
        return await this.o.images.pullImage(image, sandboxConfig, auth);
      } catch (err) {
        const m = err instanceof Error ? err.message : String(err);
        if (!messages.includes(m)) messages.push(m);
      }
    }
    throw new Error(messages.length === 1 ? messages[0]! : `[${messages.join(', ')}]`);
  }

  /** Forgets the back-offs of a pod (it was deleted). */
  forgetPod(uid: string): void {
    this.backoff.forget((k) => k.startsWith(`${uid}/`));
    for (const k of [...this.lastFailure.keys()]) if (k.startsWith(`${uid}/`)) this.lastFailure.delete(k);
  }

  private serialized<T>(pull: () => Promise<T>): Promise<T> {
    if (this.o.serialize === false) return pull();
    const run = this.queue.then(pull, pull);
    this.queue = run.catch(() => undefined);
    return run;
  }
}
