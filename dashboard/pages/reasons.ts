/**
 * What each rejection reason means and what to do about it, as the
 * rejections page explains them (docs/design.md#rejection-reasons).
 *
 * @module
 */

/** What a reason means and what to do about it. */
export const REASON_HELP: Record<string, { meaning: string; fix: string }> = {
  bad_origin: {
    meaning: "The Origin header is not in the allow-list.",
    fix:
      "If the page is yours, allow its origin exactly as the browser sends it: scheme, host and port, no path, no trailing slash. Then replay the entry.",
  },
  unknown_appid: {
    meaning: "The appid is not in the allow-list.",
    fix:
      "If the app is yours, allow its app id (reverse domain notation, e.g. com.example.shop.ios). Then replay the entry.",
  },
  bad_signature: {
    meaning:
      "The signature does not match the one computed with the project's secret.",
    fix:
      "Sign projectId + the compact JSON of level, projectId, device, context, data (in that order) + the timestamp, with HMAC-SHA256 and the current secret, in upper-case hex. Compare what your client signs with the text the service expected, shown with the entry. Common slips: Python's json.dumps default separators add spaces, Go sorts map keys, json.Encoder adds a trailing newline, echo adds one where printf does not, and a secret rotated past its grace period.",
  },
  stale_timestamp: {
    meaning:
      "The signature matches but the timestamp is too far from the time of receipt.",
    fix:
      "Send the current Unix time in milliseconds (not seconds) and keep the server's clock in sync.",
  },
  replayed: {
    meaning: "This signature was already used.",
    fix:
      "Sign every entry afresh with a new timestamp; do not resend a signed request as is. Such an entry cannot be replayed.",
  },
  no_credentials: {
    meaning: "The entry carried no Origin, no appid and no signature.",
    fix:
      "Browsers send Origin themselves; mobile apps must send appid; servers must sign.",
  },
  unknown_level: {
    meaning:
      "The level is not one of the four standard ones and the project does not declare it.",
    fix:
      "Declare the level under Custom levels in the settings, or send info, warning, error or critical. Then replay the entry.",
  },
  over_quota: {
    meaning:
      "The entry was authenticated but the project had stored its quota for the day or the minute; it is counted, not kept.",
    fix:
      "Raise or remove the quota in the settings (administrators), or send less; see the Usage page.",
  },
  sampled: {
    meaning:
      "The entry was authenticated during a spike and sampled out by the project's spike protection; it is counted, not kept.",
    fix:
      "Nothing to fix: 1 in k info and warning entries is stored while the rate is past the set multiple of its hourly average.",
  },
};
