/**
 * The Scrubbing card of a project's settings: the defaults and the
 * project's rules, never the project's hash key.
 *
 * @module
 */
import assert from "node:assert/strict";
import { addScrubRule } from "../../db/scrub.ts";
import { signedInProjectTest, textOf } from "../_helpers/dashboard.ts";

signedInProjectTest(
  "the settings page lists the scrubbing defaults and the project's rules",
  async (h, browser, project) => {
    const { project: saved } = await addScrubRule(h.kv, project.id, {
      kind: "key",
      key: "email",
      action: "hash",
    });
    await addScrubRule(h.kv, project.id, { kind: "detector", detector: "ip" });
    const res = await browser.get(`/projects/${project.id}/settings`);
    assert.equal(res.status, 200);
    const html = await res.text();
    const text = textOf(html);
    assert.match(text, /Scrubbing/);
    assert.match(text, /values under keys naming password, passwd, secret/);
    assert.match(text, /card numbers \(Luhn-valid\) remove/);
    assert.match(text, /key:email values under keys naming "email" hash/);
    assert.match(text, /detector:ip ip \(detector\) remove/);
    assert.ok(!html.includes(saved.hashKey!), "the hash key is never shown");
  },
);
