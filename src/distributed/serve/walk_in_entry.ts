/**
 * The entry of a walk-in bundle (scripts/walk_in_bundle.ts): the rank joins first (its
 * module runs before the program's, so the rank role is entered before the program's top
 * level creates its builder), then the program module, which the bundler puts in place of
 * walk_in_program.ts.
 */
import "./walk_in_start.ts";
import "./walk_in_program.ts";
