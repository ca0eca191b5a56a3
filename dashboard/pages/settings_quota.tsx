/**
 * The Quota card of a project's settings, for administrators: entries
 * stored per day and per minute, and spike protection
 * (docs/privacy.md#quotas). An empty field removes its bound.
 *
 * @module
 */
import { Card, type PageContext, PostForm } from "./layout.tsx";

/** A refused value and why. */
interface Refused {
  value: string;
  message: string;
}

/** Props of {@linkcode QuotaSection}. */
export interface QuotaSectionProps {
  ctx: PageContext;
  quota?: { perDay?: number; perMinute?: number } | undefined;
  spike?: { multiple: number; keep: number } | undefined;
  /** URL of a settings action. */
  action: (path: string) => string;
  errors: { quota?: Refused | undefined; spike?: Refused | undefined };
}

function Refusal(props: { error: Refused | undefined }) {
  return props.error
    ? <p class="field-error" role="alert">{props.error.message}</p>
    : null;
}

/** The Quota card. */
export function QuotaSection(props: QuotaSectionProps) {
  const { ctx, quota, spike, action, errors } = props;
  return (
    <Card id="quota" titleId="quota-title" title="Quota and spikes">
      <p class="hint">
        Past a quota entries are counted as over_quota and not stored; the first
        entry of a new error group is stored all the same. Days are UTC.
      </p>
      <PostForm ctx={ctx} action={action("quota")} class="row">
        <label>
          Per day{" "}
          <input
            name="per_day"
            type="number"
            min={1}
            class="short"
            value={quota?.perDay === undefined ? "" : String(quota.perDay)}
          />
        </label>
        <label>
          Per minute{" "}
          <input
            name="per_minute"
            type="number"
            min={1}
            class="short"
            value={quota?.perMinute === undefined
              ? ""
              : String(quota.perMinute)}
          />
        </label>
        <button type="submit">Save quota</button>
      </PostForm>
      <Refusal error={errors.quota} />
      <PostForm ctx={ctx} action={action("spike")} class="row">
        <label>
          In a spike past{" "}
          <input
            name="multiple"
            type="number"
            min={2}
            step="any"
            class="short"
            value={spike ? String(spike.multiple) : ""}
          />× the hourly average, keep 1 in{" "}
          <input
            name="keep"
            type="number"
            min={2}
            class="short"
            value={spike ? String(spike.keep) : ""}
          />{" "}
          info and warning entries
        </label>
        <button type="submit">Save spike protection</button>
      </PostForm>
      <Refusal error={errors.spike} />
    </Card>
  );
}
