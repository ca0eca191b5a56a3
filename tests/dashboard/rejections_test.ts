/**
 * "Why are my entries missing?" through `app.request`: kept rejected
 * entries shown with their reason and content (sender text inert), the
 * text a bad signature should have signed, counters, and replaying after
 * the settings are fixed, with the outcome shown once.
 *
 * @module
 */
import assert from "node:assert/strict";
import { listRejected } from "../../db/rejected.ts";
import { readStats } from "../../db/stats.ts";
import { sign } from "../../auth/signature.ts";
import { ORIGIN, postEntries, randomEntry } from "../_helpers/harness.ts";
import {
  dashboardTest,
  post,
  signedInTest,
  signIn,
  textOf,
} from "../_helpers/dashboard.ts";

const HOSTILE = `<script>alert(1)</script><img src=x onerror=alert(2)>"'`;

signedInTest(
  "the rejections page shows kept entries with reason and content, inert, and a bad signature's expected text",
  async (h, browser) => {
    const project = await h.project(["https://app.example.com"]);
    await h.post(
      randomEntry({ projectId: project.id, data: { title: HOSTILE } }),
      { Origin: "https://shop.example.net" },
    );
    const body = {
      level: "error",
      projectId: project.id,
      data: { title: "Payment failed", orderId: 1234 },
    };
    const timestamp = String(h.clock.now());
    // Signed over what Python's json.dumps writes by default (", ", ": ").
    const python = JSON.stringify(body).replaceAll(",", ", ")
      .replaceAll(":", ": ");
    assert.ok(python.includes(`"level": "error", "projectId"`));
    const signature = sign(
      project.secret,
      `${project.id}${python}${timestamp}`,
    );
    await h.post(body, { timestamp, signature });
    await h.process();

    const res = await browser.get(`/projects/${project.id}/rejections`);
    assert.equal(res.status, 200);
    const html = await res.text();
    assert.doesNotMatch(html, /<script>alert|<img src=x/);
    assert.match(html, /&lt;script&gt;alert\(1\)&lt;\/script&gt;/);
    const text = textOf(html);
    assert.match(text, /Stored 0 Rejected 2 2 bad_origin 1 1/);
    assert.match(
      html,
      /<details class="kept" id="k-[0-9a-f]{28}" data-reason="bad_signature"/,
    );
    assert.match(
      html,
      /<details class="kept" id="k-[0-9a-f]{28}" data-reason="bad_origin"/,
    );
    const expected =
      /<pre class="expected" id="expected-[0-9a-f]{28}">([^<]*)<\/pre>/
        .exec(html);
    assert.ok(expected, "the expected text is shown in a <pre>");
    assert.equal(
      textOf(expected[1]!),
      `${project.id}{"level":"error","projectId":"${project.id}","data":{"title":"Payment failed","orderId":1234}}${timestamp}`,
    );
    assert.match(text, /Python's json\.dumps default separators add spaces/);
    assert.match(text, /Origin https:\/\/shop\.example\.net Allow/);
    // A bad signature cannot be cured by a replay: only the origin's entry.
    assert.match(text, /Replay all 1 kept entry/);

    const narrowed = textOf(
      await (await browser.get(
        `/projects/${project.id}/rejections?reason=bad_signature`,
      )).text(),
    );
    assert.match(narrowed, /Payment failed/);
    assert.doesNotMatch(narrowed, /alert\(1\)/);
  },
);

signedInTest(
  "replaying after allowing the origin stores the entry once and shows what became of it once",
  async (h, browser) => {
    const project = await h.project(["https://app.example.com"]);
    await postEntries(h, project.id, { origin: "https://shop.example.net" });
    await h.post(randomEntry({ projectId: project.id, appid: "com.x.y" }));
    await h.process();
    const kept = await listRejected(h.kv, project.id);
    const origin = kept.find((k) => k.reason === "bad_origin")!;
    const path = `/projects/${project.id}`;

    assert.equal(
      (await browser.post(`${path}/settings/allow`, {
        value: "https://shop.example.net",
        back: "rejections",
      })).status,
      303,
    );
    const res = await browser.post(`${path}/rejections/replay`, {
      entry: "all",
    });
    assert.equal(res.status, 303);
    assert.equal(
      res.headers.get("location"),
      `${path}/rejections#replay-results`,
    );
    const html = await (await browser.get(`${path}/rejections`))
      .text();
    const text = textOf(html);
    assert.match(text, /Replayed 2 entries: 1 stored, 1 not\./);
    assert.match(
      text,
      new RegExp(`${origin.entryId} stored \\(authorized by origin\\)`),
    );
    assert.match(text, /rejected again: unknown_appid — The appid is not/);
    assert.match(html, new RegExp(`href="${path}\\?around=${origin.entryId}`));

    const logs = await h.logs(project.id);
    assert.deepEqual(logs.map((r) => r.id), [origin.entryId]);
    assert.equal((await readStats(h.kv, project.id)).replayed, 1);
    assert.deepEqual(
      (await listRejected(h.kv, project.id)).map((k) => k.reason),
      ["unknown_appid"],
    );

    const again = textOf(
      await (await browser.get(`${path}/rejections`)).text(),
    );
    assert.doesNotMatch(again, /Replayed 2 entries/, "shown once");
    await browser.post(`${path}/rejections/replay`, {
      entry: origin.entryId,
    });
    const twice = textOf(
      await (await browser.get(`${path}/rejections`)).text(),
    );
    assert.match(
      twice,
      /Replayed 1 entry: 0 stored, 1 not\. .* no longer kept/,
    );
    assert.equal((await h.logs(project.id)).length, 1, "stored once");
  },
);

signedInTest(
  "a replay needs the form's token and the dashboard's origin",
  async (h, browser) => {
    const project = await h.project(["https://app.example.com"]);
    await postEntries(h, project.id, { origin: "https://shop.example.net" });
    await h.process();
    await browser.post(`/projects/${project.id}/settings/allow`, {
      value: "https://shop.example.net",
    });
    const path = `/projects/${project.id}/rejections/replay`;
    const forged = await post(h.dash, { ...browser, csrf: "guessed" }, path, {
      entry: "all",
    });
    assert.equal(forged.status, 403);
    await forged.body?.cancel();
    const foreign = await browser.post(path, { entry: "all" }, {
      origin: "https://evil.example",
      "sec-fetch-site": "cross-site",
    });
    assert.equal(foreign.status, 403);
    await foreign.body?.cancel();
    assert.equal((await listRejected(h.kv, project.id)).length, 1);
    assert.deepEqual(await h.logs(project.id), []);
  },
);

dashboardTest(
  "the rejections page shows the storage backlog: entries not yet stored and not yet merged, with the oldest's age",
  async (h) => {
    const project = await h.project(["https://app.example.com"]);
    await postEntries(h, project.id, { origin: ORIGIN });
    await h.process();
    await postEntries(h, project.id, { origin: ORIGIN });
    await h.pipeline.producer.flush();
    h.clock.advance(2500);
    const browser = await signIn(h.dash);
    const res = await browser.get(`/projects/${project.id}/rejections`);
    const text = textOf(await res.text());
    assert.match(text, /Not yet stored 1 oldest 2\.5 s/);
    assert.match(text, /Not yet merged 1 oldest 2\.5 s/);
  },
);

signedInTest(
  "a bad signature shows the members as sent, byte for byte, beside the expected text, and offers no replay",
  async (h, browser) => {
    const project = await h.project(["https://app.example.com"]);
    const body = {
      level: "error",
      projectId: project.id,
      data: { title: "<b>Payment</b> failed", orderId: 1234 },
    };
    // Sent as Python writes it, and signed with a wrong secret.
    const python = JSON.stringify(body).replaceAll(",", ", ")
      .replaceAll(":", ": ");
    const timestamp = String(h.clock.now());
    const signature = sign(
      "not the secret",
      `${project.id}${python}${timestamp}`,
    );
    const res = await h.post(python, { timestamp, signature });
    assert.equal(res.status, 200);
    await res.body?.cancel();
    await h.process();
    const [kept] = await listRejected(h.kv, project.id);
    assert.equal(kept!.reason, "bad_signature");
    const html = await (await browser.get(`/projects/${project.id}/rejections`))
      .text();
    const sent =
      /<pre class="sent-text" id="sent-text-[0-9a-f]{28}">(.*?)<\/pre>/s
        .exec(html);
    assert.ok(sent, "the text as sent is shown in a <pre>");
    assert.doesNotMatch(sent[1]!, /<b>/, "escaped for the page");
    assert.equal(
      textOf(sent[1]!.replace(/<\/?mark>/g, "")),
      `${project.id}{"level": "error","projectId": "${project.id}","data": {"title": "<b>Payment</b> failed", "orderId": 1234}}${timestamp}`,
    );
    // The first difference, the space after the first colon, is marked.
    assert.match(
      sent[1]!,
      /\{&quot;level&quot;:<mark> <\/mark>&quot;error/,
    );
    assert.match(textOf(html), /They differ from character \d+ on/);
    assert.doesNotMatch(html, /name="entry" value="[0-9a-f]{28}"/);
    assert.doesNotMatch(textOf(html), /Replay all/);
    // Replaying "all" by hand replays nothing that cannot be stored.
    const replay = await browser.post(
      `/projects/${project.id}/rejections/replay`,
      { entry: "all" },
    );
    assert.equal(replay.status, 303);
    const after = textOf(
      await (await browser.get(`/projects/${project.id}/rejections`)).text(),
    );
    assert.match(after, /There was no kept entry to replay/);
  },
);

signedInTest(
  "a replay of anything but an entry id or all is a 400 that names what it takes, however long",
  async (h, browser) => {
    const project = await h.project(["https://app.example.com"]);
    const path = `/projects/${project.id}/rejections/replay`;
    // Just under the form limit: its results once overflowed a KV value.
    for (const entry of ["x".repeat(65_440), "abc", "ALL", ""]) {
      const res = await browser.post(path, { entry });
      assert.equal(res.status, 400, entry.slice(0, 10));
      assert.match(
        textOf(await res.text()),
        /28 hexadecimal digits\) or "all"/,
      );
    }
    const missing = await browser.post(path, { entry: "0".repeat(28) });
    assert.equal(missing.status, 303);
    await missing.body?.cancel();
  },
);
