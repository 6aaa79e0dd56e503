// Fetch a server-rendered fragment of our own pages (templates autoescape every
// agent-provided string) and swap regions in by id.

export async function fetchFragment(url) {
  const res = await fetch(url, { headers: { "X-Requested-With": "fetch" }, credentials: "same-origin" });
  if (!res.ok) throw new Error(`${res.status}`);
  const html = await res.text();
  return new DOMParser().parseFromString(html, "text/html");
}

export function isBeingEdited(region) {
  const active = document.activeElement;
  return Boolean((active && region.contains(active) && active.matches("input, textarea, select")) || region.querySelector("[data-dirty]"));
}

export function trackEdits(root = document) {
  root.addEventListener("input", (e) => {
    const form = e.target.closest && e.target.closest("form");
    if (form) form.dataset.dirty = "1";
  });
}
