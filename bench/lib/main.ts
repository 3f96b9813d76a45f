/**
 * A scenario run by itself (`node --import tsx bench/scenarios/X.ts ARGS`): its result as one JSON
 * line, or the error and exit status 1.
 */
export function runWhenMain(moduleUrl: string, run: (args: readonly string[]) => Promise<unknown>): void {
  if (moduleUrl !== `file://${process.argv[1]}`) return;
  run(process.argv.slice(2)).then(
    (r) => console.log(JSON.stringify(r)),
    (e) => {
      console.error(e);
      process.exit(1);
    },
  );
}
