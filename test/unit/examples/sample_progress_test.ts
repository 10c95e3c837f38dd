import { sampleProgress } from "../../../examples/progress.ts";
import { assertEquals } from "../../util/assert.ts";

Deno.test("sampleProgress: a line per tenth of the sample with the time and what is left; a TTY counter cleared at the end", () => {
  let t = 0;
  const lines: string[] = [];
  const plain = sampleProgress({ tty: false, write: (s) => lines.push(s), now: () => t });
  for (let k = 1; k <= 25; k++) {
    t = k * 1500;
    plain(k, 25);
  }
  assertEquals(lines, [
    "sampling: 3/25 characters, 5 s, about 33 s left\n",
    "sampling: 6/25 characters, 9 s, about 29 s left\n",
    "sampling: 9/25 characters, 14 s, about 24 s left\n",
    "sampling: 12/25 characters, 18 s, about 20 s left\n",
    "sampling: 15/25 characters, 23 s, about 15 s left\n",
    "sampling: 18/25 characters, 27 s, about 11 s left\n",
    "sampling: 21/25 characters, 32 s, about 6 s left\n",
    "sampling: 24/25 characters, 36 s, about 2 s left\n",
    "sampling: 25/25 characters, 38 s\n",
  ]);
  const drawn: string[] = [];
  const tty = sampleProgress({ tty: true, write: (s) => drawn.push(s), now: () => 0 });
  tty(1, 2);
  tty(2, 2);
  assertEquals(drawn, ["\r\x1b[2Ksampling: 1/2 characters, 0 s, about 0 s left", "\r\x1b[2K"]);
});
