/** Run credentials: distinct users and keys per slot, the server block (join tokens: join_token_test.ts). */
import { assert, assertEquals } from "../../../util/assert.ts";
import {
  assignRelay,
  createRunCredentials,
  deriveCastKey,
  deriveRankKey,
  relayCredentials,
  serverAuthorization,
} from "../../../../src/distributed/nats/credentials.ts";

Deno.test("createRunCredentials: per-slot users, passwords and keys differ, and each key derives from the run key", async () => {
  const c = await createRunCredentials(3);
  assert(/^[a-z0-9]{16}$/.test(c.run), `run id ${c.run}`);
  const users = new Set([c.coordinator.user, ...c.ranks.map((r) => r.user)]);
  const passes = new Set([c.coordinator.pass, ...c.ranks.map((r) => r.pass)]);
  assertEquals(
    [users.size, passes.size, new Set(c.ranks.map((r) => r.key)).size],
    [4, 4, 3],
    "distinct users, passwords, keys",
  );
  for (const r of c.ranks) assertEquals(r.key, await deriveRankKey(c.runKey, r.rank), `rank ${r.rank}'s key`);
  const other = await createRunCredentials(1);
  assert(other.run !== c.run && other.runKey !== c.runKey, "two runs share nothing");
});

Deno.test("serverAuthorization: rank k may publish only under flodl.<run>.r<k>.> and hear only flodl.<run>.to.r<k> and the cast", async () => {
  const c = await createRunCredentials(3, "run0042");
  assignRelay(c, 2, [0]);
  const text = serverAuthorization(c);
  const line = (user: string) => text.split("\n").find((l) => l.includes(`user: "${user}"`)) ?? "";
  assert(
    line(c.ranks[1].user).includes(
      `publish: { allow: ["flodl.run0042.r1.>"] }, subscribe: { allow: ["flodl.run0042.to.r1","flodl.run0042.cast"] }`,
    ),
    line(c.ranks[1].user),
  );
  // A relay slot hears its members' frames, not the cast (it adopts nothing), and its token holds no cast key.
  assert(
    line(c.ranks[2].user).includes(`subscribe: { allow: ["flodl.run0042.to.r2","flodl.run0042.r0.relay"] }`),
    line(c.ranks[2].user),
  );
  assertEquals(relayCredentials(c, 2).cast, undefined, "a relay's token has no cast key");
  for (const r of c.ranks) assertEquals(r.cast, await deriveCastKey(c.runKey), `slot ${r.rank}'s cast key`);
  assert(line(c.coordinator.user).includes(`publish: { allow: ["flodl.run0042.>"] }`), line(c.coordinator.user));
  assert(line(c.ranks[0].user).includes(`password: "${c.ranks[0].pass}"`), "passwords in the block");
});

Deno.test("createRunCredentials: a bad slot count or run id is refused with its value", async () => {
  const msg = (p: Promise<unknown>) => p.then(() => "accepted", (e) => `${e.name}: ${e.message}`);
  assertEquals(
    await msg(createRunCredentials(0)),
    "RangeError: createRunCredentials: slots must be an integer >= 1, got 0",
    "slots",
  );
  assertEquals(
    await msg(createRunCredentials(1, "Run.1")),
    `RangeError: NATS link: run id must be 4-64 of [a-z0-9], got "Run.1"`,
    "run",
  );
});
