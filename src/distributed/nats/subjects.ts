/**
 * Subject layout of one run on a NATS server. Every subject starts with `flodl.<run>.`,
 * so runs sharing a server never see each other, and a rank's permissions name only
 * its own two subjects (see `credentials.ts` for the server's authorization block).
 *
 * | subject                     | publisher   | subscriber  | carries                          |
 * |-----------------------------|-------------|-------------|----------------------------------|
 * | `flodl.<run>.to.r<k>`       | coordinator | rank k      | calls, beacons, bye              |
 * | `flodl.<run>.r<k>.out`      | rank k      | coordinator | results, errors, events, bye     |
 * | `flodl.<run>.r<k>.relay`    | rank k      | its relay   | its reduce frames (behind a relay) |
 * | `flodl.<run>.cast`          | coordinator | every rank  | values published once (cast.ts)  |
 *
 * A rank may publish only under `flodl.<run>.r<k>.>` and subscribe only to
 * `flodl.<run>.to.r<k>` and the cast subject; the coordinator may publish and subscribe under `flodl.<run>.>`.
 */

/** Run ids are lowercase letters and digits: safe in a subject token and a user name. */
const RUN_ID = /^[a-z0-9]{4,64}$/;

/**
 * Check a run id before it goes into subjects and user names.
 * @throws {RangeError} When it is not 4–64 lowercase letters or digits.
 */
export function checkRunId(run: string): string {
  if (!RUN_ID.test(run)) throw new RangeError(`NATS link: run id must be 4-64 of [a-z0-9], got "${run}"`);
  return run;
}

/** Coordinator → rank k: calls, beacons and the coordinator's bye. */
export function toRankSubject(run: string, rank: number): string {
  return `flodl.${run}.to.r${rank}`;
}

/** Rank k → coordinator: results, errors, events and the rank's bye. */
export function fromRankSubject(run: string, rank: number): string {
  return `flodl.${run}.r${rank}.out`;
}

/** Coordinator → every rank: values published once (the consensus of a reduce), cast.ts. */
export function castSubject(run: string): string {
  return `flodl.${run}.cast`;
}

/**
 * Rank k → the relay of its host: the rank's reduce frames, when it sits behind a relay.
 * Under the rank's own prefix, so its publish permission covers it; only the
 * relay that sums for rank k may subscribe (credentials.ts).
 */
export function relaySubject(run: string, rank: number): string {
  return `flodl.${run}.r${rank}.relay`;
}

/** Everything a rank may publish on (its own prefix; permissions use this). */
export function rankPublishPrefix(run: string, rank: number): string {
  return `flodl.${run}.r${rank}.>`;
}

/**
 * Prefix of the coordinator's reply inboxes (its presence probes are requests): inside the
 * run's subjects, which its permissions allow, where nats.js's default `_INBOX` is not.
 */
export function coordinatorInbox(run: string): string {
  return `flodl.${run}.inbox`;
}

/** Everything of the run (the coordinator's permissions). */
export function runPrefix(run: string): string {
  return `flodl.${run}.>`;
}
