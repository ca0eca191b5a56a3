import assert from "node:assert/strict";
import { ConfigError, loadConfig } from "../config.ts";

Deno.test("loadConfig gives the documented defaults", () => {
  const config = loadConfig({});
  assert.equal(config.port, 8000);
  assert.equal(config.hostname, "0.0.0.0");
  assert.equal(config.kvPath, "./data/kv.sqlite");
  assert.equal(config.maxBodyBytes, 65536);
  assert.equal(config.rateLimitRps, 20);
  assert.equal(config.rateLimitBurst, 50);
  assert.equal(config.trustProxy, 0);
  assert.equal(config.signatureMaxSkewMs, 300_000);
  assert.equal(config.consumerConcurrency, 4);
  assert.equal(config.maxPendingRequests, 20_000);
  assert.equal(config.projectCacheMs, 2000);
  assert.equal(config.maxMergeBacklog, 3000);
  assert.equal(config.bodyTimeoutMs, 10_000);
  assert.equal(config.maxBodyBudgetBytes, 32 * 1024 * 1024);
  assert.equal(config.metricsPort, undefined);
  assert.equal(config.metricsHostname, "127.0.0.1");
  assert.equal(config.metricsToken, undefined);
  assert.equal(config.alertPrivateTargets, false);
  assert.equal(config.commitLingerMs, 8);
  assert.equal(config.mergeThread, true);
  assert.equal(config.queryThread, true);
});

Deno.test("loadConfig refuses a malformed value, naming the variable", () => {
  assert.throws(() => loadConfig({ PORT: "abc" }), (error) => {
    assert.ok(error instanceof ConfigError);
    assert.match(error.message, /^Cannot read "PORT": /);
    return true;
  });
  assert.throws(
    () => loadConfig({ PROJECT_CACHE_MS: "6000" }),
    /"PROJECT_CACHE_MS"/,
  );
  assert.throws(
    () => loadConfig({ COMMIT_LINGER_MS: "101" }),
    /"COMMIT_LINGER_MS"/,
  );
  assert.equal(loadConfig({ COMMIT_LINGER_MS: "0" }).commitLingerMs, 0);
  assert.throws(() => loadConfig({ QUERY_THREAD: "yes" }), /"QUERY_THREAD"/);
  assert.equal(loadConfig({ QUERY_THREAD: "off" }).queryThread, false);
});

Deno.test("an empty variable counts as unset", () => {
  assert.equal(loadConfig({ PORT: "", KV_PATH: "" }).port, 8000);
});

Deno.test("the platform's KV is used on Deno Deploy", () => {
  assert.equal(loadConfig({ DENO_DEPLOYMENT_ID: "x1" }).kvPath, undefined);
  assert.equal(
    loadConfig({ KV_PATH: "https://api.deno.com/databases/abc/connect" })
      .kvPath,
    "https://api.deno.com/databases/abc/connect",
  );
});
