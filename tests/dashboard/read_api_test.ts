/**
 * Read tokens and the read API on the dashboard server: a token printed
 * once and stored only as its hash, NDJSON pages equal to the answer of
 * `deno task logs --json` for the same query, the `Link` to the next page,
 * CSV with RFC 4180 quoting and formula injection neutralised, `401` for a
 * missing, malformed, unknown or revoked token, `404` for another project,
 * `400` for a bad parameter, the explorer's download links, and no such
 * route on the ingest port.
 *
 * @module
 */
import assert from "node:assert/strict";
import { signInNew } from "../_helpers/dashboard_accounts.ts";
import { csvCell } from "../../domain/csv.ts";
import { cli } from "../_helpers/cli.ts";
import { everything } from "../_helpers/harness.ts";
import { assertEachGives } from "../_helpers/table.ts";
import {
  apiRequest,
  createTokenOnPage,
  dashboardProjectTest,
  dashboardTest,
  type DashHarness,
  PEER,
  signIn,
  store,
  textOf,
} from "../_helpers/dashboard.ts";

async function createToken(
  h: DashHarness,
  projectId: string,
  name = "ci",
): Promise<string> {
  const run = await cli(h.kv, [
    "token",
    "create",
    projectId,
    "--name",
    name,
    "--json",
  ], {
    now: h.clock.now,
  });
  assert.equal(run.code, 0, run.stderr);
  return JSON.parse(run.stdout).token;
}

/** Parses CSV text (RFC 4180) into rows of cells. */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = "";
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!;
    if (quoted) {
      if (ch === '"' && text[i + 1] === '"') {
        cell += '"';
        i++;
      } else if (ch === '"') quoted = false;
      else cell += ch;
    } else if (ch === '"') quoted = true;
    else if (ch === ",") {
      row.push(cell);
      cell = "";
    } else if (ch === "\r" && text[i + 1] === "\n") {
      row.push(cell);
      rows.push(row);
      row = [];
      cell = "";
      i++;
    } else cell += ch;
  }
  return rows;
}

/** A project with entries of every level, `n` in all, 1 s apart. */
async function seeded(h: DashHarness, n = 30) {
  const project = await h.project();
  const levels = ["info", "warning", "error", "critical"];
  await store(
    h,
    project.id,
    Array.from({ length: n }, (_, i) => ({
      level: levels[i % 4],
      data: {
        title: `Entry ${i}`,
        message: i % 3 === 0 ? "payment declined" : "ok",
        i,
      },
    })),
  );
  return project;
}

dashboardProjectTest(
  "token create prints the token once; only its SHA-256 is stored and list never shows it",
  async (h, project) => {
    const token = await createToken(h, project.id);
    assert.match(token, /^lgr_[A-Za-z0-9_-]{43}$/);
    const stored = await everything(h.kv);
    assert.ok(!stored.includes(token), "the token is nowhere in KV");
    assert.ok(!stored.includes(token.slice(4)), "nor its random part");
    const hash = Array.from(
      new Uint8Array(
        await crypto.subtle.digest("SHA-256", new TextEncoder().encode(token)),
      ),
      (b) => b.toString(16).padStart(2, "0"),
    ).join("");
    assert.ok(stored.includes(hash), "its hash is");
    const list = await cli(h.kv, ["token", "list", project.id, "--json"]);
    assert.equal(list.code, 0);
    assert.ok(!list.stdout.includes(token) && !list.stdout.includes(hash));
    assert.equal(JSON.parse(list.stdout)[0].name, "ci");
    const again = await cli(h.kv, [
      "token",
      "create",
      project.id,
      "--name",
      "ci",
    ]);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /has a token of this name/);
  },
);

dashboardTest(
  "the NDJSON export is the CLI's answer for the same query, newest first",
  async (h) => {
    const project = await seeded(h);
    const token = await createToken(h, project.id);
    for (
      const [q, args] of [
        ["", []],
        ["level>=error", ["--query", "level>=error"]],
        ['"payment declined" -level:info', [
          "--query",
          '"payment declined" -level:info',
        ]],
      ] as const
    ) {
      for (const since of [undefined, "20s"]) {
        const params = new URLSearchParams({ q, limit: "1000" });
        if (since) params.set("since", since);
        const res = await apiRequest(
          h,
          `/api/v1/projects/${project.id}/logs?${params}`,
          token,
        );
        assert.equal(res.status, 200);
        assert.equal(
          res.headers.get("content-type"),
          "application/x-ndjson; charset=utf-8",
        );
        const lines = (await res.text()).split("\n").filter((l) => l !== "");
        const run = await cli(h.kv, [
          "logs",
          project.id,
          ...args,
          ...(since ? ["--since", since] : []),
          "--limit",
          "1000",
          "--json",
        ], { now: h.clock.now });
        assert.equal(run.code, 0, run.stderr);
        const expected = run.stdout.split("\n").filter((l) => l !== "")
          .reverse();
        assert.ok(expected.length > 0, `${q} ${since}: matches something`);
        assert.deepEqual(lines, expected, `${q} since ${since}`);
      }
    }
  },
);

dashboardTest(
  "the next page is in the Link header until the last one",
  async (h) => {
    const project = await seeded(h, 23);
    const token = await createToken(h, project.id);
    const all = (await (await apiRequest(
      h,
      `/api/v1/projects/${project.id}/logs?limit=1000`,
      token,
    )).text()).split("\n").filter((l) => l !== "");
    assert.equal(all.length, 23);
    let next: string | null =
      `/api/v1/projects/${project.id}/logs?limit=5&since=1h`;
    const paged: string[] = [];
    let pages = 0;
    while (next !== null) {
      const res = await apiRequest(h, next, token);
      assert.equal(res.status, 200);
      paged.push(...(await res.text()).split("\n").filter((l) => l !== ""));
      const link = res.headers.get("link");
      next = link === null ? null : /^<([^>]+)>; rel="next"$/.exec(link)![1]!;
      pages++;
    }
    assert.equal(pages, 5);
    assert.deepEqual(paged, all);
  },
);

dashboardProjectTest(
  "CSV has a header row, quotes per RFC 4180 and neutralises formulas",
  async (h, project) => {
    const title = '=HYPERLINK("http://evil.example","click")';
    const message = 'a, "quoted"\nsecond line';
    const [record] = await store(h, project.id, [{
      level: "error",
      data: { title, message, n: 1 },
      context: { formula: "@SUM(A1)" },
    }]);
    const token = await createToken(h, project.id);
    const res = await apiRequest(
      h,
      `/api/v1/projects/${project.id}/logs?format=csv`,
      token,
    );
    assert.equal(res.status, 200);
    assert.match(res.headers.get("content-type")!, /^text\/csv; charset=utf-8/);
    const rows = parseCsv(await res.text());
    assert.deepEqual(
      rows[0],
      "id,receivedAt,level,title,message,data,context,device,appid,auth"
        .split(","),
    );
    assert.equal(rows.length, 2);
    const row = rows[1]!;
    assert.equal(row[0], record!.id);
    assert.equal(row[1], new Date(record!.receivedAt).toISOString());
    assert.equal(row[2], "error");
    assert.equal(row[3], `'${title}`, "a formula stays text");
    assert.equal(row[4], message, "commas, quotes and line breaks survive");
    assert.deepEqual(JSON.parse(row[5]!), record!.data);
    assert.deepEqual(JSON.parse(row[6]!), record!.context);
    assert.equal(row[9], "origin");
    assertEachGives(csvCell, [
      ["-2+3", "'-2+3"],
      ["+1", "'+1"],
      ["@x", "'@x"],
      ["\tx", "'\tx"],
      ["plain", "plain"],
      ['a"b', '"a""b"'],
      ["a,b", '"a,b"'],
      ["", ""],
    ]);
  },
);

dashboardProjectTest(
  "a missing, malformed, unknown or revoked token answers 401 with a JSON error",
  async (h, project) => {
    const token = await createToken(h, project.id);
    const path = `/api/v1/projects/${project.id}/logs`;
    const tries: [string, Record<string, string>][] = [
      ["none", {}],
      ["basic", { authorization: "Basic YWRtaW46eA==" }],
      ["malformed", { authorization: "Bearer nope" }],
      ["unknown", { authorization: `Bearer lgr_${"A".repeat(43)}` }],
      ["two", { authorization: `Bearer ${token} ${token}` }],
    ];
    for (const [name, headers] of tries) {
      const res = await h.dash.request(path, { headers }, PEER);
      assert.equal(res.status, 401, name);
      assert.match(res.headers.get("www-authenticate")!, /^Bearer/);
      assert.equal(typeof (await res.json()).error, "string");
    }
    assert.equal((await apiRequest(h, path, token)).status, 200);
    const revoke = await cli(h.kv, ["token", "revoke", project.id, "ci"]);
    assert.equal(revoke.code, 0, revoke.stderr);
    const res = await apiRequest(h, path, token);
    assert.equal(res.status, 401, "revoked");
    await res.body?.cancel();
  },
);

dashboardTest(
  "a token answers 404 for another project, and bad parameters answer 400",
  async (h) => {
    const mine = await h.project();
    const other = await h.project();
    const token = await createToken(h, mine.id);
    const res = await apiRequest(h, `/api/v1/projects/${other.id}/logs`, token);
    assert.equal(res.status, 404);
    assert.match((await res.json()).error, /Cannot find project/);
    const gone = await apiRequest(h, `/api/v1/projects/nope/logs`, token);
    assert.equal(gone.status, 404);
    await gone.body?.cancel();
    // An id no project can have is never looked up (a database key is
    // limited in size), even by an administrator who may read them all.
    const admin = await signIn(h.dash);
    const long = await admin.get(`/api/v1/projects/${"a".repeat(3000)}/logs`);
    assert.equal(long.status, 404);
    assert.match((await long.json()).error, /Cannot find project/);
    for (
      const query of [
        "q=%22unclosed",
        "limit=0",
        "limit=1001",
        "limit=abc",
        "since=yesterday",
        "since=999999999w",
        "cursor=abc",
        "format=xml",
      ]
    ) {
      const bad = await apiRequest(
        h,
        `/api/v1/projects/${mine.id}/logs?${query}`,
        token,
      );
      assert.equal(bad.status, 400, query);
      assert.match((await bad.json()).error, /^Cannot /, query);
    }
  },
);

dashboardTest(
  "a session reads through the API as its role allows, and the explorer links the download",
  async (h) => {
    const project = await seeded(h, 5);
    const other = await h.project();
    const viewer = await signInNew(h, "viewer@example.com", "viewer", [
      project.id,
    ]);
    const page =
      await (await viewer.get(`/projects/${project.id}?q=level:error`)).text();
    const href =
      /id="export-csv"[^>]*href="([^"]+)"|href="([^"]+)"[^>]*id="export-csv"/
        .exec(page);
    assert.ok(href, "the explorer has a CSV link");
    const url = (href[1] ?? href[2]!).replaceAll("&amp;", "&");
    assert.match(url, /format=csv/);
    assert.match(url, /q=level%3Aerror/);
    const csv = await viewer.get(url);
    assert.equal(csv.status, 200);
    assert.match(csv.headers.get("content-disposition")!, /^attachment/);
    const rows = parseCsv(await csv.text());
    assert.equal(rows.length - 1, 1, "the one error entry of five");
    const denied = await viewer.get(`/api/v1/projects/${other.id}/logs`);
    assert.equal(denied.status, 404);
    await denied.body?.cancel();
  },
);

dashboardProjectTest(
  "the ingest port serves no read API",
  async (h, project) => {
    const token = await createToken(h, project.id);
    const res = await h.app.request(`/api/v1/projects/${project.id}/logs`, {
      headers: { authorization: `Bearer ${token}` },
    });
    assert.notEqual(res.status, 200);
    assert.ok(!(await res.text()).includes(project.id));
  },
);

dashboardProjectTest(
  "the settings page creates a token shown once and revokes it",
  async (h, project) => {
    const admin = await signIn(h.dash);
    const { token } = await createTokenOnPage(admin, project.id, {
      name: "export",
    });
    assert.ok(!(await everything(h.kv)).includes(token));
    assert.equal(
      (await apiRequest(h, `/api/v1/projects/${project.id}/logs`, token))
        .status,
      200,
    );
    const again = await (await admin.get(`/projects/${project.id}/settings`))
      .text();
    assert.ok(!again.includes(token), "shown once");
    assert.match(textOf(again), /export/);
    const id = /name="token" value="([^"]+)"/.exec(again)![1]!;
    const revoked = await admin.post(
      `/projects/${project.id}/settings/tokens/revoke`,
      { token: id },
    );
    assert.equal(revoked.status, 303);
    const res = await apiRequest(
      h,
      `/api/v1/projects/${project.id}/logs`,
      token,
    );
    assert.equal(res.status, 401);
    await res.body?.cancel();
    const audit = textOf(
      await (await admin.get(`/projects/${project.id}/audit`)).text(),
    );
    assert.match(audit, /admin token\.revoke export/);
    assert.match(audit, /admin token\.create export/);
  },
);

dashboardProjectTest(
  "deleting a project revokes its read tokens",
  async (h, project) => {
    const token = await createToken(h, project.id);
    const run = await cli(h.kv, ["project", "delete", project.id, "--yes"]);
    assert.equal(run.code, 0, run.stderr);
    const stored = await everything(h.kv);
    assert.ok(!stored.includes(project.id + '"'), "nothing left of it");
    const res = await apiRequest(
      h,
      `/api/v1/projects/${project.id}/logs`,
      token,
    );
    assert.equal(res.status, 401);
    await res.body?.cancel();
  },
);

dashboardProjectTest(
  "a path of the API that names nothing answers 404 JSON, signed in or not, never a page or a redirect to sign in",
  async (h, project) => {
    const token = await createToken(h, project.id);
    const cases: [string, string][] = [
      ["GET", "/api/v1/projects/%ZZ/logs"],
      ["GET", "/api/v1/projects/%E9/logs"],
      ["POST", "/api/v1/projects/%ZZ/sourcemaps"],
      ["OPTIONS", `/api/v1/projects/${project.id}/logs`],
      ["POST", `/api/v1/projects/${project.id}/logs`],
      ["GET", `/api/v1/projects/${project.id}/sourcemaps`],
      ["GET", "/api/v2/anything"],
    ];
    for (const [method, path] of cases) {
      const res = await apiRequest(h, path, token, { method });
      assert.equal(res.status, 404, `${method} ${path}`);
      assert.match(res.headers.get("content-type") ?? "", /^application\/json/);
      assert.match((await res.json()).error, /^Cannot find this API path/);
    }
  },
);
