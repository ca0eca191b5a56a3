/**
 * A refused value of a settings form and the reason, shown below the form.
 *
 * @module
 */

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
