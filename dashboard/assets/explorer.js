// The explorer's progressive behaviour: live tail over server-sent events
// (pause and resume, resuming after the last entry shown), the expanded
// entry kept in the URL, older entries loaded as the list scrolls, and the
// keyboard (j/k to move, Enter to expand, / to search). Rows are always
// rendered by the server; this script only places them.

const list = document.getElementById("entries");
const live = document.getElementById("live");
const search = document.getElementById("q");

/** Ids of the rows on the page, so that no entry is shown twice. */
function hasRow(id) {
  return document.getElementById(`e-${id}`) !== null;
}

/** Parses server-rendered rows into nodes. */
function parseRows(html) {
  const template = document.createElement("template");
  template.innerHTML = html;
  return template.content;
}

/** Writes one URL parameter (or removes it) without a reload. */
function setParam(name, value) {
  const url = new URL(location.href);
  if (value === null) url.searchParams.delete(name);
  else url.searchParams.set(name, value);
  history.replaceState(null, "", url);
}

// Expanded entry <-> `open` in the URL; one at a time.
if (list) {
  list.addEventListener("toggle", (event) => {
    const row = event.target;
    if (!(row instanceof HTMLDetailsElement) || !row.dataset.id) return;
    if (row.open) {
      for (const other of list.querySelectorAll("details.entry[open]")) {
        if (other !== row) other.open = false;
      }
      setParam("open", row.dataset.id);
    } else if (
      new URL(location.href).searchParams.get("open") === row.dataset.id
    ) {
      setParam("open", null);
    }
  }, true);
  const opened = list.querySelector("details.entry[open]");
  if (opened) opened.scrollIntoView({ block: "center" });
}

// Live tail.
if (live && list) {
  const status = document.getElementById("live-status");
  const toggle = document.getElementById("live-toggle");
  let source = null;
  let newest = live.dataset.after;

  const start = () => {
    const url = new URL(live.dataset.tail, location.href);
    url.searchParams.set("after", newest);
    source = new EventSource(url);
    live.classList.add("on");
    status.textContent = "Live tail";
    toggle.textContent = "Pause";
    source.addEventListener("entry", (event) => {
      newest = event.lastEventId || newest;
      if (hasRow(event.lastEventId)) return;
      const rows = parseRows(event.data);
      for (const row of rows.querySelectorAll("details.entry")) {
        row.classList.add("new");
      }
      list.prepend(rows);
      document.querySelector(".empty")?.remove();
    });
    const opened = source;
    source.addEventListener("error", async () => {
      if (opened.readyState !== EventSource.CLOSED) {
        status.textContent = "Reconnecting…";
        return;
      }
      if (source === opened) source = null;
      live.classList.remove("on");
      toggle.textContent = "Resume";
      status.textContent = await stoppedBecause(url);
    });
    source.addEventListener("open", () => {
      status.textContent = "Live tail";
    });
  };
  // EventSource does not say why it was refused: ask once more with fetch
  // and show the server's sentence (too many live tails, signed out).
  const stoppedBecause = async (url) => {
    const fallback =
      "Live tail stopped: reload the page (you may need to sign in again)";
    const controller = new AbortController();
    try {
      const response = await fetch(url, { signal: controller.signal });
      if (response.status === 429) {
        return `Live tail stopped: ${(await response.text()).slice(0, 300)}`;
      }
      if (response.status === 401) return "Live tail stopped: sign in again";
      return fallback;
    } catch {
      return fallback;
    } finally {
      // A stream that opened after all is not kept.
      controller.abort();
    }
  };
  const stop = () => {
    source?.close();
    source = null;
    live.classList.remove("on");
    status.textContent = "Live tail paused";
    toggle.textContent = "Resume";
  };

  toggle.hidden = false;
  toggle.addEventListener("click", () => {
    if (source) {
      stop();
      setParam("live", "off");
    } else {
      setParam("live", null);
      start();
    }
  });
  if (live.dataset.paused !== "true") start();
}

// Older entries as the list scrolls (the link works on its own too).
if (list && "IntersectionObserver" in globalThis) {
  let loading = false;
  const observer = new IntersectionObserver(async (seen) => {
    const more = document.getElementById("more");
    if (!more || loading || !seen.some((s) => s.isIntersecting)) return;
    loading = true;
    try {
      const response = await fetch(more.dataset.fragment, {
        headers: { Accept: "text/html" },
      });
      if (!response.ok) throw new Error(`${response.status}`);
      const rows = parseRows(await response.text());
      for (const row of rows.querySelectorAll("details.entry")) {
        if (hasRow(row.dataset.id)) row.remove();
      }
      more.replaceWith(rows);
      const next = document.getElementById("more");
      if (next) observer.observe(next);
    } catch {
      // The plain link still works.
    } finally {
      loading = false;
    }
  }, { rootMargin: "400px" });
  const more = document.getElementById("more");
  if (more) observer.observe(more);
}

// A cut preview: the full entry fetched in its place (the link works on its
// own too, to a page of the entry).
document.addEventListener("click", async (event) => {
  const link = event.target instanceof Element
    ? event.target.closest("a.full-entry[data-fragment]")
    : null;
  const detail = link?.closest(".detail");
  if (!link || !detail) return;
  event.preventDefault();
  link.textContent = "Loading the full entry…";
  try {
    const response = await fetch(link.dataset.fragment, {
      headers: { Accept: "text/html" },
    });
    if (!response.ok) throw new Error(`${response.status}`);
    detail.replaceChildren(parseRows(await response.text()));
  } catch {
    location.assign(link.href);
  }
});

// Keyboard: j/k move, Enter expands (native on <summary>), / searches.
function rows() {
  return [...document.querySelectorAll("details.entry")];
}

/** Marks `row` as the current one; from the keyboard, also focuses and reveals it. */
function select(row, fromKeyboard) {
  for (const r of document.querySelectorAll("details.entry.selected")) {
    r.classList.remove("selected");
  }
  if (!row) return;
  row.classList.add("selected");
  if (!fromKeyboard) return;
  const summary = row.querySelector("summary");
  summary.focus({ preventScroll: true });
  summary.scrollIntoView({ block: "nearest" });
}

document.addEventListener("keydown", (event) => {
  if (event.ctrlKey || event.metaKey || event.altKey) return;
  const target = event.target;
  const typing = target instanceof HTMLInputElement ||
    target instanceof HTMLTextAreaElement ||
    target instanceof HTMLSelectElement;
  if (event.key === "Escape" && typing) {
    target.blur();
    return;
  }
  if (typing) return;
  if (event.key === "/" && search) {
    event.preventDefault();
    search.focus();
    search.select();
    return;
  }
  if (event.key !== "j" && event.key !== "k") return;
  const all = rows();
  if (all.length === 0) return;
  const current = all.findIndex((r) => r.classList.contains("selected"));
  const next = current < 0 ? 0 : Math.min(
    all.length - 1,
    Math.max(0, current + (event.key === "j" ? 1 : -1)),
  );
  event.preventDefault();
  select(all[next], true);
});

document.addEventListener("click", (event) => {
  const row = event.target instanceof Element
    ? event.target.closest("details.entry")
    : null;
  if (row) select(row, false);
});
