/**
 * Plain-text error answers as Go's http.Error writes them, and the "close this connection" signal that
 * Go derives from a 'Connection: close' header: HTTP/1.1 closes the socket after the response, HTTP/2
 * sends GOAWAY and lets the session's other streams finish.
 */
import type { ApiRequest, ApiResponse } from './authn.js';

/** Go's http.Error: text/plain, nosniff, the text and a newline. */
export function writeHttpError(res: ApiResponse, code: number, text: string): void {
  const body = `${text}\n`;
  res.statusCode = code;
  res.setHeader('Content-Type', 'text/plain; charset=utf-8');
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.setHeader('Content-Length', Buffer.byteLength(body));
  res.end(body);
}

export function isHttp2(req: ApiRequest): boolean {
  return 'stream' in req && req.httpVersionMajor === 2;
}

/**
 * Makes this response the connection's last, as Go does for a 'Connection: close' header. HTTP/1.1 gets
 * 'Connection: close' (call before the headers go out) and the socket closes after the response. HTTP/2,
 * where connection headers are forbidden, gets a GOAWAY now: the client sends later requests on a new
 * connection, while this stream and the others in flight complete.
 */
export function closeConnectionAfterResponse(res: ApiResponse): void {
  if ('stream' in res) {
    const session = res.stream.session;
    if (session && !session.closed && !session.destroyed) session.close();
    return;
  }
  if (!res.headersSent) res.setHeader('Connection', 'close');
}
