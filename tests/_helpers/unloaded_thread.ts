/**
 * A query thread's stand-in that never finishes loading: its messages wait
 * for good, as a Worker's would behind a module that hangs.
 *
 * @module
 */
await new Promise(() => {});
