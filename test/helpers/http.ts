// Small HTTP helpers for tests.
import { get } from 'node:http';

/** GETs http://127.0.0.1:<port><path> and parses the body as JSON. */
export function getJSON(port: number, path: string): Promise<unknown> {
  return new Promise((resolve, reject) => {
    get({ host: '127.0.0.1', port, path }, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => {
        try {
          resolve(JSON.parse(text));
        } catch (err) {
          reject(err instanceof Error ? err : new Error(String(err)));
        }
      });
    }).on('error', reject);
  });
}
