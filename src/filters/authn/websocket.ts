/**
 * Bearer tokens carried in a WebSocket subprotocol, as Kubernetes' request/websocket protocol authenticator
 * (browsers cannot set an Authorization header on a WebSocket): on an upgrade to websocket, a
 * Sec-WebSocket-Protocol entry `base64url.bearer.authorization.k8s.io.<token, unpadded base64url>` is a
 * bearer token for the same token authenticators. Another subprotocol must be offered too (one is echoed
 * back); the token's entry is removed once it authenticates.
 */
import type { ApiRequest } from '../../endpoints/http.js';
import type { AuthenticationResult, Authenticator } from '../authn.js';
import type { TokenAuthenticator } from './token.js';

export const BEARER_PROTOCOL_PREFIX = 'base64url.bearer.authorization.k8s.io.';

function headerList(v: string | string[] | undefined): string[] {
  if (v === undefined) return [];
  return Array.isArray(v) ? v : [v];
}

/** wsstream.IsWebSocketRequest: Connection names upgrade and Upgrade is websocket. */
export function isWebSocketRequest(req: ApiRequest): boolean {
  const connection = headerList(req.headers.connection).flatMap((v) => v.split(',')).map((t) => t.trim().toLowerCase());
  const upgrade = headerList(req.headers.upgrade)[0]?.trim().toLowerCase();
  return connection.includes('upgrade') && upgrade === 'websocket';
}

const BASE64URL = /^[A-Za-z0-9_-]*$/;

export function webSocketProtocolAuthenticator(tokens: TokenAuthenticator, apiAudiences: readonly string[]): Authenticator {
  return {
    async authenticate(req: ApiRequest): Promise<AuthenticationResult> {
      if (!isWebSocketRequest(req)) return { status: 'absent' };
      let token = '';
      let sawToken = false;
      const others: string[] = [];
      for (const value of headerList(req.headers['sec-websocket-protocol'])) {
        for (const raw of value.split(',')) {
          const protocol = raw.trim();
          if (!protocol.startsWith(BEARER_PROTOCOL_PREFIX)) {
            others.push(protocol);
            continue;
          }
          if (sawToken) return { status: 'failed', reason: 'multiple base64.bearer.authorization tokens specified' };
          sawToken = true;
          const encoded = protocol.slice(BEARER_PROTOCOL_PREFIX.length);
          if (!BASE64URL.test(encoded) || encoded.length % 4 === 1) {
            return { status: 'failed', reason: 'invalid base64.bearer.authorization token encoding' };
          }
          const decoded = Buffer.from(encoded, 'base64url');
          try {
            token = new TextDecoder('utf-8', { fatal: true }).decode(decoded);
          } catch {
            return { status: 'failed', reason: 'invalid base64.bearer.authorization token' };
          }
        }
      }
      if (token !== '' && others.length === 0) return { status: 'failed', reason: 'missing additional subprotocol' };
      if (token === '') return { status: 'absent' };
      const r = await tokens.authenticateToken(token, apiAudiences.length > 0 ? apiAudiences : undefined);
      if (r.status !== 'authenticated') return { status: 'failed', reason: r.status === 'failed' ? r.reason : 'invalid bearer token' };
      req.headers['sec-websocket-protocol'] = others.join(',');
      return { status: 'authenticated', user: r.user };
    },
  };
}
