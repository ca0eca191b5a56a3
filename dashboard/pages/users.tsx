/**
 * The accounts page (`/users`, administrators only): every account with its
 * role and projects, a form per account that sets them, a Remove button,
 * the form that adds one, and the service's audit log of accounts.
 *
 * @module
 */
import type { AuditEvent } from "../../db/audit.ts";
import { ROLES } from "../../db/users.ts";
import { AuditTable } from "./audit.tsx";
import { formatTime } from "./format.ts";
import {
  Card,
  CreateFormCard,
  ListTable,
  type PageContext,
  PostForm,
  SectionLayout,
} from "./layout.tsx";

/** An account as listed (no hash). */
export interface UserRow {
  email: string;
  role: string;
  projects: string[];
  createdAt: number;
}

/** Data of the users page. */
export interface UsersData {
  users: UserRow[];
  /** Every project, for the project choices. */
  projects: { id: string; name: string }[];
  events: AuditEvent[];
  notice?: { kind: "ok" | "error"; text: string };
  /** Values of the add form to show again after a refusal. */
  form?: { email: string; role: string };
}

function RoleSelect(props: { selected: string; id?: string }) {
  return (
    <select
      name="role"
      aria-label="Role"
      {...(props.id ? { id: props.id } : {})}
    >
      {ROLES.map((role) => (
        <option value={role} selected={role === props.selected}>{role}</option>
      ))}
    </select>
  );
}

function ProjectChoices(
  props: { projects: UsersData["projects"]; chosen: string[] },
) {
  if (props.projects.length === 0) {
    return <span class="hint">No projects yet.</span>;
  }
  return (
    <span class="choices">
      {props.projects.map((p) => (
        <label class="inline">
          <input
            type="checkbox"
            name={`project_${p.id}`}
            value="on"
            checked={props.chosen.includes(p.id)}
          />{" "}
          {p.name}
        </label>
      ))}
    </span>
  );
}

/** One account: its role and projects, a form that sets them, Remove. */
function UserItem(
  props: {
    ctx: PageContext;
    user: UserRow;
    projects: UsersData["projects"];
    names: Map<string, string>;
  },
) {
  const { ctx, user, names } = props;
  return (
    <tr>
      <td>{user.email}</td>
      <td>
        <PostForm ctx={ctx} to="/users/update" class="row">
          <input type="hidden" name="email" value={user.email} />
          <RoleSelect selected={user.role} />
          <ProjectChoices projects={props.projects} chosen={user.projects} />
          <button type="submit" class="small">Save</button>
        </PostForm>
        <span class="hint">
          {user.role === "admin"
            ? "all projects"
            : user.projects.map((id) => names.get(id) ?? id)
              .join(", ") || "no projects"}
        </span>
      </td>
      <td>{formatTime(user.createdAt, false)}</td>
      <td>
        <PostForm ctx={ctx} to="/users/remove" class="inline">
          <input type="hidden" name="email" value={user.email} />
          <button
            type="submit"
            class="link danger"
            aria-label={`Remove ${user.email}`}
          >
            Remove
          </button>
        </PostForm>
      </td>
    </tr>
  );
}

/** The form that adds an account, filled again with what was refused. */
function AddUserCard(props: { ctx: PageContext; data: UsersData }) {
  const { ctx, data } = props;
  return (
    <CreateFormCard
      ctx={ctx}
      titleId="add-title"
      title="Add a user"
      to="/users"
      id="add-user-form"
      button="Add user"
    >
      <label>
        Email
        <input
          name="email"
          required
          maxlength={254}
          autocomplete="off"
          value={data.form?.email ?? ""}
        />
      </label>
      <label>
        Role <RoleSelect selected={data.form?.role ?? "viewer"} />
      </label>
      <fieldset>
        <legend>Projects</legend>
        <ProjectChoices projects={data.projects} chosen={[]} />
      </fieldset>
      <label>
        Password <span class="hint">(at least 8 characters)</span>
        <input
          type="password"
          name="password"
          required
          minlength={8}
          autocomplete="new-password"
        />
      </label>
    </CreateFormCard>
  );
}

/** The users page. */
export function UsersPage(props: { ctx: PageContext; data: UsersData }) {
  const { ctx, data } = props;
  const names = new Map(data.projects.map((p) => [p.id, p.name]));
  return (
    <SectionLayout ctx={ctx} section="users" notice={data.notice}>
      <p class="hint">
        <strong>admin</strong>: everything, users included;{" "}
        <strong>member</strong>: reads and configures the projects given;{" "}
        <strong>viewer</strong>: reads the projects given, sees no secret. The
        built-in account <code>admin</code> signs in with ADMIN_PASSWORD.
      </p>
      {data.users.length === 0
        ? <p class="empty" id="no-users">No accounts besides admin yet.</p>
        : (
          <ListTable
            class="users"
            id="users"
            columns={["Email", "Role and projects", "Added (UTC)", {
              label: <span class="sr">Remove</span>,
            }]}
          >
            {data.users.map((user) => (
              <UserItem
                key={user.email}
                ctx={ctx}
                user={user}
                projects={data.projects}
                names={names}
              />
            ))}
          </ListTable>
        )}
      <AddUserCard ctx={ctx} data={data} />
      <Card titleId="audit-title" title="Changes to accounts">
        <AuditTable events={data.events} />
      </Card>
    </SectionLayout>
  );
}
