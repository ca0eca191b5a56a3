// Progressive behaviour of every page: copy buttons, and the typed
// confirmation of a deletion. The pages work without it; it only helps.

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
