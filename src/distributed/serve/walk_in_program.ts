/**
 * Where the walk-in bundle puts the run's program module: the bundler
 * (scripts/walk_in_bundle.ts) resolves this module's import in walk_in_entry.ts to the
 * program, so this file itself is never in a bundle. Imported unbundled, it says so.
 */
throw new Error("walk_in_program.ts stands for the run's program in a walk-in bundle (scripts/walk_in_bundle.ts); it is not run itself");
