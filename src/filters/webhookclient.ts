/**
 * The JSON POST that the authentication and authorization webhooks share (Kubernetes' rest client for a
 * kubeconfig-format webhook): bearer token or basic auth, the kubeconfig's TLS settings, a timeout, and Go's
 * wording of failures. A WebhookCallError says whether the call may be retried (connection errors, 429, 5xx).
 */
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { loadWebhookConfig, type WebhookTarget } from './audit/webhook.js';
import { outgoingTraceparent } from '../util/tracecontext.js';
import { dialOptions } from '../util/dial.js';

type Json = Record<string, any>;

/** Reads a webhook's kubeconfig-format file; errors name `option` (e.g. --authorization-webhook-config-file). */
export function loadWebhookFor(option: string, path: string): WebhookTarget {
  try {
    return loadWebhookConfig(path);
  } catch (e) {
    const inner = (e as Error).cause instanceof Error ? ((e as Error).cause as Error).message : (e as Error).message;
    throw new Error(`${option} ${path}: ${inner.replace(/^initializing audit webhook: /, '')}`, { cause: e });
  }
}

export class WebhookCallError extends Error {
  constructor(
    message: string,
    readonly retriable: boolean,
  ) {
    super(message);
  }
}

export function postJSON(target: WebhookTarget, body: string, timeoutMs: number): Promise<Json> {
  const url = target.url;
  const https = url.protocol === 'https:';
  const headers: Record<string, string | number> = {
    'Content-Type': 'application/json',
    Accept: 'application/json',
    'Content-Length': Buffer.byteLength(body),
  };
  if (target.token) headers['Authorization'] = `Bearer ${target.token}`;
  else if (target.basicAuth) headers['Authorization'] = `Basic ${target.basicAuth}`;
  const traceparent = outgoingTraceparent();
  if (traceparent) headers['traceparent'] = traceparent;
  return new Promise((resolve, reject) => {
    const opts = {
      method: 'POST',
      headers,
      timeout: timeoutMs,
      ...(https
        ? {
            ...(target.ca ? { ca: target.ca } : {}),
            ...(target.cert ? { cert: target.cert } : {}),
            ...(target.key ? { key: target.key } : {}),
            ...(target.servername ? { servername: target.servername } : {}),
            rejectUnauthorized: !target.insecureSkipTLSVerify,
          }
        : {}),
      ...(target.dial ? dialOptions(target.dial, https) : {}),
    };
    const req = (https ? httpsRequest : httpRequest)(url, opts, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        const code = res.statusCode ?? 0;
        if (code < 200 || code > 299) {
          reject(new WebhookCallError(`the server responded with the status code ${code} but did not return more information`, code === 429 || code >= 500));
          return;
        }
        try {
          resolve(JSON.parse(text) as Json);
        } catch (e) {
          reject(new WebhookCallError(`decoding the webhook's answer: ${(e as Error).message}`, false));
        }
      });
      res.on('error', (e) => reject(new WebhookCallError(e.message, true)));
    });
    req.on('timeout', () => req.destroy(new Error(`Post "${url.href}": context deadline exceeded`)));
    req.on('error', (e) => reject(e instanceof WebhookCallError ? e : new WebhookCallError(`Post "${url.href}": ${e.message}`, true)));
    req.end(body);
  });
}
