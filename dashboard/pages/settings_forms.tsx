/**
 * Parts the settings page's cards share: a refused value with its reason
 * below the form, and a value's Remove button.
 *
 * @module
 */
import { type PageContext, PostForm } from "./layout.tsx";

/** A refused value and why, shown beside its form. */
export interface FieldError {
  value: string;
  message: string;
}

/** A refused value's reason, below its form. */
export function FieldErrorText(props: { error: FieldError | undefined }) {
  return props.error
    ? <p class="field-error" role="alert">{props.error.message}</p>
    : null;
}

/** Props of {@linkcode RemoveButton}. */
interface RemoveButtonProps {
  ctx: PageContext;
  /** Where the form posts. */
  action: string;
  /** The hidden field that carries the value, and the value. */
  field: string;
  value: string;
  /** The button's accessible name. */
  label: string;
}

/** A Remove button posting one value to `action`. */
export function RemoveButton(props: RemoveButtonProps) {
  return (
    <PostForm ctx={props.ctx} action={props.action} class="inline">
      <input type="hidden" name={props.field} value={props.value} />
      <button type="submit" class="link danger" aria-label={props.label}>
        Remove
      </button>
    </PostForm>
  );
}
