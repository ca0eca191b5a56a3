/**
 * Every parameter of every dashboard page, and every field of every form,
 * given nasty values: empty, 10,000 characters, Unicode, control
 * characters, numbers out of range, 400 digits, repeated parameters. Each
 * answer is the normal page (the value ignored) or a `400` page saying what
 * was wrong; never a `500`, never an error logged.
 *
 * @module
 */
import assert from "node:assert/strict";
import { capturingErrors } from "../_helpers/console.ts";
import {
  projectPage,
  signedInTest,
  store,
  submitLoginForm,
  withSignedIn,
} from "../_helpers/dashboard.ts";

/** Values that broke or might break a parser. */
const NASTY: string[] = [
  "",
  "x".repeat(10_000),
  "9".repeat(400),
  "abc",
  "ü😀\u202e\u200b漢字",
  "\u0000\u0001\u001f\u007f\r\n\t",
  "-1",
  "0",
  "1e309",
  "-99999999999999999999",
  "NaN",
  "Infinity",
  "0x10",
  "__proto__",
  "constructor",
  "<script>alert(1)</script>",
  '"\\',
  "%",
  "%00",
  "../../etc/passwd",
  "ffffffffffffffffffffffffffff",
  "id:ffffffffffffffffffffffffffff",
  "0000000000000000000000000000",
  "n" + "f".repeat(28),
  "o" + "0".repeat(28),
  "2026-13-45",
  "9999-12-31T23:59",
  "0000-01-01",
  "275760-09-13",
  "-1h",
  "24h,7d",
  "error,warning,info,debug,critical,x,y,z",
  "level:",
  '"unterminated',
  "(((((",
  "-".repeat(3000),
  "a:".repeat(2000),
];

/**
 * The nasty values of a sign-in's text fields: each attempt costs a
 * password hash, so the numeric and date values are left to other forms.
 */
const NASTY_TEXT = NASTY.filter((v) =>
  v === "" || v.length > 1000 || /[^\x20-\x7e]|[<_%]/.test(v)
);

/** Statuses a nasty value may get. */
const ACCEPTABLE = new Set([200, 303, 400, 404]);

/** Reads what an answer says, cancelling a stream after its first bytes. */
async function bodyOf(res: Response): Promise<string> {
  if (res.headers.get("content-type")?.startsWith("text/event-stream")) {
    const reader = res.body!.getReader();
    const { value } = await reader.read();
    await reader.cancel();
    return new TextDecoder().decode(value);
  }
  return await res.text();
}

function query(name: string, value: string | string[]): string {
  const params = new URLSearchParams();
  for (const v of [value].flat()) params.append(name, v);
  return params.toString();
}

signedInTest(
  "every parameter of every page, given nasty values, answers the page or a 400 saying what was wrong, never a 500",
  async (h, browser) => {
    const project = await h.project(["https://app.example.com"]);
    const records = await store(h, project.id, [
      { level: "error", data: { title: "one" } },
      { level: "info", data: { title: "two" } },
    ]);
    const p = `/projects/${project.id}`;
    const explorerParams = [
      "q",
      "level",
      "range",
      "since",
      "until",
      "open",
      "around",
      "cursor",
      "live",
    ];
    const pages: [string, string[]][] = [
      ["/", ["done"]],
      ["/login", ["next", "done"]],
      [p, explorerParams],
      [`${p}/entries`, explorerParams],
      [`${p}/tail`, [...explorerParams, "after"]],
      [`${p}/entries/${records[0]!.id}`, ["part", ...explorerParams]],
      [`${p}/settings`, ["done"]],
      [`${p}/rejections`, ["reason", "done"]],
      ["/dead-letters", ["done", "n"]],
      ["/assets/explorer.js", ["v"]],
      [`${p}/errors`, []],
      [`${p}/alerts`, ["done"]],
      [`${p}/audit`, []],
      ["/users", ["done"]],
      [`/api/v1/projects/${project.id}/logs`, [
        "q",
        "level",
        "since",
        "until",
        "limit",
        "cursor",
        "format",
      ]],
    ];
    const failures: string[] = [];
    let requests = 0;
    const began = performance.now();
    const logged = await capturingErrors(async () => {
      for (const [path, names] of pages) {
        for (const name of names) {
          const values: (string | string[])[] = [
            ...NASTY,
            ["1", "2"],
            ["", "x".repeat(5000)],
            Array.from({ length: 100 }, (_, i) => String(i)),
          ];
          for (const value of values) {
            const url = `${path}?${query(name, value)}`;
            const res = await browser.get(url);
            const text = await bodyOf(res);
            requests++;
            if (!ACCEPTABLE.has(res.status) || /\bat .+\.tsx?:\d+/.test(text)) {
              failures.push(`${res.status} GET ${url.slice(0, 120)}`);
            }
          }
        }
      }
      // Path parameters.
      for (const value of NASTY) {
        const id = encodeURIComponent(value);
        for (
          const path of [
            `/projects/${id}`,
            `/projects/${id}/entries`,
            `/projects/${id}/tail`,
            `/projects/${id}/settings`,
            `/projects/${id}/rejections`,
            `${p}/entries/${id}`,
            `/assets/${id}`,
          ]
        ) {
          const res = await browser.get(path);
          await bodyOf(res);
          requests++;
          if (!ACCEPTABLE.has(res.status)) {
            failures.push(`${res.status} GET ${path.slice(0, 120)}`);
          }
        }
      }
    });
    assert.deepEqual(failures, []);
    assert.deepEqual(logged, []);
    const ms = performance.now() - began;
    console.log(`${requests} requests in ${ms.toFixed(0)} ms`);
  },
);

Deno.test("every field of every form, given nasty values, answers the page or a 400, never a 500", async () => {
  await withSignedIn(async (h, browser) => {
    const { project, path: settings } = await projectPage(h, "settings", [
      "https://app.example.com",
    ]);
    const forms: [string, string[]][] = [
      ["/projects", ["name", "allow"]],
      [`${settings}/allow`, ["value"]],
      [`${settings}/disallow`, ["value"]],
      [`${settings}/levels/add`, ["level"]],
      [`${settings}/levels/remove`, ["level"]],
      [`${settings}/retention`, ["days"]],
      [`${settings}/rotate`, ["grace"]],
      [`${settings}/quota`, ["per_day", "per_minute"]],
      [`${settings}/spike`, ["multiple", "keep"]],
      [`${settings}/delete`, ["confirm"]],
      [`/projects/${project.id}/rejections/replay`, ["entry"]],
      ["/dead-letters/replay", ["id"]],
      [`/projects/${project.id}/alerts/add`, [
        "query",
        "webhook",
        "threshold",
        "window",
        "every",
      ]],
      [`/projects/${project.id}/alerts/remove`, ["rule"]],
      [`/projects/${project.id}/views`, ["name", "q", "level", "since"]],
      [`/projects/${project.id}/views/delete`, ["view", "back"]],
      [`${settings}/tokens`, ["name"]],
      [`${settings}/tokens/revoke`, ["token"]],
      ["/users", ["email", "role", "password"]],
      ["/users/update", ["email", "role"]],
      ["/users/remove", ["email"]],
    ];
    const failures: string[] = [];
    const logged = await capturingErrors(async () => {
      for (const [path, names] of forms) {
        for (const name of names) {
          for (const value of NASTY) {
            const res = await browser.post(path, { [name]: value });
            const text = await res.text();
            if (!ACCEPTABLE.has(res.status) || /\bat .+\.tsx?:\d+/.test(text)) {
              failures.push(
                `${res.status} POST ${path} ${name}=${value.slice(0, 40)}`,
              );
            }
          }
        }
      }
      // Through the form (its cookie and token), so that every field
      // reaches the sign-in; `_csrf` alone is sent without them.
      for (const field of ["email", "password", "next", "_csrf"]) {
        for (const value of field === "_csrf" ? NASTY : NASTY_TEXT) {
          const res = field === "_csrf"
            ? await h.dash.request("/login", {
              method: "POST",
              headers: { origin: "http://localhost" },
              body: new URLSearchParams({ [field]: value }),
            })
            : await submitLoginForm(h.dash, { [field]: value });
          await res.text();
          if (![303, 401, 403, 429].includes(res.status)) {
            failures.push(
              `${res.status} POST /login ${field}=${value.slice(0, 40)}`,
            );
          }
        }
      }
    });
    assert.deepEqual(failures, []);
    assert.deepEqual(logged, []);
  }, { dashboard: { loginLimit: { burst: 10_000 } } });
});

signedInTest(
  "a cursor the explorer cannot read answers 400 saying so, and lists from the top",
  async (h, browser) => {
    const project = await h.project(["https://app.example.com"]);
    await store(h, project.id, [{ level: "error", data: { title: "kept" } }]);
    const p = `/projects/${project.id}`;
    const logged = await capturingErrors(async () => {
      for (const cursor of ["abc", "9".repeat(400)]) {
        const page = await browser.get(`${p}?cursor=${cursor}`);
        assert.equal(page.status, 400);
        const html = await page.text();
        assert.match(html, /Cannot read cursor &quot;/);
        assert.match(html, /kept/, "the list from the top");
        const rows = await browser.get(`${p}/entries?cursor=${cursor}`);
        assert.equal(rows.status, 400);
        assert.match(await rows.text(), /^Cannot read cursor "/);
      }
      const open = await browser.get(`${p}?open=${"f".repeat(28)}`);
      assert.equal(open.status, 200, "an id no entry can have is ignored");
      await open.text();
      const since = await browser.get(`${p}?since=2026-02-30`);
      assert.equal(since.status, 200);
      assert.match(await since.text(), /Cannot read &quot;since&quot; time/);
    });
    assert.deepEqual(logged, []);
  },
);

signedInTest(
  "a form sent as multipart, well formed or not, is answered 415 before any field is read; nothing is logged",
  async (h, browser) => {
    const multipart = [
      "multipart/form-data; boundary=X",
      "multipart/form-data",
      "text/plain",
    ];
    const logged = await capturingErrors(async () => {
      for (const type of multipart) {
        // Signed out: the sign-in reads its form before anything else.
        const login = await h.dash.request("/login", {
          method: "POST",
          headers: { origin: "http://localhost", "content-type": type },
          body: "junk",
        });
        assert.equal(login.status, 415, type);
        assert.match(
          await login.text(),
          /expected application\/x-www-form-urlencoded/,
        );
        // Signed in: the form's token is read first.
        const res = await browser.post("/projects", { name: "x" }, {
          "content-type": type,
        });
        assert.equal(res.status, 415, type);
        await res.text();
      }
    });
    assert.deepEqual(logged, []);
  },
);
