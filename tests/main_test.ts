/**
 * The server as `main.ts` runs it, with the dashboard mounted
 * (`DASHBOARD=on`): one router answers the endpoint, the paths around it,
 * the dashboard's pages and its assets, over a real socket.
 *
 * @module
 */
import assert from "node:assert/strict";
import { startServer, stopServer } from "./_helpers/disk.ts";
import { withTimeout } from "./_helpers/harness.ts";
import { createProject } from "../db/projects.ts";
import { createReadToken } from "../db/tokens.ts";

/** Asserts the status of `res` and one of its headers; drops the body. */
async function assertHead(
  res: Response,
  status: number,
  header: string,
  value: string | RegExp,
): Promise<void> {
  assert.equal(res.status, status);
  if (typeof value === "string") assert.equal(res.headers.get(header), value);
  else assert.match(res.headers.get(header) ?? "", value);
  await res.body?.cancel();
}

Deno.test("main.ts routes the endpoint, the mounted dashboard and its assets through one app", async () => {
  const dir = await Deno.makeTempDir();
  const server = await startServer({
    KV_PATH: `${dir}/kv.sqlite`,
    DASHBOARD: "on",
    ADMIN_PASSWORD: "correct horse battery",
  });
  try {
    const at = (path: string, init?: RequestInit) =>
      fetch(`${server.url}${path}`, { redirect: "manual", ...init });
    const posted = await at("/api/v1/logs", {
      method: "POST",
      headers: {
        "Content-Type": "application/json",
        Origin: "https://app.example.com",
      },
      body: '{"level":"info","projectId":"p","data":{"a":1}}',
    });
    assert.equal(posted.status, 200);
    assert.deepEqual(await posted.json(), { status: "queued" });
    assert.equal(
      posted.headers.get("access-control-allow-origin"),
      "https://app.example.com",
    );

    await assertHead(await at("/api/v1/logs"), 405, "allow", "POST, OPTIONS");

    const other = await at("/dashboards");
    assert.equal(other.status, 404);
    assert.equal((await other.json()).error.code, "not_found");

    await assertHead(await at("/dashboard"), 301, "location", "/dashboard/");

    const login = await at("/dashboard/login");
    assert.equal(login.status, 200);
    assert.match(await login.text(), /<form/);

    await assertHead(
      await at("/dashboard/assets/app.css"),
      200,
      "content-type",
      /text\/css/,
    );
  } finally {
    await stopServer(server);
    await Deno.remove(dir, { recursive: true });
  }
});

/** A project that allows `origin`, and a read token of it, in `kvPath`. */
async function readableProject(kvPath: string, origin: string) {
  const kv = await Deno.openKv(kvPath);
  try {
    const project = await createProject(kv, { name: "web", allow: [origin] });
    const { token } = await createReadToken(kv, {
      projectId: project.id,
      name: "ci",
      createdBy: "cli",
    });
    return { projectId: project.id, token };
  } finally {
    kv.close();
  }
}

Deno.test("main.ts with the dashboard reads through its query thread: an entry sent is read back, and the thread logs no failure", async () => {
  const dir = await Deno.makeTempDir();
  const origin = "https://app.example.com";
  const { projectId, token } = await readableProject(
    `${dir}/kv.sqlite`,
    origin,
  );
  const server = await startServer({
    KV_PATH: `${dir}/kv.sqlite`,
    DASHBOARD: "on",
    ADMIN_PASSWORD: "correct horse battery",
  });
  try {
    const posted = await fetch(`${server.url}/api/v1/logs`, {
      method: "POST",
      headers: { "Content-Type": "application/json", Origin: origin },
      body: JSON.stringify({ level: "info", projectId, data: { title: "Hi" } }),
    });
    assert.equal(posted.status, 200);
    await posted.body?.cancel();
    const api = `${server.url}/dashboard/api/v1/projects/${projectId}/logs`;
    // Stored within a second or so: read until the entry is there.
    const readBack = async () => {
      for (;;) {
        const res = await fetch(`${api}?q=hi`, {
          headers: { authorization: `Bearer ${token}` },
        });
        assert.equal(res.status, 200);
        const text = await res.text();
        if (text !== "") return JSON.parse(text);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    };
    const entry = await withTimeout(readBack(), 20_000, "the entry read back");
    assert.equal(entry.data.title, "Hi");
    const rows = await fetch(`${api}?q=${encodeURIComponent("* | count")}`, {
      headers: { authorization: `Bearer ${token}` },
    });
    assert.equal(await rows.text(), '{"count":1}\n');
    assert.doesNotMatch(server.stderr(), /query thread/);
  } finally {
    await stopServer(server);
    await Deno.remove(dir, { recursive: true });
  }
});
