// --profiling and --contention-profiling of the server: the handlers live in src/util/profiling.ts, shared
// with the agent's debugging handlers.
export { installDebugFlags, installProfiling } from '../util/profiling.js';
