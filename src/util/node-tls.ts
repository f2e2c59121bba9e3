/**
 * node:tls, loaded with require rather than an ES import (idle memory, issue 5): Node.js's ES module facade of a
 * built-in module reads every export once, and tls.rootCertificates is a getter that then builds and keeps the
 * 144 bundled root certificates as PEM strings (~240 KB of heap) that nothing here uses. Import these instead of
 * values from 'node:tls' (type imports from 'node:tls' are fine).
 */
import { createRequire } from 'node:module';

const tls = createRequire(import.meta.url)('node:tls') as typeof import('node:tls');

export const { checkServerIdentity, connect, createSecureContext, getCiphers } = tls;
