/**
 * Server clients: HMAC-SHA256 signatures (docs/design.md#signatures).
 *
 * The signed string is `projectId + params + timestamp`, where `params` is the
 * compact JSON of `{level, projectId, device, context, data}` in that order.
 * A signature also verifies when `device` / `context` was absent and the
 * client left it out of `params` or wrote `{}`, and when it matches the
 * client's own text of the five members with insignificant whitespace removed
 * (JSON writers that escape non-ASCII, write `1.0` or order keys otherwise).
 *
 * @module
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import type { Project } from "../db/projects.ts";
import { minifyJson } from "../domain/json.ts";
import type { QueuedEntry } from "../domain/entry.ts";

/** Outcome of {@linkcode verifySignature}. */
export type SignatureResult = "ok" | "bad_signature" | "stale_timestamp";

const SIGNATURE = /^[0-9A-F]{64}$/;
const TIMESTAMP = /^\d{1,16}$/;
const encoder = new TextEncoder();

/**
 * Computes the signature a client sends: uppercase hex HMAC-SHA256 of
 * `projectId + params + timestamp` with the project secret.
 *
 * @example
 * ```ts
 * const params = JSON.stringify({ level, projectId, device, context, data });
 * const signature = sign(secret, projectId + params + timestamp);
 * ```
 */
export function sign(secret: string, message: string): string {
  return createHmac("sha256", secret).update(message).digest("hex")
    .toUpperCase();
}

/** The `params` texts under which a signature of `entry` verifies. */
export function signedParams(entry: QueuedEntry): string[] {
  const texts = new Set<string>();
  const { level, projectId, data } = entry;
  for (
    const device of entry.device === undefined
      ? [undefined, {}]
      : [entry.device]
  ) {
    for (
      const context of entry.context === undefined
        ? [undefined, {}]
        : [entry.context]
    ) {
      texts.add(JSON.stringify({ level, projectId, device, context, data }));
    }
  }
  const raw = entry.raw;
  if (raw?.level && raw.projectId && raw.data) {
    const own = (name: string) =>
      raw[name] === undefined ? [undefined, "{}"] : [minifyJson(raw[name])];
    const head = `{"level":${minifyJson(raw.level)},"projectId":${
      minifyJson(raw.projectId)
    }`;
    const data = `"data":${minifyJson(raw.data)}}`;
    const contexts = own("context");
    for (const device of own("device")) {
      for (const context of contexts) {
        texts.add(
          head + (device === undefined ? "" : `,"device":${device}`) +
            (context === undefined ? "" : `,"context":${context}`) + "," + data,
        );
      }
    }
  }
  return [...texts];
}

/** The secrets that verify an entry received at `receivedAt`. */
export function activeSecrets(project: Project, receivedAt: number): string[] {
  const secrets = [project.secret];
  if (
    project.previousSecret !== undefined &&
    (project.previousSecretExpiresAt ?? 0) > receivedAt
  ) {
    secrets.push(project.previousSecret);
  }
  return secrets;
}

/**
 * Verifies the `signature` / `timestamp` headers of `entry` against the
 * project's secrets, in constant time per comparison; the timestamp must be
 * within `maxSkewMs` of the time the request was received.
 */
export function verifySignature(
  entry: QueuedEntry,
  project: Project,
  maxSkewMs: number,
): SignatureResult {
  const { signature, timestamp } = entry;
  if (
    signature === undefined || timestamp === undefined ||
    !SIGNATURE.test(signature) || !TIMESTAMP.test(timestamp)
  ) {
    return "bad_signature";
  }
  const received = encoder.encode(signature);
  let matched = false;
  for (const secret of activeSecrets(project, entry.receivedAt)) {
    for (const params of signedParams(entry)) {
      const expected = encoder.encode(
        sign(secret, entry.projectId + params + timestamp),
      );
      if (timingSafeEqual(expected, received)) matched = true;
    }
  }
  if (!matched) return "bad_signature";
  if (Math.abs(entry.receivedAt - Number(timestamp)) > maxSkewMs) {
    return "stale_timestamp";
  }
  return "ok";
}
