/**
 * A token made by an account needs, at every use, that account's right to
 * configure its project (docs/accounts.md#whose-a-token-is): a member's read
 * and upload tokens stop working once the admin removes the member, makes
 * it a viewer or takes the project from it, and stay revoked when the
 * right comes back; the admin's and the command's tokens keep working.
 *
 * @module
 */
import assert from "node:assert/strict";
import { listAudit } from "../../db/audit.ts";
import { createProject } from "../../db/projects.ts";
import { listReadTokens } from "../../db/tokens.ts";
import { updateUser } from "../../db/users.ts";
import { signInNew } from "../_helpers/dashboard_accounts.ts";
import {
  apiRequest,
  type Browser,
  createTokenOnPage,
  dashboardTest,
  type DashHarness,
  signIn,
  textOf,
} from "../_helpers/dashboard.ts";
import { cli } from "../_helpers/cli.ts";
import { SMALLEST_MAP } from "../_helpers/stacks.ts";

/** What the read API answers `token` on `projectId`. */
async function readStatus(
  h: DashHarness,
  projectId: string,
  token: string,
): Promise<number> {
  const res = await apiRequest(h, `/api/v1/projects/${projectId}/logs`, token);
  await res.body?.cancel();
  return res.status;
}

/** What an upload with `token` to `projectId` is answered. */
async function uploadStatus(
  h: DashHarness,
  projectId: string,
  token: string,
): Promise<number> {
  const res = await apiRequest(
    h,
    `/api/v1/projects/${projectId}/sourcemaps?release=1.0.0`,
    token,
    { method: "POST", body: SMALLEST_MAP },
  );
  await res.body?.cancel();
  return res.status;
}

/** A read and an upload token made on the settings page by `browser`. */
async function tokensOf(
  browser: Browser,
  projectId: string,
  prefix: string,
): Promise<{ read: string; upload: string }> {
  const make = async (scope: "read" | "upload") =>
    (await createTokenOnPage(browser, projectId, {
      name: `${prefix}-${scope}`,
      scope,
    })).token;
  return { read: await make("read"), upload: await make("upload") };
}

/** The three ways an admin takes the right away, as a Users page form. */
const TAKEN: [
  string,
  string,
  (own: string, other: string) => Record<
    string,
    string
  >,
][] = [
  ["removed", "/users/remove", () => ({})],
  ["made a viewer", "/users/update", (own) => ({
    role: "viewer",
    [`project_${own}`]: "on",
  })],
  ["given another project only", "/users/update", (_, other) => ({
    role: "member",
    [`project_${other}`]: "on",
  })],
];

dashboardTest(
  "a member's tokens stop once it is removed, made a viewer or loses the project; the admin's and the command's keep working",
  async (h) => {
    const own = await createProject(h.kv, { name: "own" });
    const other = await createProject(h.kv, { name: "other" });
    const admin = await signIn(h.dash);
    const adminTokens = await tokensOf(admin, own.id, "admin");
    const made = await cli(h.kv, [
      "token",
      "create",
      own.id,
      "--name",
      "ci",
      "--json",
    ]);
    assert.equal(made.code, 0, made.stderr);
    const cliToken = JSON.parse(made.stdout).token as string;
    for (const [n, [how, path, form]] of TAKEN.entries()) {
      const email = `member-${n}@example.com`;
      const member = await signInNew(h, email, "member", [own.id]);
      const mine = await tokensOf(member, own.id, email);
      assert.equal(await readStatus(h, own.id, mine.read), 200, how);
      assert.equal(await uploadStatus(h, own.id, mine.upload), 201, how);

      const res = await admin.post(path, { email, ...form(own.id, other.id) });
      assert.equal(res.status, 303, how);
      assert.equal(await readStatus(h, own.id, mine.read), 401, how);
      assert.equal(await uploadStatus(h, own.id, mine.upload), 401, how);
      const page = textOf(
        await (await admin.get(res.headers.get("location")!)).text(),
      );
      assert.match(page, /2 token\(s\) they created stopped working/, how);
      assert.equal(await readStatus(h, own.id, adminTokens.read), 200, how);
      assert.equal(
        await uploadStatus(h, own.id, adminTokens.upload),
        201,
        how,
      );
      assert.equal(await readStatus(h, own.id, cliToken), 200, how);
    }
    assert.deepEqual(
      (await listReadTokens(h.kv, own.id)).map((t) => t.name).sort(),
      ["admin-read", "admin-upload", "ci"],
      "the members' tokens are revoked, the others kept",
    );
    const revoked = (await listAudit(h.kv, own.id))
      .filter((e) => e.action === "token.revoke");
    assert.ok(revoked.every((e) => e.actor === "admin"));
    assert.deepEqual(
      revoked.map((e) => e.detail!.replace(/ \([\w-]+\) /, " ")).sort(),
      [0, 1, 2].flatMap((n) =>
        ["read", "upload"].map((scope) =>
          `member-${n}@example.com-${scope} of member-${n}@example.com`
        )
      ),
    );
  },
);

dashboardTest(
  "a token stops at its next use when its creator loses the right by any path, and stays stopped when it comes back",
  async (h) => {
    const own = await createProject(h.kv, { name: "own" });
    const email = "ana@example.com";
    const member = await signInNew(h, email, "member", [own.id]);
    const mine = await tokensOf(member, own.id, "ana");
    // Changed without the Users page or the command: the check at use stops it.
    await updateUser(h.kv, email, { role: "viewer" });
    assert.equal(await readStatus(h, own.id, mine.read), 401);
    const res = await apiRequest(
      h,
      `/api/v1/projects/${own.id}/logs`,
      mine.read,
    );
    assert.equal(res.headers.get("www-authenticate"), 'Bearer realm="logs"');
    assert.match((await res.json()).error, /revoked/);
    assert.equal(await uploadStatus(h, own.id, mine.upload), 401);
    await updateUser(h.kv, email, { role: "member" });
    assert.equal(await readStatus(h, own.id, mine.read), 200);

    const run = await cli(h.kv, ["user", "set", email, "--role", "viewer"]);
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /2 token\(s\) it created stopped working/);
    await updateUser(h.kv, email, { role: "member" });
    assert.equal(await readStatus(h, own.id, mine.read), 401);
    assert.equal(await uploadStatus(h, own.id, mine.upload), 401);
  },
);
