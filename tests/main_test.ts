/**
 * The server as `main.ts` runs it, with the dashboard mounted
 * (`DASHBOARD=on`): one router answers the endpoint, the paths around it,
 * the dashboard's pages and its assets, over a real socket.
 *
 * @module
 */
import assert from "node:assert/strict";
import { startServer, stopServer } from "./_helpers/disk.ts";

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

    const get = await at("/api/v1/logs");
    assert.equal(get.status, 405);
    assert.equal(get.headers.get("allow"), "POST, OPTIONS");
    await get.body?.cancel();

    const other = await at("/dashboards");
    assert.equal(other.status, 404);
    assert.equal((await other.json()).error.code, "not_found");

    const bare = await at("/dashboard");
    assert.equal(bare.status, 301);
    assert.equal(bare.headers.get("location"), "/dashboard/");
    await bare.body?.cancel();

    const login = await at("/dashboard/login");
    assert.equal(login.status, 200);
    assert.match(await login.text(), /<form/);

    const css = await at("/dashboard/assets/app.css");
    assert.equal(css.status, 200);
    assert.match(css.headers.get("content-type") ?? "", /text\/css/);
    await css.body?.cancel();
  } finally {
    await stopServer(server);
    await Deno.remove(dir, { recursive: true });
  }
});
