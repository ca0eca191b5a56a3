/**
 * A project's settings (`/projects/:id/settings`): the allow-list of
 * origins and app ids, custom levels, retention, secret rotation with a
 * grace period (the new secret shown once), the "Send your first entry"
 * snippets, and deletion behind a typed confirmation. A refused value is
 * shown again beside its form with the reason.
 *
 * @module
 */
import { formatDuration, formatTime, link } from "./format.ts";
import {
  Card,
  CopyableCode,
  FlashNotice,
  Notice,
  type PageContext,
  PostForm,
  ProjectLayout,
} from "./layout.tsx";
import type { Child } from "hono/jsx";
import { Snippets } from "./snippets.tsx";
import {
  type FieldError,
  FieldErrorText,
  RemoveButton,
} from "./settings_forms.tsx";
import { ScrubbingSection, type ScrubDryRun } from "./settings_scrub.tsx";
import { QuotaSection } from "./settings_quota.tsx";
import type { ScrubRule } from "../../domain/scrub.ts";
import { MAX_RETENTION_DAYS, MIN_RETENTION_DAYS } from "../../db/projects.ts";
import { type TokenRow, TokensSection } from "./tokens.tsx";

/** The project as the settings show it (never its secrets). */
export interface SettingsProject {
  id: string;
  name: string;
  allowedOrigin: string[];
  levels: string[];
  retentionDays: number;
  createdAt: number;
  /** Until when the previous secret still verifies, after a rotation. */
  previousSecretExpiresAt?: number;
  /** Scrubbing rules beside the defaults. @default none */
  scrubRules?: ScrubRule[];
  /** @default none */
  quota?: { perDay?: number; perMinute?: number };
  /** @default off */
  spike?: { multiple: number; keep: number };
  /** Retention by filter. @default none */
  retentionRules?: { filter: string; days: number }[];
}

export type { FieldError };

/** Data of the settings page. */
export interface SettingsData {
  project: SettingsProject;
  now: number;
  /** The service's `…/api/v1/logs`, for the snippets. */
  endpoint: string;
  notice?: { kind: "ok" | "error"; text: string };
  errors?: {
    allow?: FieldError;
    level?: FieldError;
    retention?: FieldError;
    rotate?: FieldError;
    delete?: FieldError;
    token?: FieldError;
    quota?: FieldError;
    spike?: FieldError;
    scrub?: FieldError;
    retentionRule?: FieldError;
  };
  /** A scrubbing rule's dry run, shown on the Scrubbing card (saves nothing). */
  dryRun?: ScrubDryRun;
  /** The project's read tokens (never the tokens themselves). */
  tokens?: TokenRow[];
  /** Set right after creating a read token: shown this once. */
  newToken?: { name: string; token: string };
  /** Set right after a rotation: shown this once. */
  newSecret?: string;
}

/** Grace periods offered when rotating, in ms. */
export const GRACE_CHOICES: [string, number][] = [
  ["none (the old secret stops at once)", 0],
  ["1 hour", 3_600_000],
  ["24 hours", 86_400_000],
  ["7 days", 7 * 86_400_000],
];

/** Props of {@linkcode AddValueForm}. */
interface AddValueFormProps {
  ctx: PageContext;
  action: string;
  id?: string;
  /** The form field's name. */
  name: string;
  placeholder: string;
  /** The field's accessible name. */
  label: string;
  button: string;
  /** A refused value: shown again in the field, with the reason below. */
  error: FieldError | undefined;
  /** More fields, after the value's. */
  children?: Child;
}

/** A form of one text field (and `children`) that adds a value to a list. */
function AddValueForm(props: AddValueFormProps) {
  const { error } = props;
  return (
    <>
      <PostForm
        ctx={props.ctx}
        action={props.action}
        class="row"
        {...(props.id ? { id: props.id } : {})}
      >
        <input
          name={props.name}
          required
          placeholder={props.placeholder}
          aria-label={props.label}
          value={error?.value ?? ""}
          aria-invalid={error ? "true" : undefined}
        />
        {props.children}
        <button type="submit">{props.button}</button>
      </PostForm>
      <FieldErrorText error={error} />
    </>
  );
}

/** Props of {@linkcode RemovableValues}. */
interface RemovableValuesProps {
  ctx: PageContext;
  values: string[];
  /** Where each Remove form posts. */
  action: string;
  /** Name of the hidden field that carries the value. */
  field: string;
  /** Accessible label of a value's Remove button. */
  removeLabel: (value: string) => string;
  id?: string;
}

/** A list of values, each with a Remove button posting it to `action`. */
function RemovableValues(props: RemovableValuesProps) {
  const { ctx, field } = props;
  return (
    <ul class="values" {...(props.id === undefined ? {} : { id: props.id })}>
      {props.values.map((value) => (
        <li>
          <code>{value}</code>
          <RemoveButton
            ctx={ctx}
            action={props.action}
            field={field}
            value={value}
            label={props.removeLabel(value)}
          />
        </li>
      ))}
    </ul>
  );
}

/** What each section of the settings page reads. */
interface SectionProps {
  ctx: PageContext;
  data: SettingsData;
  /** The project, as in `data`. */
  project: SettingsProject;
  /** The refused fields, as in `data`, `{}` for none. */
  errors: NonNullable<SettingsData["errors"]>;
  /** The URL of a settings form, by its path under `settings/`. */
  action: (path: string) => string;
}

/** Props of {@linkcode ValuesCard}. */
interface ValuesCardProps {
  ctx: PageContext;
  /** The card's id; its title's is `<id>-title`, its list's `<id>-list`. */
  id: string;
  title: string;
  /** What the values do: the card's hint. */
  children: Child;
  /** Shown in place of an empty list. @default nothing */
  empty?: Child;
  values: string[];
  /** Name of the field carrying a value, to add or to remove. */
  field: string;
  /** Where a Remove form posts. */
  removeAction: string;
  removeLabel: (value: string) => string;
  /** The add form, but for its field's name. */
  add: Omit<AddValueFormProps, "ctx" | "name">;
}

/** A card of values: what they do, the list with Remove buttons, an add form. */
function ValuesCard(props: ValuesCardProps) {
  const { ctx, id, field } = props;
  return (
    <Card id={id} titleId={`${id}-title`} title={props.title}>
      <p class="hint">{props.children}</p>
      {props.values.length === 0 ? props.empty : (
        <RemovableValues
          ctx={ctx}
          id={`${id}-list`}
          values={props.values}
          action={props.removeAction}
          field={field}
          removeLabel={props.removeLabel}
        />
      )}
      <AddValueForm ctx={ctx} name={field} {...props.add} />
    </Card>
  );
}

/** The allow-list: the origins and app ids whose entries are stored. */
function AllowListSection(
  { ctx, action, project, errors }: SectionProps,
) {
  return (
    <ValuesCard
      ctx={ctx}
      id="allow"
      title="Allowed origins and app ids"
      empty={
        <p class="empty">
          Nothing allowed yet: only signed server calls are stored.
        </p>
      }
      values={project.allowedOrigin}
      field="value"
      removeAction={action("disallow")}
      removeLabel={(value) => `Remove ${value}`}
      add={{
        action: action("allow"),
        id: "allow-form",
        placeholder: "https://shop.example.com or com.example.shop.ios",
        label: "Origin or app id to allow",
        button: "Allow",
        error: errors.allow,
      }}
    >
      A browser entry is stored when its Origin is listed here
      (scheme://host[:port], no path, no wildcard); a mobile entry when its
      appid is (reverse domain notation).
    </ValuesCard>
  );
}

/** The custom levels stored beside the standard ones. */
function LevelsSection(
  { ctx, action, project, errors }: SectionProps,
) {
  return (
    <ValuesCard
      ctx={ctx}
      id="levels"
      title="Custom levels"
      values={project.levels}
      field="level"
      removeAction={action("levels/remove")}
      removeLabel={(level) => `Remove level ${level}`}
      add={{
        action: action("levels/add"),
        placeholder: "audit",
        label: "Level name",
        button: "Add level",
        error: errors.level,
      }}
    >
      Beside info, warning, error and critical, entries with these levels are
      stored; any other level is refused as unknown_level.
    </ValuesCard>
  );
}

/** A number of days entries are kept, within what a project may set. */
function DaysField(props: {
  /** The words before the field. */
  label: string;
  /** @default none: an empty field */
  value?: string;
}) {
  return (
    <label>
      {props.label}{" "}
      <input
        name="days"
        type="number"
        min={MIN_RETENTION_DAYS}
        max={MAX_RETENTION_DAYS}
        required
        class="short"
        value={props.value}
      />{" "}
      days
    </label>
  );
}

/** How long entries are kept (a shorter retention ends stored ones past it). */
function RetentionSection(props: SectionProps) {
  const { ctx, action, project, errors } = props;
  return (
    <Card id="retention" titleId="retention-title" title="Retention">
      <PostForm ctx={ctx} action={action("retention")} class="row">
        <DaysField
          label="Keep entries for"
          value={errors.retention?.value ?? String(project.retentionDays)}
        />
        <button type="submit">Save</button>
      </PostForm>
      <p class="hint">
        Shorter: stored entries past it go at the next merge round. Longer:
        applies to entries stored from now on.
      </p>
      <FieldErrorText error={errors.retention} />
      <RetentionRules {...props} />
    </Card>
  );
}

/** Retention by filter: the rules, and for an admin their forms. */
function RetentionRules(
  { ctx, action, project, errors }: SectionProps,
) {
  const rules = project.retentionRules ?? [];
  const editable = ctx.posts(
    `/projects/${project.id}/settings/retention-rules/add`,
  );
  return (
    <>
      {rules.length > 0 && (
        <ul id="retention-rules" class="values">
          {rules.map((rule) => (
            <li>
              <code>{rule.filter}</code> kept {rule.days} days
              {editable && (
                <RemoveButton
                  ctx={ctx}
                  action={action("retention-rules/remove")}
                  field="filter"
                  value={rule.filter}
                  label={`Remove rule ${rule.filter}`}
                />
              )}
            </li>
          ))}
        </ul>
      )}
      <p class="hint">
        Rules by level: "level&lt;=info" kept 3 days; the longest matching rule
        wins, the retention above where none matches.
      </p>
      {editable && (
        <AddValueForm
          ctx={ctx}
          action={action("retention-rules/add")}
          id="retention-rule-form"
          name="filter"
          placeholder="level<=info"
          label="Filter"
          button="Add rule"
          error={errors.retentionRule}
        >
          <DaysField label="kept" />
        </AddValueForm>
      )}
    </>
  );
}

/** Rotating the secret, with the new one shown once and the old one's grace. */
function SecretSection({ ctx, data, action, project, errors }: SectionProps) {
  return (
    <Card id="secret" titleId="secret-title" title="Secret">
      {data.newSecret && (
        <div class="created">
          <p>
            New secret:{" "}
            <CopyableCode id="new-secret" value={data.newSecret} secret />
          </p>
          <Notice kind="info">
            Copy it now: it is shown only this once.
          </Notice>
        </div>
      )}
      {project.previousSecretExpiresAt !== undefined &&
        project.previousSecretExpiresAt > data.now && (
        <p class="hint">
          The previous secret still verifies until{" "}
          {formatTime(project.previousSecretExpiresAt, false)}{" "}
          UTC ({formatDuration(
            project.previousSecretExpiresAt - data.now,
          )} left).
        </p>
      )}
      <PostForm ctx={ctx} action={action("rotate")} class="row">
        <label>
          Keep the old secret valid for{" "}
          <select name="grace">
            {GRACE_CHOICES.map(([label, ms]) => (
              <option value={String(ms)} selected={ms === 86_400_000}>
                {label}
              </option>
            ))}
          </select>
        </label>
        <button type="submit">Rotate secret</button>
      </PostForm>
      <FieldErrorText error={errors.rotate} />
    </Card>
  );
}

/** Deleting the project, behind its typed name. */
function DeleteSection(
  { ctx, action, project, errors }: SectionProps,
) {
  return (
    <Card
      id="delete"
      class="danger-zone"
      titleId="delete-title"
      title="Delete this project"
    >
      <p>
        Deletes the project with all its stored entries, counters and recent
        rejections. This cannot be undone. Type the project's name,{" "}
        <strong>{project.name}</strong>, to confirm.
      </p>
      <PostForm
        ctx={ctx}
        action={action("delete")}
        class="row"
        id="delete-form"
      >
        <input
          name="confirm"
          required
          autocomplete="off"
          aria-label="Project name"
          data-expect={project.name}
        />
        <button type="submit" class="danger">Delete project</button>
      </PostForm>
      <FieldErrorText error={errors.delete} />
    </Card>
  );
}

/** The settings page. */
export function SettingsPage(props: { ctx: PageContext; data: SettingsData }) {
  const { ctx, data } = props;
  const { project, errors = {} } = data;
  const action = (path: string) =>
    link(ctx.base, `/projects/${project.id}/settings/${path}`);
  const origin = project.allowedOrigin.find((v) => v.includes("://"));
  const parts: SectionProps = { ctx, data, project, errors, action };
  return (
    <ProjectLayout ctx={ctx} project={project} tab="settings">
      <h1>Settings</h1>
      <FlashNotice notice={data.notice} />
      <dl class="pairs">
        <dt>Project id</dt>
        <dd>
          <CopyableCode id="project-id" value={project.id} />
        </dd>
        <dt>Created</dt>
        <dd>{formatTime(project.createdAt, false)} UTC</dd>
      </dl>

      <div class="settings-grid">
        <div class="column">
          <AllowListSection {...parts} />
          <LevelsSection {...parts} />
          <RetentionSection {...parts} />
          <ScrubbingSection
            ctx={ctx}
            rules={project.scrubRules ?? []}
            action={action}
            editable={ctx.posts(`/projects/${project.id}/settings/scrub/add`)}
            {...(errors.scrub ? { error: errors.scrub } : {})}
            {...(data.dryRun ? { dryRun: data.dryRun } : {})}
          />
          {ctx.posts(`/projects/${project.id}/settings/quota`) && (
            <QuotaSection
              ctx={ctx}
              quota={project.quota}
              spike={project.spike}
              action={action}
              errors={{ quota: errors.quota, spike: errors.spike }}
            />
          )}
          <SecretSection {...parts} />
        </div>
        <div class="column">
          <Card
            id="first-entry"
            titleId="first-title"
            title="Send your first entry"
          >
            <Snippets
              projectId={project.id}
              endpoint={data.endpoint}
              {...(origin ? { origin } : {})}
            />
          </Card>
          <TokensSection
            ctx={ctx}
            projectId={project.id}
            tokens={data.tokens ?? []}
            {...(data.newToken ? { newToken: data.newToken } : {})}
            {...(errors.token ? { error: errors.token } : {})}
          />
        </div>
      </div>

      {ctx.posts(`/projects/${project.id}/settings/delete`) && (
        <DeleteSection {...parts} />
      )}
    </ProjectLayout>
  );
}
