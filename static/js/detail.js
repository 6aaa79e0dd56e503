// Task detail: refresh the page's regions when this task changes (the live view reflects a
// newer task version than the page's data-version, which is the one the view had when the
// page was drawn: the view is projected after the change commits), count down the pause deadline, and keep forms being edited untouched.
// A refused action answers from its POST URL (/tasks/<id>/resume, …), which only takes
// POST: the refresh always fetches the task's own page (data-url), and the address bar is
// put back to it so a reload or a copied link shows the task, not a 405.

import { coalesced, fetchFragment, trackEdits } from "./fragments.js";

export function start(live) {
  const root = document.getElementById("task-live");
  if (!root) return;
  const taskId = root.dataset.task;
  const url = root.dataset.url || `/tasks/${encodeURIComponent(taskId)}`;
  if (location.pathname !== url) history.replaceState(history.state, "", url + location.hash);
  let shown = Number(root.dataset.version);
  trackEdits(root);

  // Timeline filters (All / Messages / State changes / Decisions): kept while the page
  // refreshes its regions.
  let filter = "all";
  function applyFilter() {
    const section = document.getElementById("task-timeline");
    if (!section) return;
    let visible = 0;
    for (const li of section.querySelectorAll("li.tl")) {
      li.hidden = filter !== "all" && li.dataset.group !== filter;
      if (!li.hidden) visible += 1;
    }
    for (const b of section.querySelectorAll("[data-tl-filter]")) {
      b.setAttribute("aria-pressed", String(b.dataset.tlFilter === filter));
    }
    const none = section.querySelector(".tl-none");
    if (none) none.hidden = visible > 0;
  }
  root.addEventListener("click", (e) => {
    const b = e.target.closest && e.target.closest("[data-tl-filter]");
    if (!b) return;
    filter = b.dataset.tlFilter;
    applyFilter();
  });

  const refresh = coalesced(async () => {
    const doc = await fetchFragment(`${url}?fragment=1`);
    const head = doc.getElementById("task-head");
    const version = Number(head?.dataset.version || 0);
    if (version < shown) return;
    shown = version;
    for (const fresh of doc.querySelectorAll("[data-region]")) {
      const current = document.getElementById(fresh.id);
      if (!current) continue;
      const sig = current.dataset.sig;
      if (sig !== undefined && sig === fresh.dataset.sig) continue; // same actions: keep forms as typed
      current.replaceWith(document.importNode(fresh, true));
    }
    root.dataset.version = String(shown);
    applyFilter();
    window.taskdeck.localiseTimes(root);
    window.taskdeck.tick();
  }, "refresh");

  function wanted() {
    const entry = live.tasks[taskId];
    // the task version the entry reflects (entries projected before it was sent: version)
    return entry && (entry.taskVersion ?? entry.version) > shown;
  }
  live.on("snapshot", () => wanted() && refresh());
  live.on("change", (ids) => ids.has(taskId) && wanted() && refresh());
}
