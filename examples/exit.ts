/**
 * End a Deno process that used WebGPU in rank workers, without its teardown.
 *
 * NOTE: Deno 2.9 on Mesa lavapipe sometimes segfaults while exiting after a run with rank
 * workers (about 2 runs in 12 of `npm start`, after every file was written and the last
 * line printed; `Deno.exit` alone did not avoid it). libc's `_exit` skips the atexit
 * handlers and thread teardown where it happens. Falls back to `Deno.exit` where libc
 * cannot be opened (not Linux, or no --allow-ffi).
 */
export function exitNow(code: number): never {
  try {
    const libc = Deno.dlopen("libc.so.6", { _exit: { parameters: ["i32"], result: "void" } });
    libc.symbols._exit(code);
  } catch {
    // fall through
  }
  Deno.exit(code);
}
