/**
 * The Node flags the server runs with. They are written where it is started (the systemd unit's
 * ExecStart, `npm start`, the `fleetxds` command's shebang) and given by the test and benchmark
 * launcher; test/app/lifecycle.test.ts checks that each of those carries these.
 *
 * --max-semi-space-size=16: V8 sizes the young generation from the machine's memory, and once a
 * burst of allocation has grown it the pages stay resident: RSS that no held stream or poll uses.
 * A fixed, smaller young generation keeps memory per stream and per held poll down without costing
 * push CPU or latency (`npm run bench` compares them).
 */
export const SERVER_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=16'];
