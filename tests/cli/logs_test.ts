/**
 * `deno task logs`: the entries a project stored, as JSON or columns, with
 * their filters and limits, and `--follow`, run in-process against an
 * in-memory KV with their output captured.
 *
 * @module
 */
import assert from "node:assert/strict";
import { pendingBatchesPrefix } from "../../db/keys.ts";
import {
  harnessTest,
  postEntries,
  randomEntry,
  withHarness,
} from "../_helpers/harness.ts";
import {
  cli,
  create,
  follow,
  jsonLines,
  kvTest,
  threeKindsTest,
  withThreeKinds,
} from "../_helpers/cli.ts";

threeKindsTest(
  "logs --json prints one object per entry with its id, level, members, receipt time and authentication",
  async (h, project) => {
    const lines = jsonLines(
      await cli(h.kv, ["logs", project.projectId, "--json"], {
        clock: h.clock,
      }),
    );
    assert.equal(lines.length, 3);
    const [browser, app, server] = lines;
    assert.match(String(browser!.id), /^[0-9a-f]{28}$/);
    assert.equal(browser!.receivedAt, "2026-01-01T00:00:00.000Z");
    assert.equal(browser!.level, "info");
    assert.equal(browser!.auth, "origin");
    assert.equal(browser!.origin, "https://app.example.com");
    assert.equal("appid" in browser!, false);
    assert.deepEqual(browser!.data, { title: "from browser" });
    assert.deepEqual(browser!.device, { type: "browser", os: "Linux" });
    assert.equal(typeof browser!.context, "object");
    assert.equal(app!.auth, "appid");
    assert.equal(app!.appid, "com.example.app.ios");
    assert.equal(app!.receivedAt, "2026-01-01T00:00:01.000Z");
    assert.deepEqual(app!.context, { environment: "production", build: 42 });
    assert.equal(server!.auth, "signature");
    assert.equal(server!.device, "api-1");
    assert.equal(server!.level, "error");
  },
);

harnessTest(
  "logs prints the newest entries oldest first, as many as --limit",
  async (h) => {
    const { projectId } = await create(h.kv, "https://app.example.com");
    for (let n = 1; n <= 5; n++) {
      await h.post(randomEntry({ projectId, data: { n } }), {
        Origin: "https://app.example.com",
      });
      h.clock.advance(1000);
    }
    await h.process();
    const all = jsonLines(await cli(h.kv, ["logs", projectId, "--json"]));
    assert.deepEqual(all.map((l) => (l.data as { n: number }).n), [
      1,
      2,
      3,
      4,
      5,
    ]);
    const newest = jsonLines(
      await cli(h.kv, ["logs", projectId, "--limit", "2", "--json"]),
    );
    assert.deepEqual(newest.map((l) => (l.data as { n: number }).n), [4, 5]);
  },
);

Deno.test("logs --since and --until take durations back from now and ISO times", async (t) => {
  await withHarness(async (h) => {
    const { projectId } = await create(h.kv, "https://app.example.com");
    // Entries at 00:00, 00:10, 00:20 and 00:30.
    for (let n = 0; n < 4; n++) {
      await h.post(randomEntry({ projectId, data: { minute: n * 10 } }), {
        Origin: "https://app.example.com",
      });
      h.clock.advance(10 * 60_000);
    }
    await h.process();
    h.clock.set(Date.UTC(2026, 0, 1, 0, 35));
    const minutes = async (...args: string[]) =>
      jsonLines(
        await cli(h.kv, ["logs", projectId, "--json", ...args], {
          clock: h.clock,
        }),
      ).map((l) => (l.data as { minute: number }).minute);
    await t.step("--since 15m", async () => {
      assert.deepEqual(await minutes("--since", "15m"), [20, 30]);
    });
    await t.step("--since 1h", async () => {
      assert.deepEqual(await minutes("--since", "1h"), [0, 10, 20, 30]);
    });
    await t.step("--since ISO and --until ISO, both inclusive", async () => {
      assert.deepEqual(
        await minutes(
          "--since",
          "2026-01-01T00:10:00Z",
          "--until",
          "2026-01-01T00:20:00Z",
        ),
        [10, 20],
      );
    });
    await t.step("--until 20m", async () => {
      assert.deepEqual(await minutes("--until", "20m"), [0, 10]);
    });
  });
});

Deno.test("logs filters by level, minimum level, text and field values", async (t) => {
  await withThreeKinds(async (h, project) => {
    const titles = async (...args: string[]) =>
      jsonLines(await cli(h.kv, ["logs", project.projectId, "--json", ...args]))
        .map((l) => (l.data as { title: string }).title);
    await t.step("--level", async () => {
      assert.deepEqual(await titles("--level", "warning"), ["from app"]);
      assert.deepEqual(await titles("--level", "info,error"), [
        "from browser",
        "from server",
      ]);
      assert.deepEqual(await titles("--level", "info", "--level", "warning"), [
        "from browser",
        "from app",
      ]);
    });
    await t.step("--min-level", async () => {
      assert.deepEqual(await titles("--min-level", "warning"), [
        "from app",
        "from server",
      ]);
    });
    await t.step("--grep, case-insensitive", async () => {
      assert.deepEqual(await titles("--grep", "FROM SERVER"), ["from server"]);
      assert.deepEqual(await titles("--grep", "production"), ["from app"]);
      assert.deepEqual(await titles("--grep", "nothing like it"), []);
    });
    await t.step("--where", async () => {
      assert.deepEqual(
        await titles("--where", "context.environment=production"),
        ["from app"],
      );
      assert.deepEqual(await titles("--where", "context.build=42"), [
        "from app",
      ]);
      assert.deepEqual(await titles("--where", "appid=com.example.app.ios"), [
        "from app",
      ]);
      assert.deepEqual(
        await titles(
          "--where",
          "context.environment=production",
          "--where",
          "level=info",
        ),
        [],
      );
    });
  });
});

Deno.test("logs prints aligned columns for humans, levels coloured only on a terminal without NO_COLOR", async (t) => {
  await withThreeKinds(async (h, project) => {
    await t.step("plain when not a terminal", async () => {
      const run = await cli(h.kv, ["logs", project.projectId]);
      assert.equal(run.code, 0, run.stderr);
      const lines = run.stdout.trimEnd().split("\n");
      assert.equal(lines.length, 3);
      assert.equal(run.stdout.includes("\x1b["), false);
      assert.match(
        lines[0]!,
        /^2026-01-01 00:00:00\.000Z {2}info {6}https:\/\/app\.example\.com {2}\{"title":"from browser"\}/,
      );
      assert.match(
        lines[1]!,
        /^2026-01-01 00:00:01\.000Z {2}warning {3}com\.example\.app\.ios {6}\{"title":"from app"\} {2}context=\{"environment":"production","build":42\}$/,
      );
      assert.match(
        lines[2]!,
        /^2026-01-01 00:00:02\.000Z {2}error {5}signed {19}/,
      );
      // The data column starts at the same place on every line.
      const at = lines.map((l) => l.indexOf("{"));
      assert.equal(new Set(at).size, 1);
    });
    await t.step("coloured on a terminal", async () => {
      const run = await cli(h.kv, ["logs", project.projectId], {
        isTerminal: true,
      });
      assert.ok(run.stdout.includes("\x1b[31merror\x1b[0m"));
      assert.ok(run.stdout.includes("\x1b[33mwarning\x1b[0m"));
    });
    await t.step("plain on a terminal when NO_COLOR is set", async () => {
      const run = await cli(h.kv, ["logs", project.projectId], {
        isTerminal: true,
        noColor: true,
      });
      assert.equal(run.stdout.includes("\x1b["), false);
    });
    await t.step("--json is never coloured", async () => {
      const run = await cli(h.kv, ["logs", project.projectId, "--json"], {
        isTerminal: true,
      });
      assert.equal(run.stdout.includes("\x1b["), false);
    });
  });
});

kvTest("logs says so on stderr when no entry matches", async (kv) => {
  const { projectId } = await create(kv);
  const run = await cli(kv, ["logs", projectId]);
  assert.equal(run.code, 0);
  assert.equal(run.stdout, "");
  assert.equal(run.stderr, `No entries found in project "${projectId}"\n`);
});

harnessTest(
  "logs --follow prints an entry stored after it started, until stopped",
  async (h) => {
    const { projectId } = await create(h.kv, "https://app.example.com");
    await h.post(randomEntry({ projectId, data: { title: "before" } }), {
      Origin: "https://app.example.com",
    });
    await h.process();
    let polls = 0;
    // Store an entry after the first listing, then (after the next poll)
    // press Ctrl-C.
    const run = await follow(
      h.kv,
      ["logs", projectId, "--follow", "--json"],
      async ({ poll, ms, stop }) => {
        assert.equal(ms, 5);
        polls = poll;
        if (poll === 1) {
          h.clock.advance(1000);
          await h.post(
            randomEntry({ projectId, data: { title: "after" } }),
            { Origin: "https://app.example.com" },
          );
          await h.post(
            randomEntry({
              projectId,
              data: { title: "filtered" },
              level: "debug",
            }),
            { Origin: "https://app.example.com" },
          );
          await h.process();
        } else if (poll === 3) {
          stop();
        }
      },
      { clock: h.clock, pollMs: 5 },
    );
    assert.equal(run.code, 0, run.stderr);
    assert.equal(polls, 3);
    const titles = jsonLines(run).map((l) =>
      (l.data as { title: string }).title
    );
    // Printed once each, although every poll re-reads the recent window.
    assert.deepEqual(titles, ["before", "after"]);
  },
);

harnessTest(
  "logs --follow keeps the lines it adds aligned with the first ones",
  async (h) => {
    const { projectId } = await create(
      h.kv,
      "https://a.example",
      "com.example.a-much-longer-app-id",
    );
    await postEntries(h, projectId, { origin: "https://a.example" });
    await h.process();
    const run = await follow(
      h.kv,
      ["logs", projectId, "--follow"],
      async ({ poll, stop }) => {
        if (poll > 1) return stop();
        h.clock.advance(1000);
        await h.post(
          randomEntry({ projectId, appid: "com.example.a-much-longer-app-id" }),
        );
        await h.process();
      },
    );
    const lines = run.stdout.trimEnd().split("\n");
    assert.equal(lines.length, 2);
    assert.equal(lines[0]!.indexOf("{"), lines[1]!.indexOf("{"));
    assert.equal(run.stderr, "Waiting for new entries (Ctrl-C to stop)\n");
  },
);

harnessTest(
  "logs --follow prints late-stored entries older than the newest one seen",
  async (h) => {
    const { projectId } = await create(h.kv, "https://app.example.com");
    const origin = { Origin: "https://app.example.com" };
    // An entry received first but processed last (its batch was retried).
    await h.post(randomEntry({ projectId, data: { title: "late" } }), origin);
    await h.pipeline.producer.flush();
    const [late] = await Array.fromAsync(
      h.kv.list({ prefix: pendingBatchesPrefix() }),
    );
    await h.kv.delete(late!.key);
    h.clock.advance(2000);
    await h.post(
      randomEntry({ projectId, data: { title: "on time" } }),
      origin,
    );
    await h.process();
    const run = await follow(
      h.kv,
      ["logs", projectId, "--follow", "--json"],
      async ({ poll, stop }) => {
        if (poll > 1) return stop();
        await h.kv.set(late!.key, late!.value);
        await h.process();
      },
    );
    const titles = jsonLines(run).map((l) =>
      (l.data as { title: string }).title
    );
    assert.deepEqual(titles, ["on time", "late"]);
  },
);
