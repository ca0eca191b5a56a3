/**
 * Tests of the query benchmark's entry generator (bench/query/generate.ts):
 * determinism, the level mix, the user cardinality, the word list that lets
 * the benchmark pick an absent word, and entries the endpoint accepts.
 */
import assert from "node:assert/strict";
import {
  canOccur,
  createGenerator,
  type GeneratedEntry,
  plantWord,
  USERS,
  WORDS,
} from "../../../bench/query/generate.ts";
import { validateEntry } from "../../../routes/schema.ts";

function take(seed: number, n: number): GeneratedEntry[] {
  const generator = createGenerator(seed);
  return Array.from({ length: n }, () => generator.next());
}

Deno.test("the same seed gives the same sequence, another seed another", () => {
  const first = take(7, 1000);
  assert.deepEqual(take(7, 1000), first);
  const other = take(8, 1000);
  const same = other.filter((e, i) =>
    JSON.stringify(e) === JSON.stringify(first[i])
  );
  assert.equal(same.length, 0);
});

Deno.test("levels are 85 % info, 10 % warning, 4 % error, 1 % critical within 1 point over 100,000 entries", () => {
  const counts: Record<string, number> = {};
  for (const entry of take(1, 100_000)) {
    counts[entry.level] = (counts[entry.level] ?? 0) + 1;
  }
  const expected = { info: 85, warning: 10, error: 4, critical: 1 };
  assert.deepEqual(Object.keys(counts).sort(), Object.keys(expected).sort());
  for (const [level, percent] of Object.entries(expected)) {
    const share = counts[level]! / 1000;
    assert.ok(
      Math.abs(share - percent) <= 1,
      `${level}: ${share} %, expected ${percent} ± 1 %`,
    );
  }
});

Deno.test("userId takes about 10,000 values over 100,000 entries, sessions repeat per user", () => {
  const users = new Set<string>();
  const sessionsOfUser = new Map<string, Set<string>>();
  for (const { context } of take(2, 100_000)) {
    assert.match(context.userId, /^user_\d+$/);
    assert.ok(Number(context.userId.slice(5)) < USERS);
    users.add(context.userId);
    const sessions = sessionsOfUser.get(context.userId) ?? new Set();
    sessions.add(context.traceId);
    sessionsOfUser.set(context.userId, sessions);
  }
  assert.ok(users.size >= 9_900 && users.size <= USERS, `${users.size} users`);
  // 100,000 entries span two session periods: at most two sessions a user.
  const most = Math.max(...[...sessionsOfUser.values()].map((s) => s.size));
  assert.ok(most <= 2, `a user had ${most} sessions`);
});

Deno.test("every run of letters in an entry is a listed word or inside a hex id", () => {
  const words = new Set(WORDS);
  const unlisted = new Set<string>();
  for (const entry of take(3, 20_000)) {
    const text = JSON.stringify(entry).toLowerCase();
    for (const run of text.match(/[a-z]+/g) ?? []) {
      if (!words.has(run) && !/^[a-f]+$/.test(run)) unlisted.add(run);
    }
  }
  assert.deepEqual([...unlisted], []);
  assert.ok(WORDS.includes("checkout") && WORDS.includes("production"));
});

Deno.test("a word canOccur rejects is found only in the entry it was planted in", () => {
  for (const word of ["checkout", "Payment", "face", "4f9a", "ign"]) {
    assert.equal(canOccur(word), true, word);
  }
  const word = "zanzibar";
  assert.equal(canOccur(word), false);
  const entries = take(4, 20_000);
  assert.ok(entries.every((e) => !JSON.stringify(e).includes(word)));
  const planted = plantWord(entries[12_345]!, word);
  assert.equal(planted, entries[12_345]);
  assert.match(planted.data.message, / zanzibar$/);
  const holders = entries.filter((e) => JSON.stringify(e).includes(word));
  assert.deepEqual(holders, [planted]);
});

Deno.test("entries are accepted by the endpoint's schema once the caller sets projectId", () => {
  for (const entry of take(5, 2000)) {
    assert.equal(entry.projectId, undefined);
    const body = { ...entry, projectId: "AAAAAAAAAAAAAAAAAAAAAA" };
    const checked = validateEntry(JSON.parse(JSON.stringify(body)));
    assert.ok(!Array.isArray(checked), JSON.stringify(body));
  }
});

Deno.test("status and durationMs repeat the numbers the message states", () => {
  let withStatus = 0;
  let withDuration = 0;
  for (const { data, level } of take(6, 5000)) {
    if (data.status !== undefined) {
      withStatus++;
      assert.ok(data.message.includes(String(data.status)), data.message);
      assert.equal(data.status >= 400, level !== "info", data.message);
    }
    if (data.durationMs !== undefined) {
      withDuration++;
      assert.ok(data.message.includes(`${data.durationMs} ms`), data.message);
    }
  }
  assert.ok(withStatus > 500, `${withStatus} entries with a status`);
  assert.ok(withDuration > 500, `${withDuration} entries with a duration`);
});

Deno.test("entries vary: many distinct titles and messages, devices with and without appid", () => {
  const entries = take(9, 10_000);
  const titles = new Set(entries.map((e) => e.data.title));
  const messages = new Set(entries.map((e) => e.data.message));
  assert.ok(titles.size >= 20, `${titles.size} titles`);
  assert.ok(messages.size >= 9_500, `${messages.size} distinct messages`);
  assert.ok(entries.some((e) => e.appid !== undefined));
  assert.ok(entries.some((e) => e.appid === undefined));
  assert.ok(
    entries.some((e) => /https:\/\/\S+\/\d+\?page=\d+/.test(e.data.message)),
  );
  assert.ok(
    entries.some((e) => /\/[a-z0-9]+\/[a-z0-9]+\/\d+/.test(e.data.message)),
  );
});
