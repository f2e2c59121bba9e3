/**
 * Authentication, with Kubernetes' semantics: client certificates (verified against --client-ca-file by
 * the TLS layer; CN is the user, O entries the groups), then bearer tokens from --token-auth-file; the first
 * success wins and gains the group system:authenticated. A credential that is presented but fails (an
 * unknown token, a certificate the CA did not sign) is a 401 even when anonymous access is on; only a
 * request without credentials becomes system:anonymous. The user is reached through getUser(req).
 */
import { readFile } from 'node:fs/promises';
import { X509Certificate } from 'node:crypto';
import type { TLSSocket } from 'node:tls';

import {
  ALL_AUTHENTICATED,
  ALL_UNAUTHENTICATED,
  ANONYMOUS_USER,
  asRejection,
  getUser,
  isPromiseLike,
  requestContext,
  setUser,
  type ApiRequest,
  type ApiResponse,
  type Handler,
  type RequestContext,
  type UserInfo,
} from '../endpoints/http.js';
import { chainVerifier } from './authn/requestheader.js';

export { ALL_AUTHENTICATED, ALL_UNAUTHENTICATED, ANONYMOUS_USER, getUser, requestContext, setUser };
export type { ApiRequest, ApiResponse, Handler, RequestContext, UserInfo };

// ---- authenticators --------------------------------------------------------------------------------

export type AuthenticationResult =
  | { status: 'authenticated'; user: UserInfo }
  /** The request carries no credential of this kind. */
  | { status: 'absent' }
  /** A credential of this kind was presented and rejected. */
  | { status: 'failed'; reason: string };

export interface Authenticator {
  authenticate(req: ApiRequest): AuthenticationResult | Promise<AuthenticationResult>;
}

/** Bearer tokens of the Authorization header, parsed exactly as Kubernetes' bearertoken authenticator. */
export function bearerToken(req: ApiRequest): string | undefined {
  const header = req.headers.authorization;
  const auth = (Array.isArray(header) ? header[0] : header)?.trim() ?? '';
  if (auth === '') return undefined;
  const parts = auth.split(' ');
  if (parts.length < 2 || parts[0]!.toLowerCase() !== 'bearer') return undefined;
  const token = parts[1]!;
  return token === '' ? undefined : token;
}

/** Token → user, as loaded from a token file. */
export type TokenTable = ReadonlyMap<string, UserInfo>;

export function tokenAuthenticator(tokens: TokenTable): Authenticator {
  return {
    authenticate(req) {
      const token = bearerToken(req);
      if (token === undefined) return { status: 'absent' };
      const user = tokens.get(token);
      if (!user) return { status: 'failed', reason: 'invalid bearer token' };
      // Kubernetes drops the credential once used, so it is never proxied further.
      delete req.headers.authorization;
      return { status: 'authenticated', user: { ...user, groups: [...user.groups] } };
    },
  };
}

/**
 * The TLS socket under an HTTP/1.1 or HTTP/2 request; undefined in-process or over plain HTTP. (For HTTP/2,
 * req.socket is a proxy of the session's socket that forwards calls but answers `in` checks falsely.)
 */
function tlsSocketOf(req: ApiRequest): TLSSocket | undefined {
  const socket = req.socket as Partial<TLSSocket> | undefined;
  return typeof socket?.getPeerCertificate === 'function' ? (socket as TLSSocket) : undefined;
}

function asList(v: string | string[] | undefined): string[] {
  if (v === undefined) return [];
  return Array.isArray(v) ? v : [v];
}

/**
 * Client certificates. The TLS server must request them and verify against the client CA without
 * rejecting the handshake; `authorized` then says whether the CA signed the presented chain.
 */
export function clientCertAuthenticator(clientCAs?: readonly string[]): Authenticator {
  // With another CA trusted by the TLS layer (the front proxy's), the chain is checked against the client CAs here.
  const verify = clientCAs ? chainVerifier(clientCAs.map((pem) => new X509Certificate(pem))) : undefined;
  return {
    authenticate(req) {
      const socket = tlsSocketOf(req);
      if (!socket) return { status: 'absent' };
      const cert = socket.getPeerCertificate();
      if (!cert || Object.keys(cert).length === 0) return { status: 'absent' };
      if (!socket.authorized) {
        return { status: 'failed', reason: `verifying certificate: ${String(socket.authorizationError ?? 'unknown authority')}` };
      }
      const chained = verify?.(socket);
      if (chained && !chained.ok) return { status: 'failed', reason: `verifying certificate: ${chained.error ?? ''}` };
      const name = asList(cert.subject?.CN)[0];
      if (!name) return { status: 'failed', reason: 'client certificate has no common name' };
      return { status: 'authenticated', user: { name, groups: asList(cert.subject?.O) } };
    },
  };
}

/**
 * Tries each authenticator in order: the first success wins; otherwise a failure if any failed, else absent.
 * Successful users gain system:authenticated unless already in it or in system:unauthenticated.
 */
export function unionAuthenticator(authenticators: Authenticator[]): Authenticator {
  /** The union's answer once `r` is in: the result, or undefined to ask the next one. */
  const step = (r: AuthenticationResult, reasons: string[]): AuthenticationResult | undefined => {
    if (r.status === 'authenticated') return { status: 'authenticated', user: withAuthenticatedGroup(r.user) };
    if (r.status === 'failed') reasons.push(r.reason);
    return undefined;
  };
  const finish = (reasons: string[]): AuthenticationResult => (reasons.length > 0 ? { status: 'failed', reason: reasons.join(', ') } : { status: 'absent' });
  return {
    // Answers at once while every authenticator asked does (token file, client certificates): no promise.
    authenticate: (req) => firstAnswer(authenticators, (a) => a.authenticate(req), step, finish),
  };
}

/**
 * A union's answer: asks each member in turn until `step` makes an answer of what it said (undefined: ask the
 * next; `step` may note a reason in `reasons`), else `finish(reasons)`. Synchronous while every member answers
 * at once, so that the usual chain (token file, client certificates) makes no promise per request.
 */
export function firstAnswer<M, R, U>(
  members: readonly M[],
  ask: (m: M) => R | PromiseLike<R>,
  step: (r: R, reasons: string[]) => U | undefined,
  finish: (reasons: string[]) => U,
): U | Promise<U> {
  const reasons: string[] = [];
  for (let i = 0; i < members.length; i++) {
    const r = ask(members[i]!);
    if (isPromiseLike(r)) return firstAnswerLater(members, i, r, ask, step, finish, reasons);
    const done = step(r, reasons);
    if (done !== undefined) return done;
  }
  return finish(reasons);
}

/** firstAnswer from the first member that answered later (`pending`, the i-th) on. */
async function firstAnswerLater<M, R, U>(
  members: readonly M[],
  i: number,
  pending: PromiseLike<R>,
  ask: (m: M) => R | PromiseLike<R>,
  step: (r: R, reasons: string[]) => U | undefined,
  finish: (reasons: string[]) => U,
  reasons: string[],
): Promise<U> {
  const first = step(await pending, reasons);
  if (first !== undefined) return first;
  for (let j = i + 1; j < members.length; j++) {
    const done = step(await ask(members[j]!), reasons);
    if (done !== undefined) return done;
  }
  return finish(reasons);
}

function withAuthenticatedGroup(user: UserInfo): UserInfo {
  if (user.groups.includes(ALL_AUTHENTICATED) || user.groups.includes(ALL_UNAUTHENTICATED)) return user;
  return { ...user, groups: [...user.groups, ALL_AUTHENTICATED] };
}

export function anonymousUser(): UserInfo {
  return { name: ANONYMOUS_USER, groups: [ALL_UNAUTHENTICATED] };
}

// ---- token file --------------------------------------------------------------------------------------

/**
 * Reads a --token-auth-file: CSV records `token,user,uid[,"group1,group2"]`, more columns ignored, blank
 * lines skipped; a later duplicate token wins. Throws naming the file and line on a record with fewer than
 * three columns or a malformed quote.
 */
export async function loadTokenFile(path: string): Promise<Map<string, UserInfo>> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (e) {
    throw new Error(`--token-auth-file ${path}: cannot be read: ${(e as Error).message}`, { cause: e });
  }
  return parseTokenFile(text, path);
}

/** Parses token file contents; `path` only names the file in errors. */
export function parseTokenFile(text: string, path: string): Map<string, UserInfo> {
  const tokens = new Map<string, UserInfo>();
  for (const { line, fields } of parseCsv(text.replace(/^\uFEFF/, ''), path)) {
    if (fields.length < 3) {
      throw new Error(
        `--token-auth-file ${path}, line ${line}: a record needs at least 3 columns (token, user name, user uid), found ${fields.length}`,
      );
    }
    const [token, name, uid, groups] = fields as [string, string, string, string | undefined];
    if (token === '') continue;
    const user: UserInfo = { name, uid, groups: groups === undefined ? [] : groups.split(',').filter((g) => g !== '') };
    tokens.set(token, user);
  }
  return tokens;
}

interface CsvRecord {
  /** 1-based line where the record starts. */
  line: number;
  fields: string[];
}

/**
 * RFC 4180 CSV as Go's encoding/csv reads it with TrimLeadingSpace: quoted fields may hold commas,
 * newlines and doubled quotes; a quote inside an unquoted field is an error. Blank (or whitespace-only)
 * lines are skipped.
 */
function parseCsv(text: string, path: string): CsvRecord[] {
  const records: CsvRecord[] = [];
  let line = 1;
  let i = 0;
  const fail = (at: number, what: string): never => {
    throw new Error(`--token-auth-file ${path}, line ${at}: ${what}`);
  };
  while (i < text.length) {
    const blank = /^[ \t]*(\r?\n|$)/.exec(text.slice(i, text.indexOf('\n', i) + 1 || text.length));
    if (blank) {
      i += blank[0].length;
      line++;
      continue;
    }
    const start = line;
    const fields: string[] = [];
    for (;;) {
      while (text[i] === ' ' || text[i] === '\t') i++;
      let field = '';
      if (text[i] === '"') {
        i++;
        for (;;) {
          if (i >= text.length) fail(start, 'extraneous or missing " in quoted-field');
          const c = text[i];
          if (c === '"' && text[i + 1] === '"') {
            field += '"';
            i += 2;
          } else if (c === '"') {
            i++;
            break;
          } else {
            if (c === '\n') line++;
            field += c;
            i++;
          }
        }
        if (i < text.length && text[i] !== ',' && text[i] !== '\n' && text[i] !== '\r') {
          fail(line, 'extraneous or missing " in quoted-field');
        }
      } else {
        while (i < text.length && text[i] !== ',' && text[i] !== '\n' && !(text[i] === '\r' && text[i + 1] === '\n')) {
          if (text[i] === '"') fail(line, 'bare " in non-quoted-field');
          field += text[i];
          i++;
        }
      }
      fields.push(field);
      if (text[i] === ',') {
        i++;
        continue;
      }
      break;
    }
    records.push({ line: start, fields });
  }
  return records;
}

// ---- the filter ----------------------------------------------------------------------------------------

export interface AuthenticationDeps {
  authenticator: Authenticator;
  /** Requests without credentials become system:anonymous; otherwise they get 401. */
  anonymous: boolean;
}

/** The Status body Kubernetes answers a request it cannot authenticate with. */
export const UNAUTHORIZED_STATUS = {
  kind: 'Status',
  apiVersion: 'v1',
  metadata: {},
  status: 'Failure',
  message: 'Unauthorized',
  reason: 'Unauthorized',
  code: 401,
} as const;

/** Sets the request's user, or answers 401 with a Status and does not call `next`. */
export function withAuthentication(next: Handler, deps: AuthenticationDeps): Handler {
  const proceed = (req: ApiRequest, res: ApiResponse, result: AuthenticationResult): void | Promise<void> => {
    if (result.status === 'authenticated') {
      setUser(req, result.user);
    } else if (result.status === 'absent' && deps.anonymous) {
      setUser(req, anonymousUser());
    } else {
      const body = JSON.stringify(UNAUTHORIZED_STATUS) + '\n';
      res.statusCode = 401;
      res.setHeader('Content-Type', 'application/json');
      res.setHeader('X-Content-Type-Options', 'nosniff');
      res.setHeader('Content-Length', Buffer.byteLength(body));
      res.end(body);
      return;
    }
    return next(req, res);
  };
  // Not async itself: an authenticator that answers at once costs no promise; a throw is still a rejection.
  return (req, res) => {
    try {
      const result = deps.authenticator.authenticate(req);
      if (isPromiseLike(result)) return Promise.resolve(result).then((r) => proceed(req, res, r));
      return proceed(req, res, result);
    } catch (e) {
      return asRejection(e);
    }
  };
}
