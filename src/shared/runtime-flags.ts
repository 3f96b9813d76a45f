/**
 * The Node flags the server runs with. They are written where it is started (the systemd unit's
 * ExecStart, `npm start`, the `fleetxds` command's shebang) and given by the test and benchmark
 * launcher; test/app/lifecycle.test.ts checks that each of those carries these.
 *
 * --max-semi-space-size=16: V8 sizes the young generation from the machine's memory (on a 24 GB
 * VM up to 64 MB per semi-space, about 134 MB committed once a burst of allocation has grown it),
 * and the pages stay resident: most of that is RSS that no held stream or poll uses. At 16 MB,
 * measured side by side with 5,000 ADS streams (100 services): 38-41 KB RSS per stream instead of
 * 58, push CPU and p99 within run-to-run spread; 10,000 held REST polls 13 KB each instead of 20;
 * the cold start of 10,000 services unchanged within its spread.
 */
export const SERVER_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=16'];
