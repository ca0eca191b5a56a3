/**
 * The server as `main.ts` runs it, with the dashboard mounted
 * (`DASHBOARD=on`): one router answers the endpoint, the paths around it,
 * the dashboard's pages and its assets, over a real socket.
 *
 * @module
 */
import assert from "node:assert/strict";
import { startServer, stopServer } from "./_helpers/disk.ts";

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
