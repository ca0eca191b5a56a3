// Progressive behaviour of every page: copy buttons, the typed
// confirmation of a deletion, and times in UTC or local time. The pages
// work without it; it only helps.

/** Copies `text`; falls back to a selection where the Clipboard API is missing. */
async function copyText(text) {
  if (navigator.clipboard && globalThis.isSecureContext) {
    await navigator.clipboard.writeText(text);
    return;
  }
  const area = document.createElement("textarea");
  area.value = text;
  area.setAttribute("readonly", "");
  area.className = "sr";
  document.body.append(area);
  area.select();
  document.execCommand("copy");
  area.remove();
}

document.addEventListener("click", async (event) => {
  const button = event.target instanceof Element
    ? event.target.closest("button[data-copy]")
    : null;
  if (!button) return;
  const source = document.getElementById(button.dataset.copy);
  if (!source) return;
  const label = button.textContent;
  try {
    await copyText(source.textContent ?? "");
    button.textContent = "Copied";
    button.classList.add("copied");
  } catch {
    button.textContent = "Select and copy";
  }
  setTimeout(() => {
    button.textContent = label;
    button.classList.remove("copied");
  }, 1500);
});

// Delete stays disabled until the project's name is typed (the server checks too).
for (const input of document.querySelectorAll("input[data-expect]")) {
  const button = input.form?.querySelector("button[type=submit]");
  if (!button) continue;
  const update = () => {
    button.disabled = input.value.trim() !== input.dataset.expect;
  };
  input.addEventListener("input", update);
  update();
}

// Times: the pages write them in UTC; a switch shows them in local time
// instead, remembered in localStorage. Every <time data-format> (and every
// one added later: live tail, further pages) follows, as do the zone labels
// and the custom range's inputs, whose values are sent in UTC either way.
const TZ_KEY = "logs.timeZone";

function isLocal() {
  try {
    return localStorage.getItem(TZ_KEY) === "local";
  } catch {
    return false;
  }
}

function pad(n, width = 2) {
  return String(n).padStart(width, "0");
}

/** `2026-01-15 10:31:02(.337)` in local time. */
function formatLocal(ms, withMs) {
  const d = new Date(ms);
  const text = `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${
    pad(d.getDate())
  } ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
  return withMs ? `${text}.${pad(d.getMilliseconds(), 3)}` : text;
}

/** The local zone: its name where known, and its offset. */
function zoneName() {
  const offset = -new Date().getTimezoneOffset();
  const sign = offset < 0 ? "-" : "+";
  const abs = Math.abs(offset);
  const utc = `UTC${sign}${pad(Math.floor(abs / 60))}:${pad(abs % 60)}`;
  const name = Intl.DateTimeFormat().resolvedOptions().timeZone;
  return name && name !== "UTC" ? `${name} (${utc})` : utc;
}

/** `2026-01-15T09:30` (UTC) as the same instant in local time, and back. */
function utcToLocalInput(value) {
  const ms = Date.parse(`${value}Z`);
  if (Number.isNaN(ms)) return value;
  return formatLocal(ms, false).replace(" ", "T").slice(0, 16);
}

function localInputToUtc(value) {
  const ms = new Date(value).getTime();
  return Number.isNaN(ms) ? value : new Date(ms).toISOString().slice(0, 16);
}

function showTimes(root) {
  const local = isLocal();
  for (const el of root.querySelectorAll("time[datetime][data-format]")) {
    el.dataset.utc ??= el.textContent;
    const text = local
      ? formatLocal(
        Date.parse(el.getAttribute("datetime")),
        el.dataset.format === "ms",
      )
      : el.dataset.utc;
    if (el.textContent !== text) el.textContent = text;
  }
  for (const label of root.querySelectorAll(".tz-label")) {
    const text = local ? zoneName() : "UTC";
    if (label.textContent !== text) label.textContent = text;
  }
}

function showZone() {
  showTimes(document);
  const local = isLocal();
  for (const button of document.querySelectorAll("button.tz-toggle")) {
    button.hidden = false;
    button.textContent = local ? "Show UTC" : "Show local time";
    button.setAttribute("aria-pressed", local ? "true" : "false");
  }
  for (const input of document.querySelectorAll("input[data-time-input]")) {
    input.dataset.utc ??= input.value;
    if (input.dataset.utc === "") continue;
    input.value = local
      ? utcToLocalInput(input.dataset.utc)
      : input.dataset.utc;
  }
}

document.addEventListener("click", (event) => {
  const button = event.target instanceof Element
    ? event.target.closest("button.tz-toggle")
    : null;
  if (!button) return;
  try {
    localStorage.setItem(TZ_KEY, isLocal() ? "utc" : "local");
  } catch {
    return;
  }
  for (const input of document.querySelectorAll("input[data-time-input]")) {
    // What was typed stays the instant it meant.
    if (input.value !== "") {
      input.dataset.utc = isLocal()
        ? input.value
        : localInputToUtc(input.value);
    }
  }
  showZone();
});

// Typed in local time, sent in UTC.
document.addEventListener("submit", (event) => {
  if (!isLocal()) return;
  for (const input of event.target.querySelectorAll("input[data-time-input]")) {
    if (input.value !== "") input.value = localInputToUtc(input.value);
  }
}, true);

showZone();
new MutationObserver((changes) => {
  for (const change of changes) {
    for (const node of change.addedNodes) {
      if (node instanceof Element) showTimes(node.parentElement ?? node);
    }
  }
}).observe(document.body, { childList: true, subtree: true });
