// How the launchers stop: the signals they pass on to what they run, and the end of their parent.

/** The signals a launcher passes on to the processes it started. */
export const STOP_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'];

/**
 * Calls `stop(signal)` on each of STOP_SIGNALS, and once with SIGTERM when the launcher's parent
 * goes away: `npx mediagen-emulator` runs the launcher under `sh -c`, and a SIGTERM to npx ends
 * npx and that shell without passing it on, so `kill $!` would otherwise leave the emulator
 * holding its port. Returns a function that stops listening.
 */
export function onStop(stop) {
  const handlers = STOP_SIGNALS.map((signal) => [signal, () => stop(signal)]);
  for (const [signal, handler] of handlers) process.on(signal, handler);
  const parent = process.ppid;
  const watch = setInterval(() => {
    if (process.ppid !== parent) {
      clearInterval(watch);
      stop('SIGTERM');
    }
  }, 200);
  watch.unref(); // the launcher's children keep it alive, not this
  return () => {
    clearInterval(watch);
    for (const [signal, handler] of handlers) process.removeListener(signal, handler);
  };
}
