/**
 * The `text` line of a delivery as chat tools show it (Slack, Mattermost,
 * Rocket.Chat, Discord's Slack-compatible endpoint): it carries an entry's
 * title and release, which its sender chose, so it must read as text —
 * one line, no link, no image, no mention (docs/alerts.md#what-a-delivery-looks-like).
 *
 * @module
 */

/** Line breaks: in a chat line they would start a line of the sender's. */
const BREAKS = /[\r\n\u0085\u2028\u2029]+/g;
/**
 * Other control characters and invisible format characters (bidirectional
 * overrides, zero width characters): dropped.
 */
const CONTROLS = /[\p{Cc}\p{Cf}]/gu;
/** Zero width space: breaks a markup's token without showing. */
const ZWSP = "\u200b";

/**
 * `text` as inert chat text: on one line, without control characters,
 * `&`, `<` and `>` escaped (Slack's markup: `<!channel>`, `<url|label>`),
 * and a zero width space after each `@` (mentions), between `](` (links)
 * and after `!` before `[` (images) in the other tools' Markdown, inside
 * `://` and after a dot before a letter (the bare URLs and domains chat
 * tools make links of, and preview).
 *
 * @example
 * ```ts
 * chatText("@all [sign in](https://evil.example)\nResolved");
 * // "@\u200ball [sign in]\u200b(https:/\u200b/evil.\u200bexample) Resolved"
 * ```
 */
export function chatText(text: string): string {
  return text.replace(BREAKS, " ").replace(CONTROLS, "")
    .replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;")
    .replaceAll("@", `@${ZWSP}`).replaceAll("](", `]${ZWSP}(`)
    .replaceAll("![", `!${ZWSP}[`).replaceAll("://", `:/${ZWSP}/`)
    .replace(DOMAIN_DOT, `.${ZWSP}`);
}

/** A dot before a letter: where a domain goes on (`evil.example`). */
const DOMAIN_DOT = /\.(?=\p{L})/gu;
