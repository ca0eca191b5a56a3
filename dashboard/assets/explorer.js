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

// The histogram: the live tail adds each entry it shows to its bar, adding
// bars (and dropping the oldest) as time moves past the last one; the bars
// are then laid out again on the y-axis (dashboard/pages/histogram.tsx).
const chart = document.getElementById("histogram");
const SVG = "http://www.w3.org/2000/svg";
const BAR = 10;
const HEIGHT = 60;
const STACK = ["info", "warning", "error", "critical"];

function niceMax(max) {
  if (max <= 1) return 1;
  const power = 10 ** Math.floor(Math.log10(max));
  for (const step of [1, 2, 5, 10]) {
    if (step * power >= max) return step * power;
  }
  return 10 * power;
}

function utcText(ms) {
  const iso = new Date(ms).toISOString();
  return `${iso.slice(0, 10)} ${iso.slice(11, 19)}`;
}

const countsOf = (bar) => JSON.parse(bar.dataset.counts ?? "{}");
const totalOf = (counts) => Object.values(counts).reduce((a, b) => a + b, 0);

function layoutHistogram() {
  const svg = chart.querySelector("svg");
  const bars = [...svg.querySelectorAll("a.bucket")];
  const interval = Number(chart.dataset.interval);
  const totals = bars.map((bar) => totalOf(countsOf(bar)));
  const peak = Math.max(1, ...totals);
  const max = niceMax(peak);
  bars.forEach((bar, i) => {
    bar.querySelector("rect.hit")?.setAttribute("x", String(i * BAR));
    bar.querySelector("rect.todo")?.setAttribute("x", String(i * BAR + 1));
    if (bar.dataset.counts === undefined) return;
    for (const rect of bar.querySelectorAll("rect.bar")) rect.remove();
    const counts = countsOf(bar);
    const levels = Object.keys(counts).sort((a, b) =>
      ((STACK.indexOf(a) + 10) % 10) - ((STACK.indexOf(b) + 10) % 10)
    );
    let y = HEIGHT;
    for (const level of levels) {
      const h = (counts[level] / max) * HEIGHT;
      y -= h;
      const rect = document.createElementNS(SVG, "rect");
      const kind = STACK.includes(level) ? level : "custom";
      rect.setAttribute("class", `bar lvl-${kind}`);
      rect.setAttribute("x", String(i * BAR + 1));
      rect.setAttribute("y", String(y));
      rect.setAttribute("width", String(BAR - 2));
      rect.setAttribute("height", String(h));
      bar.append(rect);
    }
    const title = bar.querySelector("title");
    if (title) {
      title.textContent =
        `${utcText(Number(bar.dataset.start))} · ${totals[i]} entries` +
        levels.map((l) => `\n${l}: ${counts[l]}`).join("");
    }
  });
  svg.setAttribute("viewBox", `0 0 ${bars.length * BAR} ${HEIGHT}`);
  for (const line of svg.querySelectorAll("line.grid")) {
    line.setAttribute("x2", String(bars.length * BAR));
  }
  chart.querySelector("[data-tick=max]").textContent = String(max);
  chart.querySelector("[data-tick=half]").textContent = String(max / 2);
  document.getElementById("histogram-total").textContent = String(
    totals.reduce((a, b) => a + b, 0),
  );
  document.getElementById("histogram-peak").textContent = String(peak);
  const last = bars.at(-1);
  const end = chart.querySelector("figcaption > span:last-child time");
  if (last?.dataset.start && end) {
    const ms = Number(last.dataset.start) + interval;
    end.setAttribute("datetime", new Date(ms).toISOString());
    end.dataset.utc = utcText(ms);
    end.textContent = utcText(ms);
  }
}

/** Adds the entry of `row` to its bar of the histogram. */
function countInHistogram(row) {
  // A histogram split by a field: the row's level is not its series.
  if (!chart || chart.dataset.split) return;
  const at = Date.parse(row.querySelector("time")?.getAttribute("datetime"));
  const level = row.querySelector(".lvl")?.textContent?.trim();
  const interval = Number(chart.dataset.interval);
  const svg = chart.querySelector("svg");
  if (Number.isNaN(at) || !level || !svg) return;
  let bars = [...svg.querySelectorAll("a.bucket")];
  let last = bars.at(-1);
  if (!last?.dataset.start) return;
  // Time moved past the last bar: new bars, the window keeps its width.
  for (let n = 0; at >= Number(last.dataset.start) + interval; n++) {
    if (n >= bars.length) return;
    const next = last.cloneNode(true);
    const start = Number(last.dataset.start) + interval;
    next.dataset.start = String(start);
    next.dataset.counts = "{}";
    const href = new URL(next.getAttribute("href"), location.href);
    href.searchParams.set("since", new Date(start).toISOString());
    href.searchParams.set("until", new Date(start + interval).toISOString());
    next.setAttribute("href", href.pathname + href.search);
    svg.append(next);
    bars[0].remove();
    bars = [...bars.slice(1), next];
    last = next;
  }
  const bar = bars.find((b) =>
    b.dataset.start !== undefined && Number(b.dataset.start) <= at &&
    at < Number(b.dataset.start) + interval
  );
  if (!bar || bar.dataset.counts === undefined) return;
  const counts = countsOf(bar);
  counts[level] = (counts[level] ?? 0) + 1;
  bar.dataset.counts = JSON.stringify(counts);
  layoutHistogram();
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
        countInHistogram(row);
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

// The histogram's split: a new choice sends its form, without the button.
const splitForm = document.getElementById("split");
if (splitForm) {
  splitForm.querySelector(".split-go")?.setAttribute("hidden", "");
  splitForm.querySelector("select")?.addEventListener("change", () => {
    splitForm.submit();
  });
}

// Pinning a field of an entry to the facets: a click on its name in the
// entry's fields adds `facet=PATH` to the view (without the script, the
// facets' own form pins a field by name).
if (document.getElementById("facets")) {
  document.documentElement.classList.add("can-pin");
  document.addEventListener("click", (event) => {
    const th = event.target instanceof Element
      ? event.target.closest(".fields th[scope=row]")
      : null;
    const path = th?.closest("tr")?.dataset.path;
    if (!path) return;
    const url = new URL(location.href);
    if (!url.searchParams.getAll("facet").includes(path)) {
      url.searchParams.append("facet", path);
    }
    url.searchParams.delete("cursor");
    location.assign(url.pathname + url.search);
  });
}
