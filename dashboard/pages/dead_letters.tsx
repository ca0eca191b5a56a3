/**
 * Dead letters (`/dead-letters`): batches whose processing failed again
 * and again, set aside instead of lost. Each can be replayed — moved back to
 * the pending batches, where a running server's sweeper processes it; an
 * entry is never stored twice. Or deleted, one at a time, its entries gone.
 *
 * @module
 */
import type { DeadLetter } from "../../queue/dead_letters.ts";
import { formatTime } from "./format.ts";
import {
  ListTable,
  type PageContext,
  PostForm,
  SectionLayout,
} from "./layout.tsx";

/** Data of the dead letters page. */
export interface DeadLettersData {
  letters: DeadLetter[];
  notice?: { kind: "ok" | "error"; text: string };
}

/** The dead letters page. */
export function DeadLettersPage(
  props: { ctx: PageContext; data: DeadLettersData },
) {
  const { ctx, data } = props;
  return (
    <SectionLayout ctx={ctx} section="dead-letters" notice={data.notice}>
      <p>
        Batches of entries whose processing failed 5 times in a row. Replaying
        one moves it back to the pending batches: a running server processes it
        within seconds, and storing is idempotent, so no entry is stored twice.
        Deleting one discards its entries for good; the service never deletes a
        dead letter by itself.
      </p>
      {data.letters.length === 0
        ? (
          <p class="empty" id="no-letters">
            No dead letters: every batch was processed.
          </p>
        )
        : (
          <>
            <ListTable
              class="letters"
              columns={[
                "Batch",
                "Created (UTC)",
                { label: "Entries", class: "num" },
                { label: "Attempts", class: "num" },
                "Last error",
                {
                  label: <span class="sr">Replay or delete</span>,
                },
              ]}
            >
              {data.letters.map((letter) => (
                <tr>
                  <td>
                    <code class="small">{letter.id}</code>
                  </td>
                  <td>{formatTime(letter.createdAt, false)}</td>
                  <td class="num">{letter.count}</td>
                  <td class="num">{letter.attempts}</td>
                  <td class="error-text">{letter.error ?? "—"}</td>
                  <td>
                    <PostForm
                      ctx={ctx}
                      to="/dead-letters/replay"
                      class="inline"
                    >
                      <input type="hidden" name="id" value={letter.id} />
                      <button type="submit" class="small">Replay</button>
                    </PostForm>{" "}
                    <PostForm
                      ctx={ctx}
                      to="/dead-letters/delete"
                      class="inline"
                    >
                      <input type="hidden" name="id" value={letter.id} />
                      <button type="submit" class="small danger">
                        Delete
                      </button>
                    </PostForm>
                  </td>
                </tr>
              ))}
            </ListTable>
            <PostForm ctx={ctx} to="/dead-letters/replay">
              <input type="hidden" name="id" value="all" />
              <button type="submit">Replay all</button>
            </PostForm>
          </>
        )}
    </SectionLayout>
  );
}
