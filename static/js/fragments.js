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

// Run `task` one at a time: a call while it runs asks for one more run once it ends, so a
// burst of live changes costs at most two fetches and the last change is never missed.
export function coalesced(task, label) {
  let inFlight = false;
  let again = false;
  async function run() {
    if (inFlight) {
      again = true;
      return;
    }
    inFlight = true;
    try {
      await task();
    } catch (err) {
      console.warn(`${label} failed`, err);
    } finally {
      inFlight = false;
      if (again) {
        again = false;
        run();
      }
    }
  }
  return run;
}
