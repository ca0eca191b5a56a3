/**
 * The members of a Bloom filter being built (db/storage/bloom.ts): each
 * member once, however often added, and a field pair hashed from its parts
 * as its whole string is.
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  bloomHas,
  bloomHash,
  BloomMembers,
} from "../../../db/storage/bloom.ts";

Deno.test("members added again are counted once, and every member is found", () => {
  const members = new BloomMembers();
  const words = Array.from({ length: 5000 }, (_, i) => `w${i % 1700}`);
  for (const w of words) members.add(w);
  members.addRange("xx timeout yy", 3, 10);
  assert.equal(members.size, 1701);
  const bloom = members.build();
  for (const w of [...new Set(words), "timeout"]) {
    assert.ok(bloomHas(bloom, bloomHash(w)), w);
  }
});
