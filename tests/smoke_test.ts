import assert from "node:assert/strict";
import { harness } from "./_helpers.ts";

Deno.test("an entry from an allowed origin is stored under its project", async () => {
  const h = await harness();
  try {
    const project = await h.project();
    const res = await h.post(
      { level: "info", projectId: project.id, data: { title: "hi" } },
      { Origin: "https://app.example.com" },
    );
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { status: "queued" });
    await h.process();
    const logs = await h.logs(project.id);
    assert.equal(logs.length, 1);
    assert.equal(logs[0]!.auth, "origin");
  } finally {
    await h.close();
  }
});
