// The runtime contract suite against the built-in process runtime.
import { ProcessRuntime } from '../../src/agent/runtime/process.js';
import { runtimeContract } from './runtime-contract.js';

runtimeContract('process runtime', async (options) => new ProcessRuntime({ allowPrivileged: options.allowPrivileged === true }));
