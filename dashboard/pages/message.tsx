/**
 * A page that only says something: not found, forbidden, too many attempts.
 *
 * @module
 */
import { link } from "./format.ts";
import { Layout, type PageContext } from "./layout.tsx";

/** The message page. */
export function MessagePage(
  props: { ctx: PageContext; title: string; text: string },
) {
  const { ctx } = props;
  return (
    <Layout ctx={ctx} title={props.title}>
      <section class="card narrow">
        <h1>{props.title}</h1>
        <p id="message">{props.text}</p>
        <p>
          <a href={link(ctx.base, "/")}>Back to the projects</a>
        </p>
      </section>
    </Layout>
  );
}
