// SPDY/3.1 for runtimes whose streams the agent serves itself (the process runtime): not served yet.
// Such upgrades are refused with 400, so kubectl 1.30 and later use WebSocket for exec and attach;
// kubectl before 1.30, and port-forward (which falls back to SPDY), need the CRI runtime, whose
// streaming server speaks SPDY itself.
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Runtime } from '../runtime/runtime.js';
import type { StreamingOptions, StreamTarget } from './streaming.js';
import { refuseUpgrade } from './streaming.js';

export const SPDY_UPGRADE = 'SPDY/3.1';

// No ': ' in it: kubectl reads an upgrade refusal as YAML first, and would find an empty Status in a key: value.
const NOT_SERVED = 'SPDY/3.1 is not served by the orch process runtime, use a WebSocket client (kubectl 1.30 or later) for exec and attach, or the CRI runtime';

export function serveSpdyExec(_req: IncomingMessage, socket: Duplex, _runtime: Runtime, _t: StreamTarget, _o: StreamingOptions): Promise<void> {
  refuseUpgrade(socket, 400, NOT_SERVED);
  return Promise.resolve();
}

export const serveSpdyPortForward = serveSpdyExec;
