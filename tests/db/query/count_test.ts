/**
 * Counting a project's stored entries stays exact while the merger moves
 * chunks between the count's two listings.
 *
 * @module
 */
import assert from "node:assert/strict";
import { logSummariesPrefix } from "../../../db/keys.ts";
import { countStoredEntries } from "../../../db/query/mod.ts";
import {
  mergeAt,
  queryProjectTest,
  recordAt,
  storeBatch,
  T0,
} from "../../_helpers/query.ts";

queryProjectTest(
  "countStoredEntries is exact when a merge commits in the middle of it",
  async (kv, projectId) => {
    for (let i = 0; i < 30; i++) {
      await storeBatch(kv, projectId, [recordAt(T0 + i * 60_000)]);
    }
    assert.equal(await countStoredEntries(kv, projectId), 30);
    // A reader whose first listing of summaries is read in batches of 5
    // and sees a merge commit after its fifth summary, as the merger of a
    // running server can: what it listed before and after no longer agree.
    let merged = false;
    const racing = new Proxy(kv, {
      get(target, name) {
        if (name !== "list") {
          const value = Reflect.get(target, name, target);
          return typeof value === "function" ? value.bind(target) : value;
        }
        return (
          selector: Deno.KvListSelector,
          options?: Deno.KvListOptions,
        ) => {
          const prefix = "prefix" in selector ? selector.prefix : [];
          if (!merged && prefix[0] === logSummariesPrefix(projectId)[0]) {
            merged = true;
            return (async function* () {
              let n = 0;
              for await (
                const entry of target.list(selector, {
                  ...options,
                  batchSize: 5,
                })
              ) {
                yield entry;
                if (++n === 5) {
                  await mergeAt(target, projectId, T0 + 3 * 3_600_000);
                }
              }
            })();
          }
          return target.list(selector, options);
        };
      },
    });
    assert.equal(await countStoredEntries(racing, projectId), 30);
    assert.ok(merged, "the merge ran during the count");
  },
);
