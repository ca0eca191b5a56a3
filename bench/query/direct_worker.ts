/**
 * A worker of bench/query/direct.ts: builds final chunks from the records
 * it is sent (sorted by id), so that several cores build them while the
 * main thread generates and commits.
 *
 * @module
 */
import type { LogRecord } from "../../domain/entry.ts";
import { buildChunk, FINAL_TIER } from "../../db/storage/chunk.ts";
import { encodeRecordLine } from "../../db/storage/lines.ts";

/** A chunk to build: its number in the run and its records. */
export interface DirectJob {
  n: number;
  records: LogRecord[];
}

const scope = self as unknown as {
  onmessage: (event: MessageEvent<DirectJob>) => void;
  postMessage: (message: unknown) => void;
};

scope.onmessage = (event) => {
  const { n, records } = event.data;
  const members = new Set<number>();
  const chunk = buildChunk(records.map(encodeRecordLine), {
    records,
    tier: FINAL_TIER,
    members,
  });
  scope.postMessage({ n, chunk, members });
};
